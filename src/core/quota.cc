#include "core/quota.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace tessera::core {

namespace {

// Prints v / unit with up to three decimals, trailing zeros dropped.
std::string Decimal(int64_t v, int64_t unit) {
  std::string s = std::to_string(v / unit);
  int64_t frac = (v < 0 ? -v : v) % unit;
  if (frac == 0) return s;
  std::string f = std::to_string(frac * 1000 / unit + 1000).substr(1);
  while (!f.empty() && f.back() == '0') f.pop_back();
  if (v < 0 && v / unit == 0) s = "-" + s;
  return s + "." + f;
}

}  // namespace

std::string FormatQuota(QuotaResource r, int64_t amount) {
  switch (r) {
    case QuotaResource::kGpu:
      return Decimal(amount, 1000) + (amount == 1000 ? " GPU" : " GPUs");
    case QuotaResource::kCpu:
      return Decimal(amount, 1000) + (amount == 1000 ? " CPU" : " CPUs");
    case QuotaResource::kMemory:
      return amount % 1024 == 0 ? std::to_string(amount / 1024) + " GiB"
                                : std::to_string(amount) + " MiB";
  }
  return std::to_string(amount);
}

Result<QuotaTree> QuotaTree::Build(const QueueConfig& config) {
  if (Status s = ValidateQueueConfig(config); !s.ok()) return s;
  QuotaTree t;
  t.flavors_ = config.flavors;
  t.queues_ = config.queues;
  for (size_t i = 0; i < config.flavors.size(); ++i) {
    t.flavor_index_[config.flavors[i].name] = static_cast<int>(i);
  }
  for (size_t i = 0; i < config.queues.size(); ++i) {
    t.queue_index_[config.queues[i].name] = static_cast<int>(i);
  }
  const int nq = t.num_queues();
  std::map<std::string, int, std::less<>> cohort_node;
  for (size_t i = 0; i < config.cohorts.size(); ++i) {
    cohort_node[config.cohorts[i].name] = nq + static_cast<int>(i);
    t.cohort_names_.push_back(config.cohorts[i].name);
  }
  const size_t frs = config.flavors.size() * kNumQuotaResources;
  t.nodes_.resize(nq + config.cohorts.size());
  auto fill = [&](Node& n, const std::vector<ResourceGroup>& groups) {
    n.nominal.assign(frs, 0);
    n.borrowing.assign(frs, kNoLimit);
    n.lending.assign(frs, kNoLimit);
    n.subtree.assign(frs, 0);
    n.usage.assign(frs, 0);
    for (const ResourceGroup& g : groups) {
      for (const FlavorQuotas& fq : g.flavors) {
        const int f = t.flavor_index_.at(fq.flavor);
        for (const ResourceQuota& q : fq.resources) {
          const int fr = t.Fr(f, q.resource);
          n.nominal[fr] = q.nominal;
          n.subtree[fr] = q.nominal;
          if (q.borrowing_limit) n.borrowing[fr] = *q.borrowing_limit;
          if (q.lending_limit) n.lending[fr] = *q.lending_limit;
        }
      }
    }
  };
  for (int q = 0; q < nq; ++q) {
    const QueueSpec& spec = config.queues[q];
    fill(t.nodes_[q], spec.resource_groups);
    t.nodes_[q].weight_milli = spec.fair_weight_milli;
    if (!spec.cohort.empty()) t.nodes_[q].parent = cohort_node.at(spec.cohort);
  }
  std::vector<int> depth(t.nodes_.size(), 0);
  for (size_t i = 0; i < config.cohorts.size(); ++i) {
    const CohortSpec& c = config.cohorts[i];
    Node& n = t.nodes_[nq + i];
    fill(n, c.resource_groups);
    n.weight_milli = c.fair_weight_milli;
    if (!c.parent.empty()) n.parent = cohort_node.at(c.parent);
  }
  for (size_t i = nq; i < t.nodes_.size(); ++i) {
    for (int p = t.nodes_[i].parent; p >= 0; p = t.nodes_[p].parent) ++depth[i];
  }
  t.children_.resize(t.nodes_.size());
  for (size_t i = 0; i < t.nodes_.size(); ++i) {
    if (t.nodes_[i].parent >= 0) t.children_[t.nodes_[i].parent].push_back(static_cast<int>(i));
  }
  // Children before parents: queues, then cohorts deepest first.
  std::vector<int> order(t.nodes_.size() - nq);
  for (size_t i = 0; i < order.size(); ++i) order[i] = nq + static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  std::vector<int> bottom_up;
  for (int q = 0; q < nq; ++q) bottom_up.push_back(q);
  bottom_up.insert(bottom_up.end(), order.begin(), order.end());
  for (int i : bottom_up) {
    const Node& n = t.nodes_[i];
    if (n.parent < 0) continue;
    Node& p = t.nodes_[n.parent];
    for (size_t fr = 0; fr < frs; ++fr) {
      p.subtree[fr] += n.subtree[fr] - t.Guaranteed(n, static_cast<int>(fr));
    }
  }
  return t;
}

int QuotaTree::FindQueue(std::string_view name) const {
  auto it = queue_index_.find(std::string(name));
  return it == queue_index_.end() ? -1 : it->second;
}

int QuotaTree::FindFlavor(std::string_view name) const {
  auto it = flavor_index_.find(std::string(name));
  return it == flavor_index_.end() ? -1 : it->second;
}

int QuotaTree::RootOf(int q) const {
  int n = nodes_[q].parent;
  if (n < 0) return -1;
  while (nodes_[n].parent >= 0) n = nodes_[n].parent;
  return n;
}

int64_t QuotaTree::Guaranteed(const Node& n, int fr) const {
  return n.lending[fr] == kNoLimit ? 0 : std::max<int64_t>(0, n.subtree[fr] - n.lending[fr]);
}

int64_t QuotaTree::AvailableAt(int node, int fr) const {
  const Node& n = nodes_[node];
  if (n.parent < 0) return std::max<int64_t>(0, n.subtree[fr] - n.usage[fr]);
  const int64_t guaranteed = Guaranteed(n, fr);
  const int64_t local = std::max<int64_t>(0, guaranteed - n.usage[fr]);
  int64_t from_parent = AvailableAt(n.parent, fr);
  if (n.borrowing[fr] != kNoLimit) {
    const int64_t stored_in_parent = n.subtree[fr] - guaranteed;
    const int64_t used_in_parent = std::max<int64_t>(0, n.usage[fr] - guaranteed);
    from_parent = std::min(from_parent, stored_in_parent - used_in_parent + n.borrowing[fr]);
  }
  return local + std::max<int64_t>(0, from_parent);
}

void QuotaTree::AddAt(int node, int fr, int64_t delta) {
  while (delta != 0 && node >= 0) {
    Node& n = nodes_[node];
    const int64_t g = Guaranteed(n, fr);
    const int64_t before = std::max<int64_t>(0, n.usage[fr] - g);
    n.usage[fr] += delta;
    delta = std::max<int64_t>(0, n.usage[fr] - g) - before;
    node = n.parent;
  }
}

void QuotaCharge::Add(int flavor, QuotaResource r, int64_t amount) {
  if (flavor == kNoFlavor) return;
  for (Part& p : parts) {
    if (p.flavor == flavor && p.resource == r) {
      p.amount += amount;
      return;
    }
  }
  parts.push_back({flavor, r, amount});
}

void QuotaCharge::Add(const QuotaCharge& other) {
  for (const Part& p : other.parts) Add(p.flavor, p.resource, p.amount);
}

bool QuotaCharge::Charges(int flavor, QuotaResource r) const {
  return std::any_of(parts.begin(), parts.end(), [&](const Part& p) {
    return p.flavor == flavor && p.resource == r && p.amount > 0;
  });
}

bool QuotaCharge::UsesFlavor(int flavor) const {
  return std::any_of(parts.begin(), parts.end(), [&](const Part& p) { return p.flavor == flavor; });
}

void QuotaTree::AddUsage(int q, const QuotaCharge& c, int sign) {
  ++generation_;
  for (const QuotaCharge::Part& p : c.parts) {
    if (p.amount != 0) AddAt(q, Fr(p.flavor, p.resource), sign * p.amount);
  }
}

int64_t QuotaTree::Available(int q, int flavor, QuotaResource r) const {
  return AvailableAt(q, Fr(flavor, r));
}

bool QuotaTree::Fits(int q, const QuotaCharge& c) const {
  for (const QuotaCharge::Part& p : c.parts) {
    if (p.amount != 0 && AvailableAt(q, Fr(p.flavor, p.resource)) < p.amount) return false;
  }
  return true;
}

bool QuotaTree::WouldBorrow(int q, const QuotaCharge& c) const {
  const Node& n = nodes_[q];
  for (const QuotaCharge::Part& p : c.parts) {
    const int fr = Fr(p.flavor, p.resource);
    if (p.amount != 0 && n.usage[fr] + p.amount > n.subtree[fr]) return true;
  }
  return false;
}

bool QuotaTree::BorrowingIn(int q, int flavor, QuotaResource r) const {
  const Node& n = nodes_[q];
  const int fr = Fr(flavor, r);
  return n.usage[fr] > n.subtree[fr];
}

QuotaTree::Figures QuotaTree::FiguresOf(int node, int flavor, QuotaResource r) const {
  const Node& n = nodes_[node];
  const int fr = Fr(flavor, r);
  return {n.nominal[fr], n.borrowing[fr], n.lending[fr], n.subtree[fr], n.usage[fr]};
}

int64_t QuotaTree::Nominal(int q, int flavor, QuotaResource r) const {
  return nodes_[q].nominal[Fr(flavor, r)];
}

int64_t QuotaTree::UnusedNominal(int q, int flavor, QuotaResource r) const {
  const int fr = Fr(flavor, r);
  return std::max<int64_t>(0, nodes_[q].nominal[fr] - nodes_[q].usage[fr]);
}

bool QuotaTree::UnderNominal(int q, int flavor, QuotaResource r) const {
  const Node& n = nodes_[q];
  const int fr = Fr(flavor, r);
  return n.usage[fr] < n.nominal[fr];
}

std::string QuotaTree::Explain(int q, const QuotaCharge& c) const {
  const Node& n = nodes_[q];
  for (const QuotaCharge::Part& p : c.parts) {
    if (p.amount == 0) continue;
    const QuotaResource res = p.resource;
    const int fr = Fr(p.flavor, res);
    const int64_t avail = AvailableAt(q, fr);
    if (avail >= p.amount) continue;
    std::string s = "queue " + queues_[q].name + ": " + std::string(QuotaResourceName(res)) +
                    " in flavor " + flavors_[p.flavor].name + " needs " +
                    FormatQuota(res, p.amount) + ", " + FormatQuota(res, avail) +
                    " available (uses " + FormatQuota(res, n.usage[fr]) + " of nominal " +
                    FormatQuota(res, n.nominal[fr]);
    if (n.parent < 0) {
      s += "; no cohort to borrow from)";
    } else if (n.usage[fr] + p.amount > n.subtree[fr] && n.borrowing[fr] != kNoLimit &&
               n.usage[fr] + p.amount - n.subtree[fr] > n.borrowing[fr]) {
      s += "; borrowing limit " + FormatQuota(res, n.borrowing[fr]) + ")";
    } else {
      const int64_t idle = AvailableAt(n.parent, fr);
      s += idle > 0 ? "; cohort " + cohort_names_[n.parent - num_queues()] + " has " +
                          FormatQuota(res, idle) + " idle)"
                    : "; cohort " + cohort_names_[n.parent - num_queues()] + " has no idle quota)";
    }
    return s;
  }
  return "";
}

int64_t QuotaTree::ShareMilli(int q, const QuotaCharge* extra) const { return Share(q, extra); }

int64_t QuotaTree::NodeShareMilli(int node) const { return Share(node, nullptr); }

int64_t QuotaTree::Share(int node, const QuotaCharge* extra) const {
  const Node& n = nodes_[node];
  if (n.parent < 0) return 0;
  const Node& p = nodes_[n.parent];
  int64_t share = 0;
  for (int r = 0; r < kNumQuotaResources; ++r) {
    int64_t borrowed = 0;
    int64_t lendable = 0;
    for (int f = 0; f < num_flavors(); ++f) {
      const int fr = Fr(f, static_cast<QuotaResource>(r));
      int64_t used = n.usage[fr];
      if (extra != nullptr) {
        for (const QuotaCharge::Part& x : extra->parts) {
          if (x.flavor == f && static_cast<int>(x.resource) == r) used += x.amount;
        }
      }
      borrowed += std::max<int64_t>(0, used - n.subtree[fr]);
      lendable += p.subtree[fr];
    }
    if (borrowed == 0) continue;
    // Borrowing from an empty pool (only possible via a parent) counts as a full share.
    const int64_t ratio = lendable > 0 ? borrowed * 1000 / lendable : 1000;
    share = std::max(share, ratio);
  }
  if (share == 0) return 0;
  if (n.weight_milli == 0) return std::numeric_limits<int64_t>::max() / 4;
  return share * 1000 / n.weight_milli;
}

}  // namespace tessera::core
