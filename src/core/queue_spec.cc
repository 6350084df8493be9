#include "core/queue_spec.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace tessera::core {

std::string_view QuotaResourceName(QuotaResource r) {
  switch (r) {
    case QuotaResource::kGpu:
      return "nvidia.com/gpu";
    case QuotaResource::kCpu:
      return "cpu";
    case QuotaResource::kMemory:
      return "memory";
  }
  return "?";
}

namespace {

std::string At(std::string_view list, size_t i, std::string_view name) {
  return std::string(list) + "[" + std::to_string(i) + "] (" + std::string(name) + ")";
}

Status Bad(const std::string& path, const std::string& what) {
  return InvalidArgument(path + ": " + what);
}

Status CheckWeight(const std::string& path, int64_t weight_milli) {
  if (weight_milli < 0 || weight_milli > 1'000'000'000) {
    return Bad(path + ".fair_weight",
               "must be in 0..1000000, got " + std::to_string(weight_milli / 1000.0));
  }
  return Status::Ok();
}

// Checks the resource groups of one queue or cohort.
// A queue may lend at most its nominal quota; a cohort's lending limit bounds its whole subtree
// quota, so it may exceed the cohort's own nominal.
Status CheckGroups(const std::string& path, const std::vector<ResourceGroup>& groups,
                   const std::set<std::string, std::less<>>& flavors, bool is_cohort) {
  std::set<QuotaResource> seen_resources;
  std::set<std::string> seen_flavors;
  for (size_t g = 0; g < groups.size(); ++g) {
    const ResourceGroup& group = groups[g];
    const std::string gp = path + ".resource_groups[" + std::to_string(g) + "]";
    if (group.covered.empty()) return Bad(gp + ".covered", "must name at least one resource");
    for (QuotaResource r : group.covered) {
      if (!seen_resources.insert(r).second) {
        return Bad(gp + ".covered", "resource " + std::string(QuotaResourceName(r)) +
                                        " is already covered by another group");
      }
    }
    if (group.flavors.empty()) return Bad(gp + ".flavors", "must list at least one flavor");
    for (size_t f = 0; f < group.flavors.size(); ++f) {
      const FlavorQuotas& fq = group.flavors[f];
      const std::string fp = gp + ".flavors[" + std::to_string(f) + "]";
      if (!flavors.contains(fq.flavor)) {
        return Bad(fp + ".name", "unknown resource flavor \"" + fq.flavor + "\"");
      }
      if (!seen_flavors.insert(fq.flavor).second) {
        return Bad(fp + ".name", "flavor \"" + fq.flavor + "\" is listed twice in this queue");
      }
      std::set<QuotaResource> listed;
      for (size_t r = 0; r < fq.resources.size(); ++r) {
        const ResourceQuota& q = fq.resources[r];
        const std::string rp = fp + ".resources[" + std::to_string(r) + "]";
        if (std::find(group.covered.begin(), group.covered.end(), q.resource) ==
            group.covered.end()) {
          return Bad(rp + ".name",
                     std::string(QuotaResourceName(q.resource)) + " is not covered by the group");
        }
        if (!listed.insert(q.resource).second) {
          return Bad(rp + ".name", std::string(QuotaResourceName(q.resource)) + " is listed twice");
        }
        if (q.nominal < 0) {
          return Bad(rp + ".nominal", "must be >= 0, got " + std::to_string(q.nominal));
        }
        if (q.borrowing_limit && *q.borrowing_limit < 0) {
          return Bad(rp + ".borrowing_limit",
                     "must be >= 0, got " + std::to_string(*q.borrowing_limit));
        }
        if (q.lending_limit && *q.lending_limit < 0) {
          return Bad(rp + ".lending_limit",
                     "must be >= 0, got " + std::to_string(*q.lending_limit));
        }
        if (!is_cohort && q.lending_limit && *q.lending_limit > q.nominal) {
          return Bad(rp + ".lending_limit", "must be in 0..nominal (" + std::to_string(q.nominal) +
                                                "), got " + std::to_string(*q.lending_limit));
        }
      }
      if (listed.size() != group.covered.size()) {
        return Bad(fp + ".resources", "must list every resource the group covers");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void AddImplicitCohorts(QueueConfig* config) {
  std::set<std::string, std::less<>> declared, named;
  for (const CohortSpec& c : config->cohorts) declared.insert(c.name);
  for (const CohortSpec& c : config->cohorts) {
    if (!c.parent.empty()) named.insert(c.parent);
  }
  for (const QueueSpec& q : config->queues) {
    if (!q.cohort.empty()) named.insert(q.cohort);
  }
  for (const std::string& name : named) {
    if (!declared.contains(name)) config->cohorts.push_back(CohortSpec{name, "", {}, 1000});
  }
}

Status ValidateQueueConfig(const QueueConfig& config) {
  std::set<std::string, std::less<>> flavors;
  for (size_t i = 0; i < config.flavors.size(); ++i) {
    const ResourceFlavor& f = config.flavors[i];
    const std::string p = At("flavors", i, f.name);
    if (f.name.empty()) return Bad(p + ".name", "must not be empty");
    if (!flavors.insert(f.name).second) return Bad(p + ".name", "duplicate flavor");
  }
  std::map<std::string, std::string, std::less<>> parent_of;
  for (size_t i = 0; i < config.cohorts.size(); ++i) {
    const CohortSpec& c = config.cohorts[i];
    const std::string p = At("cohorts", i, c.name);
    if (c.name.empty()) return Bad(p + ".name", "must not be empty");
    if (!parent_of.emplace(c.name, c.parent).second) return Bad(p + ".name", "duplicate cohort");
    if (Status s = CheckGroups(p, c.resource_groups, flavors, true); !s.ok()) return s;
    if (Status s = CheckWeight(p, c.fair_weight_milli); !s.ok()) return s;
  }
  for (size_t i = 0; i < config.cohorts.size(); ++i) {
    const CohortSpec& c = config.cohorts[i];
    const std::string p = At("cohorts", i, c.name);
    if (!c.parent.empty() && !parent_of.contains(c.parent)) {
      return Bad(p + ".parent", "unknown cohort \"" + c.parent + "\"");
    }
    // Walk up; more steps than cohorts means a cycle.
    std::string cur = c.parent;
    for (size_t steps = 0; !cur.empty(); ++steps) {
      if (steps > config.cohorts.size() || cur == c.name) {
        return Bad(p + ".parent", "cohort tree has a cycle through \"" + c.name + "\"");
      }
      cur = parent_of.find(cur)->second;
    }
  }
  std::set<std::string, std::less<>> queues;
  for (size_t i = 0; i < config.queues.size(); ++i) {
    const QueueSpec& q = config.queues[i];
    const std::string p = At("queues", i, q.name);
    if (q.name.empty()) return Bad(p + ".name", "must not be empty");
    if (!queues.insert(q.name).second) return Bad(p + ".name", "duplicate queue");
    if (!q.cohort.empty() && !parent_of.contains(q.cohort)) {
      return Bad(p + ".cohort", "unknown cohort \"" + q.cohort + "\"");
    }
    if (Status s = CheckGroups(p, q.resource_groups, flavors, false); !s.ok()) return s;
    if (Status s = CheckWeight(p, q.fair_weight_milli); !s.ok()) return s;
    if (q.preemption.max_priority_threshold &&
        q.preemption.borrow_within_cohort == BorrowWithinCohort::kNever) {
      return Bad(p + ".preemption.borrow_within_cohort.max_priority_threshold",
                 "needs policy LowerPriority");
    }
    // As Kueue's ClusterQueue validation: borrowing while preempting is a way of reclaiming.
    if (q.preemption.borrow_within_cohort != BorrowWithinCohort::kNever &&
        q.preemption.reclaim_within_cohort == ReclaimPreemption::kNever) {
      return Bad(p + ".preemption.borrow_within_cohort.policy",
                 "needs reclaim_within_cohort other than Never");
    }
  }
  std::set<std::string> local;
  for (size_t i = 0; i < config.local_queues.size(); ++i) {
    const LocalQueueSpec& l = config.local_queues[i];
    const std::string p = At("local_queues", i, l.namespace_name + "/" + l.name);
    if (l.namespace_name.empty()) return Bad(p + ".namespace", "must not be empty");
    if (l.name.empty()) return Bad(p + ".name", "must not be empty");
    if (!local.insert(l.namespace_name + "/" + l.name).second) {
      return Bad(p + ".name", "duplicate local queue");
    }
    // A local queue may point at a queue that does not exist yet: its workloads stay pending.
  }
  std::set<std::string> namespaces;
  for (size_t i = 0; i < config.namespace_quotas.size(); ++i) {
    const NamespaceQuota& n = config.namespace_quotas[i];
    const std::string p = At("namespace_quotas", i, n.namespace_name);
    if (n.namespace_name.empty()) return Bad(p + ".namespace", "must not be empty");
    if (!namespaces.insert(n.namespace_name).second) {
      return Bad(p + ".namespace", "duplicate namespace quota");
    }
    for (int r = 0; r < kNumQuotaResources; ++r) {
      if (n.hard[r] && *n.hard[r] < 0) {
        return Bad(p + ".hard." + std::string(QuotaResourceName(static_cast<QuotaResource>(r))),
                   "must be >= 0, got " + std::to_string(*n.hard[r]));
      }
    }
  }
  std::set<std::string> classes;
  int defaults = 0;
  for (size_t i = 0; i < config.priority_classes.size(); ++i) {
    const PriorityClassSpec& c = config.priority_classes[i];
    const std::string p = At("priority_classes", i, c.name);
    if (c.name.empty()) return Bad(p + ".name", "must not be empty");
    if (!classes.insert(c.name).second) return Bad(p + ".name", "duplicate priority class");
    if (c.global_default && ++defaults > 1) {
      return Bad(p + ".global_default", "only one priority class may be the global default");
    }
  }
  return Status::Ok();
}

}  // namespace tessera::core
