// The decoders of Tessera's queueing kinds (api/kinds.h): Queue (Kueue's ClusterQueue), Cohort,
// LocalQueue, ResourceFlavor, PriorityClass and NamespaceQuota, with the quota amounts and
// resource groups they share.
#include <algorithm>

#include "api/fields.h"
#include "api/json_read.h"
#include "api/kinds.h"
#include "api/kinds_common.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/resources.h"

namespace tessera::api {

using kinds_detail::DecodeTaints;
using kinds_detail::DecodeTolerations;
using kinds_detail::MetaString;
using kinds_detail::Spec;
using nlohmann::json;

namespace {

// A quota amount of `resource` ("nvidia.com/gpu", "cpu", "memory") in the core's units.
Result<int64_t> QuotaAmount(core::QuotaResource r, const json& v, const std::string& path) {
  if (!v.is_string() && !v.is_number()) return FieldError(path, "must be a quantity");
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  Result<Quantity> q = ParseQuantity(text, path);
  if (!q.ok()) return q.status();
  if (q->negative()) return FieldError(path, "must not be negative, got \"" + text + "\"");
  // GPUs and CPUs both count in thousandths.
  return r == core::QuotaResource::kMemory ? ToMebibytes(*q, path) : ToMilli(*q, path);
}

Result<core::QuotaResource> QuotaResourceOf(const std::string& name, const std::string& path) {
  for (int r = 0; r < core::kNumQuotaResources; ++r) {
    if (core::QuotaResourceName(static_cast<core::QuotaResource>(r)) == name) {
      return static_cast<core::QuotaResource>(r);
    }
  }
  return FieldError(path,
                    "unknown resource \"" + name + "\" (quota covers nvidia.com/gpu, cpu, memory)");
}

Status DecodeResourceGroups(Fields& spec, std::vector<core::ResourceGroup>* out) {
  const json* groups = spec.Get("resourceGroups");
  if (groups == nullptr) return Status::Ok();
  const std::string gpath = spec.At("resourceGroups");
  if (!groups->is_array()) return FieldError(gpath, "must be a list");
  for (size_t g = 0; g < groups->size(); ++g) {
    Fields gf((*groups)[g], Index(gpath, g), false);
    core::ResourceGroup group;
    std::vector<std::string> covered;
    TESSERA_RETURN_IF_ERROR(gf.StringList("coveredResources", &covered));
    for (size_t i = 0; i < covered.size(); ++i) {
      auto r = QuotaResourceOf(covered[i], Index(gf.At("coveredResources"), i));
      if (!r.ok()) return r.status();
      group.covered.push_back(*r);
    }
    const json* flavors = gf.Get("flavors");
    const std::string fpath = gf.At("flavors");
    if (flavors == nullptr || !flavors->is_array()) return FieldError(fpath, "must be a list");
    for (size_t k = 0; k < flavors->size(); ++k) {
      Fields ff((*flavors)[k], Index(fpath, k), false);
      core::FlavorQuotas fq;
      TESSERA_RETURN_IF_ERROR(ff.String("name", &fq.flavor, true));
      const json* res = ff.Get("resources");
      const std::string rpath = ff.At("resources");
      if (res == nullptr || !res->is_array()) return FieldError(rpath, "must be a list");
      for (size_t j = 0; j < res->size(); ++j) {
        Fields rf((*res)[j], Index(rpath, j), false);
        std::string name;
        TESSERA_RETURN_IF_ERROR(rf.String("name", &name, true));
        auto r = QuotaResourceOf(name, rf.At("name"));
        if (!r.ok()) return r.status();
        core::ResourceQuota q;
        q.resource = *r;
        const json* nominal = rf.Get("nominalQuota");
        if (nominal == nullptr) return FieldError(rf.At("nominalQuota"), "is required");
        auto n = QuotaAmount(*r, *nominal, rf.At("nominalQuota"));
        if (!n.ok()) return n.status();
        q.nominal = *n;
        for (const char* limit : {"borrowingLimit", "lendingLimit"}) {
          if (const json* v = rf.Get(limit)) {
            auto a = QuotaAmount(*r, *v, rf.At(limit));
            if (!a.ok()) return a.status();
            (std::string_view(limit) == "borrowingLimit" ? q.borrowing_limit : q.lending_limit) =
                *a;
          }
        }
        TESSERA_RETURN_IF_ERROR(rf.Finish());
        fq.resources.push_back(q);
      }
      TESSERA_RETURN_IF_ERROR(ff.Finish());
      group.flavors.push_back(std::move(fq));
    }
    TESSERA_RETURN_IF_ERROR(gf.Finish());
    out->push_back(std::move(group));
  }
  return Status::Ok();
}

// fairSharing: {weight: a number >= 0}, in thousandths.
Status DecodeFairWeight(Fields& spec, int64_t* milli) {
  const json* fs = spec.Get("fairSharing");
  if (fs == nullptr) return Status::Ok();
  Fields f(*fs, spec.At("fairSharing"), false);
  if (const json* w = f.Get("weight")) {
    const std::string path = f.At("weight");
    if (!w->is_number() && !w->is_string()) return FieldError(path, "must be a number");
    Result<Quantity> q = ParseQuantity(w->is_string() ? w->get<std::string>() : w->dump(), path);
    if (!q.ok()) return q.status();
    Result<int64_t> m = ToMilli(*q, path);
    if (!m.ok()) return m.status();
    if (*m > 1'000'000'000) return FieldError(path, "is absurd");
    *milli = *m;
  }
  return f.Finish();
}

}  // namespace

Result<core::QueueSpec> DecodeQueue(const json& obj) {
  core::QueueSpec q;
  q.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  TESSERA_RETURN_IF_ERROR(spec.String("cohort", &q.cohort));
  std::vector<std::string> allowed;
  TESSERA_RETURN_IF_ERROR(spec.StringList("allowedNamespaces", &allowed));
  // The namespaces whose workloads it admits (absent: every one); read by the scheduling loop.
  if (const json* sel = spec.Get("namespaceSelector"); sel != nullptr && !sel->is_null()) {
    auto parsed = LabelSelector::FromJson(*sel, spec.At("namespaceSelector"));
    if (!parsed.ok()) return parsed.status();
  }
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i] == "*") continue;
    TESSERA_RETURN_IF_ERROR(ValidateName(allowed[i], true, Index("spec.allowedNamespaces", i)));
  }
  int strategy = 1;
  TESSERA_RETURN_IF_ERROR(
      spec.Enum("queueingStrategy", {"StrictFIFO", "BestEffortFIFO"}, &strategy));
  q.strategy =
      strategy == 0 ? core::QueueingStrategy::kStrictFifo : core::QueueingStrategy::kBestEffortFifo;
  TESSERA_RETURN_IF_ERROR(DecodeFairWeight(spec, &q.fair_weight_milli));
  if (const json* p = spec.Get("preemption")) {
    Fields pf(*p, spec.At("preemption"), false);
    int within = 0, reclaim = 0;
    TESSERA_RETURN_IF_ERROR(pf.Enum(
        "withinClusterQueue", {"Never", "LowerPriority", "LowerOrNewerEqualPriority"}, &within));
    TESSERA_RETURN_IF_ERROR(
        pf.Enum("reclaimWithinCohort", {"Never", "LowerPriority", "Any"}, &reclaim));
    q.preemption.within_queue = static_cast<core::WithinQueuePreemption>(within);
    q.preemption.reclaim_within_cohort = static_cast<core::ReclaimPreemption>(reclaim);
    if (const json* b = pf.Get("borrowWithinCohort")) {
      Fields bf(*b, pf.At("borrowWithinCohort"), false);
      int policy = 0;
      TESSERA_RETURN_IF_ERROR(bf.Enum("policy", {"Never", "LowerPriority"}, &policy));
      q.preemption.borrow_within_cohort = static_cast<core::BorrowWithinCohort>(policy);
      int64_t threshold = 0;
      if (bf.Get("maxPriorityThreshold") != nullptr) {
        TESSERA_RETURN_IF_ERROR(
            bf.Int("maxPriorityThreshold", &threshold, -2'000'000'000, 2'000'000'000));
        q.preemption.max_priority_threshold = static_cast<int32_t>(threshold);
      }
      TESSERA_RETURN_IF_ERROR(bf.Finish());
    }
    TESSERA_RETURN_IF_ERROR(pf.Finish());
  }
  if (const json* r = spec.Get("idleReclaim")) {
    Fields rf(*r, spec.At("idleReclaim"), false);
    std::string after;
    TESSERA_RETURN_IF_ERROR(rf.String("after", &after, true));
    auto ms = ParseDurationMs(after, rf.At("after"), false);
    if (!ms.ok()) return ms.status();
    q.idle_reclaim.after_ms = *ms;
    if (rf.Get("maxPriority") != nullptr) {
      int64_t max = 0;
      TESSERA_RETURN_IF_ERROR(rf.Int("maxPriority", &max, -2'000'000'000, 2'000'000'000));
      q.idle_reclaim.max_priority = static_cast<int32_t>(max);
    }
    TESSERA_RETURN_IF_ERROR(rf.Finish());
  }
  TESSERA_RETURN_IF_ERROR(spec.Bool("reclaimable", &q.reclaimable));
  int stop = 0;
  TESSERA_RETURN_IF_ERROR(spec.Enum("stopPolicy", {"None", "Hold", "HoldAndDrain"}, &stop));
  q.stop = static_cast<core::StopPolicy>(stop);
  if (q.stop != core::StopPolicy::kNone &&
      Str(Member(Member(obj, "metadata"), "annotations"), "tessera.io/volcano-queue") == "true") {
    q.stop_reason = "queue " + q.name +
                    " is not Open (closed by a CloseQueue command): it allocates nothing until "
                    "an OpenQueue command";
  }
  if (const json* ff = spec.Get("flavorFungibility")) {
    // Kueue v1beta1 names (Borrow, Preempt) and v1beta2's (MayStopSearch).
    Fields f(*ff, spec.At("flavorFungibility"), false);
    int borrow = 0, preempt = 0;
    TESSERA_RETURN_IF_ERROR(
        f.Enum("whenCanBorrow", {"Borrow", "MayStopSearch", "TryNextFlavor"}, &borrow));
    TESSERA_RETURN_IF_ERROR(
        f.Enum("whenCanPreempt", {"TryNextFlavor", "Preempt", "MayStopSearch"}, &preempt));
    TESSERA_RETURN_IF_ERROR(f.Finish());
    q.try_next_flavor_before_borrowing = borrow == 2;
    q.preempt_before_next_flavor = preempt != 0;
  }
  TESSERA_RETURN_IF_ERROR(DecodeResourceGroups(spec, &q.resource_groups));
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return q;
}

bool QueueAllowsNamespace(const json& queue, std::string_view ns) {
  const json& spec = queue.is_object() && queue.contains("spec") ? queue["spec"] : json();
  if (!spec.is_object() || !spec.contains("allowedNamespaces")) return false;
  const json& allowed = spec["allowedNamespaces"];
  if (!allowed.is_array()) return false;
  for (const json& a : allowed) {
    if (a.is_string() && (a == "*" || a.get_ref<const std::string&>() == ns)) return true;
  }
  return false;
}

Result<core::CohortSpec> DecodeCohort(const json& obj) {
  core::CohortSpec c;
  c.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  TESSERA_RETURN_IF_ERROR(spec.String("parent", &c.parent));
  TESSERA_RETURN_IF_ERROR(DecodeFairWeight(spec, &c.fair_weight_milli));
  TESSERA_RETURN_IF_ERROR(DecodeResourceGroups(spec, &c.resource_groups));
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return c;
}

Result<core::LocalQueueSpec> DecodeLocalQueue(const json& obj) {
  core::LocalQueueSpec l;
  l.namespace_name = MetaString(obj, "namespace");
  l.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  std::string older_name;
  TESSERA_RETURN_IF_ERROR(spec.String("clusterQueue", &l.queue));
  TESSERA_RETURN_IF_ERROR(spec.String("queue", &older_name));
  if (l.queue.empty()) l.queue = older_name;
  if (l.queue.empty()) return FieldError("spec.clusterQueue", "is required");
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return l;
}

Result<core::ResourceFlavor> DecodeResourceFlavor(const json& obj) {
  core::ResourceFlavor f;
  f.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  TESSERA_RETURN_IF_ERROR(spec.StringMap("nodeLabels", &f.node_labels));
  TESSERA_RETURN_IF_ERROR(spec.StringList("gpuModels", &f.gpu_models));
  auto tols = DecodeTolerations(spec, "tolerations");
  if (!tols.ok()) return tols.status();
  f.tolerations = std::move(tols).value();
  auto taints = DecodeTaints(spec, "nodeTaints");
  if (!taints.ok()) return taints.status();
  f.node_taints = std::move(taints).value();
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return f;
}

Result<core::PriorityClassSpec> DecodePriorityClass(const json& obj) {
  core::PriorityClassSpec p;
  p.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  int64_t value = 0;
  TESSERA_RETURN_IF_ERROR(spec.Int("value", &value, -2'000'000'000, 1'000'000'000, true));
  p.value = static_cast<int32_t>(value);
  int policy = 0;
  TESSERA_RETURN_IF_ERROR(
      spec.Enum("preemptionPolicy", {"PreemptLowerPriority", "Never"}, &policy));
  p.preemption = static_cast<core::PreemptionPolicyKind>(policy);
  TESSERA_RETURN_IF_ERROR(spec.Bool("globalDefault", &p.global_default));
  std::string description;
  TESSERA_RETURN_IF_ERROR(spec.String("description", &description));
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return p;
}

Result<core::NamespaceQuota> DecodeNamespaceQuota(const json& obj) {
  core::NamespaceQuota nq;
  nq.namespace_name = MetaString(obj, "namespace");
  Fields spec(Spec(obj), "spec");
  std::map<std::string, std::string> hard;
  TESSERA_RETURN_IF_ERROR(spec.StringMap("hard", &hard, true));
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  for (const auto& [key, value] : hard) {
    const std::string path = "spec.hard." + key;
    if (key == "pods" || key == "count/pods") {
      // An object count, as Kubernetes' quota counts pods: a plain number.
      auto n = ParseQuantity(value, path);
      if (!n.ok()) return n.status();
      auto milli = ToMilli(*n, path);
      if (!milli.ok()) return milli.status();
      if (*milli < 0 || *milli % 1000 != 0) return FieldError(path, "must be a whole number >= 0");
      nq.pods = nq.pods ? std::min(*nq.pods, *milli / 1000) : *milli / 1000;
      continue;
    }
    std::string resource = key;
    for (const char* prefix : {"requests.", "limits."}) {
      if (resource.starts_with(prefix)) resource = resource.substr(std::string_view(prefix).size());
    }
    auto r = QuotaResourceOf(resource, path);
    if (!r.ok()) {
      return FieldError(path, "unknown quota \"" + key +
                                  "\" (known: [requests.|limits.]nvidia.com/gpu, cpu, memory; "
                                  "pods, count/pods)");
    }
    auto amount = QuotaAmount(*r, value, path);
    if (!amount.ok()) return amount.status();
    // requests.* and limits.* cap the same charge (requests equal limits for GPUs): the
    // tighter one holds.
    std::optional<int64_t>& slot = nq.hard[static_cast<int>(*r)];
    slot = slot ? std::min(*slot, *amount) : *amount;
  }
  return nq;
}

}  // namespace tessera::api
