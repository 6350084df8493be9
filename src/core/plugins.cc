#include "core/plugins.h"

#include <algorithm>
#include <charconv>

#include "core/devices.h"

namespace tessera::core {

namespace {

bool ParseInt(std::string_view s, int64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// --- Filters ---------------------------------------------------------------------------------

class NodeUnschedulable final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NodeUnschedulable"; }
  bool NodeLocal() const override { return true; }
  std::string_view Filter(CycleState&, const ClusterState& s, NodeId n) override {
    return s.node(n).unschedulable ? "node(s) were unschedulable" : std::string_view();
  }
};

class TaintToleration final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "TaintToleration"; }
  bool NodeLocal() const override { return true; }
  bool ClassScoped() const override { return true; }
  std::string_view Filter(CycleState& cycle, const ClusterState& s, NodeId n) override {
    for (const Taint& t : s.taints(n)) {
      if (t.effect == TaintEffect::kPreferNoSchedule) continue;
      bool ok = std::any_of(cycle.pod().tolerations.begin(), cycle.pod().tolerations.end(),
                            [&](const Toleration& tol) { return Tolerates(tol, t); });
      if (!ok) return cycle.Keep("untolerated taint {" + t.key + ": " + t.value + "}");
    }
    return {};
  }
};

class NodeAffinity final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NodeAffinity"; }
  bool NodeLocal() const override { return true; }
  bool ClassScoped() const override { return true; }
  std::string_view Filter(CycleState& cycle, const ClusterState& s, NodeId n) override {
    const PodSpec& pod = cycle.pod();
    const Labels& labels = s.labels(n);
    if (!MatchesSelector(labels, pod.node_selector)) return "node selector mismatch";
    if (!pod.required_terms.empty() &&
        std::none_of(pod.required_terms.begin(), pod.required_terms.end(),
                     [&](const NodeSelectorTerm& t) { return MatchesTerm(labels, t); })) {
      return "node affinity mismatch";
    }
    return {};
  }
};

class NodeResourcesFit final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "NodeResourcesFit"; }
  bool NodeLocal() const override { return true; }
  std::string_view Filter(CycleState& cycle, const ClusterState& s, NodeId n) override {
    const Resources& req = cycle.pod().requests;
    const Resources& used = s.usage(n).used;
    const Resources& cap = s.node(n).allocatable;
    if (used.cpu_milli + req.cpu_milli > cap.cpu_milli) return "insufficient cpu";
    if (used.memory_mib + req.memory_mib > cap.memory_mib) return "insufficient memory";
    return {};
  }
};

// --- Policy scores ---------------------------------------------------------------------------

// Free GPU milli on the node after the candidate is placed, and on its picked cards.
struct After {
  int64_t node_gpu_free = 0;
  int64_t picked_free = 0;  // sum over picked cards of what stays free on them
  int64_t cpu_free = 0;
  int64_t picked_taken_before = 0;  // how much of the picked cards was already taken
};

After ComputeAfter(const ClusterState& s, const PodSpec& pod, const Candidate& c) {
  After a;
  const NodeRecord& n = s.node(c.node);
  a.node_gpu_free = s.usage(c.node).gpu_free_milli;
  for (const DevicePick& p : c.devices()) {
    int64_t take = PickMilli(s, pod, c, p);
    int64_t free = s.GpuFreeMilli(c.node, p.gpu);
    a.node_gpu_free -= take;
    a.picked_free += std::max<int64_t>(0, free - take);
    a.picked_taken_before += kMilliPerGpu - free;
  }
  a.node_gpu_free = std::max<int64_t>(0, a.node_gpu_free);
  a.cpu_free = n.allocatable.cpu_milli - s.usage(c.node).used.cpu_milli - pod.requests.cpu_milli;
  return a;
}

int64_t Clamp(int64_t v) { return std::clamp<int64_t>(v, 0, kMaxNodeScore); }

// Best fit: least CPU and GPU left on the node after placement, measured against the largest
// node of the cluster (so a small, nearly full node beats a big, half-full one); among cards of
// one node, the card left with the least free share.
class BestFit final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "BestFit"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    After a = ComputeAfter(s, cycle.pod(), c);
    const double cpu =
        s.max_node_cpu_milli() > 0 ? static_cast<double>(a.cpu_free) / s.max_node_cpu_milli() : 0.0;
    const double gpu = s.max_node_gpu_milli() > 0
                           ? static_cast<double>(a.node_gpu_free) / s.max_node_gpu_milli()
                           : 0.0;
    const double left = 0.5 * cpu + 0.5 * gpu;  // in [0, 1]
    // 999 parts of the range for the node, 1 part for the card.
    const int64_t node_part = static_cast<int64_t>((1.0 - left) * (kMaxNodeScore - 1000));
    const int64_t card_part =
        c.n > 0 ? 1000 - std::min<int64_t>(1000, a.picked_free / std::max<int>(1, c.n)) : 1000;
    return Clamp(node_part + card_part);
  }
};

// Spread (kube's LeastAllocated): most CPU and GPU left, relative to the node's own size.
class Spread final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "Spread"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    After a = ComputeAfter(s, cycle.pod(), c);
    const NodeRecord& n = s.node(c.node);
    const double cpu = n.allocatable.cpu_milli > 0
                           ? static_cast<double>(a.cpu_free) / n.allocatable.cpu_milli
                           : 0.0;
    const double gpu = n.gpu_capacity_milli > 0
                           ? static_cast<double>(a.node_gpu_free) / n.gpu_capacity_milli
                           : (n.gpus.empty() ? 1.0 : 0.0);
    const int64_t node_part =
        static_cast<int64_t>((0.5 * cpu + 0.5 * gpu) * (kMaxNodeScore - 1000));
    const int64_t card_part =
        c.n > 0 ? std::min<int64_t>(1000, a.picked_free / std::max<int>(1, c.n)) : 0;
    return Clamp(node_part + card_part);
  }
};

// GPU packing: first put shares on cards already in use (the fuller the better), then use free
// cards on nodes already in use, and only then open a node whose cards are all free.
class GpuPacking final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "GpuPacking"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    if (c.n == 0) return 0;
    const NodeRecord& n = s.node(c.node);
    int fully_free = 0;
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      if (s.GpuFreeMilli(c.node, static_cast<int>(g)) == kMilliPerGpu) ++fully_free;
    }
    int fully_free_used = 0;
    int64_t free_on_used = 0;
    for (const DevicePick& p : c.devices()) {
      int64_t f = s.GpuFreeMilli(c.node, p.gpu);
      if (f == kMilliPerGpu) {
        ++fully_free_used;
      } else {
        free_on_used += f;
      }
    }
    (void)cycle;
    constexpr int64_t kStep = kMaxNodeScore / 1000;
    if (fully_free == static_cast<int>(n.gpus.size())) {
      return Clamp(kMaxNodeScore / 3 - kStep * fully_free);
    }
    if (fully_free_used > 0) {
      return std::max(kMaxNodeScore / 3, kMaxNodeScore / 2 - kStep * fully_free_used);
    }
    // free_on_used / n is in [0, 1000): the emptier the used card, the lower.
    return std::max(kMaxNodeScore / 2, kMaxNodeScore - free_on_used / c.n * (kMaxNodeScore / 2000));
  }
};

// Dot product (Tetris's alignment of demand and what is free), as the FGD paper's experiments
// run it (dimExtMethod merge, normMethod max, best-fit cards): demand and free capacity as (CPU,
// GPU) vectors, the node's cards merged into one dimension (all its free milli-GPUs), each
// normalized by the largest node of the cluster; the score is floor(100 x (1 - dot / 2)) in
// kube-scheduler's integer steps, so the least aligned node wins and nodes within one step tie.
// Among a node's candidates, and among tied nodes, the one whose picked cards have the least free
// capacity wins (the best-fit card).
class DotProduct final : public ScorePlugin {
 public:
  static constexpr int64_t kSteps = 100;  // kube-scheduler's MaxNodeScore
  static constexpr int64_t kStep = kMaxNodeScore / kSteps;

  std::string_view Name() const override { return "DotProduct"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    const PodSpec& pod = cycle.pod();
    const NodeRecord& n = s.node(c.node);
    const NodeUsage& u = s.usage(c.node);
    const double max_cpu = std::max<int64_t>(1, s.max_node_cpu_milli());
    const double max_gpu = std::max<int64_t>(1, s.max_node_gpu_milli());
    const double cpu_req = pod.requests.cpu_milli / max_cpu;
    const double cpu_free = (n.allocatable.cpu_milli - u.used.cpu_milli) / max_cpu;
    int64_t gpu_req = 0;
    int64_t picked_free = 0;
    for (const DevicePick& p : c.devices()) {
      gpu_req += PickMilli(s, pod, c, p);
      picked_free += s.GpuFreeMilli(c.node, p.gpu);
    }
    const double gpu_free = static_cast<double>(u.gpu_free_milli);  // all its cards, merged
    const double dot = (cpu_req * cpu_free + gpu_req / max_gpu * (gpu_free / max_gpu)) / 2.0;
    const auto step = static_cast<int64_t>((1.0 - dot) * kSteps);
    static_assert(kMaxGpusPerNode * kMilliPerGpu / 2 < kStep, "the card tie-break stays in a step");
    return Clamp(step * kStep - picked_free / 2);
  }
};

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Random: a seeded, reproducible draw per (seed, attempt, node, first device).
class Random final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "Random"; }
  int64_t Score(const CycleState& cycle, const ClusterState&, const Candidate& c) override {
    uint64_t h = SplitMix64(cycle.seed() ^ SplitMix64(cycle.sequence()));
    h = SplitMix64(h ^ c.node.value());
    h = SplitMix64(h ^ (c.n > 0 ? c.picks[0].gpu * 131u + c.picks[0].mig_instance : 0u));
    return static_cast<int64_t>(h % (kMaxNodeScore + 1));
  }
};

// --- Helper scores ---------------------------------------------------------------------------

// Topology: a multi-GPU candidate inside one NVLink domain scores highest, inside one NUMA node
// next; among those, the domain left with the fewest free cards (keep large domains whole).
class Topology final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "Topology"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  bool Skip(const CycleState& cycle, const ClusterState&) const override {
    return cycle.pod().gpu.kind != GpuRequestKind::kWhole;
  }
  int64_t Score(const CycleState&, const ClusterState& s, const Candidate& c) override {
    if (c.n == 0 || c.kind != DeviceKind::kWhole) return kMaxNodeScore;
    const std::vector<GpuUsage>& gpus = s.usage(c.node).gpus;
    const GpuUsage& first = gpus[c.picks[0].gpu];
    bool one_link = first.nvlink_domain >= 0;
    bool one_numa = first.numa_node >= 0;
    for (const DevicePick& p : c.devices()) {
      one_link &= gpus[p.gpu].nvlink_domain == first.nvlink_domain;
      one_numa &= gpus[p.gpu].numa_node == first.numa_node;
    }
    int64_t base = one_link ? 2 * kMaxNodeScore / 3 : one_numa ? kMaxNodeScore / 3 : 0;
    if (!one_link && !one_numa) return base;
    // Free cards left in the group the candidate sits in.
    int left = 0;
    int size = 0;
    for (const GpuUsage& d : gpus) {
      bool same =
          one_link ? d.nvlink_domain == first.nvlink_domain : d.numa_node == first.numa_node;
      if (!same) continue;
      ++size;
      if (d.holders == 0) ++left;
    }
    left -= c.n;
    return base + (kMaxNodeScore / 3) * (size - left) / std::max(1, size);
  }
};

// Gang locality: nodes already holding members of the gang being placed score highest, so a
// gang lands on as few nodes as possible.
class GangLocality final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "GangLocality"; }
  bool NodeLocal(const CycleState& cycle) const override { return cycle.gang() == nullptr; }
  bool Skip(const CycleState& cycle, const ClusterState&) const override {
    return cycle.gang() == nullptr;
  }
  int64_t Score(const CycleState& cycle, const ClusterState&, const Candidate& c) override {
    const GangContext* g = cycle.gang();
    if (g == nullptr) return 0;
    return std::find(g->nodes.begin(), g->nodes.end(), c.node) != g->nodes.end() ? kMaxNodeScore
                                                                                 : 0;
  }
};

class NodeAffinityPreferred final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "NodeAffinityPreferred"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  bool Skip(const CycleState& cycle, const ClusterState&) const override {
    return cycle.pod().preferred_terms.empty();
  }
  bool Normalizes() const override { return true; }
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    int64_t sum = 0;
    const Labels& labels = s.labels(c.node);
    for (const PreferredTerm& t : cycle.pod().preferred_terms) {
      if (MatchesTerm(labels, t.term)) sum += t.weight;
    }
    return sum;
  }
};

class TaintPreferNoSchedule final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "TaintPreferNoSchedule"; }
  bool NodeLocal(const CycleState&) const override { return true; }
  bool Skip(const CycleState&, const ClusterState& s) const override {
    return !s.any_prefer_no_schedule();
  }
  bool Normalizes() const override { return true; }
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    int64_t untolerated = 0;
    for (const Taint& t : s.taints(c.node)) {
      if (t.effect != TaintEffect::kPreferNoSchedule) continue;
      const auto& tols = cycle.pod().tolerations;
      if (std::none_of(tols.begin(), tols.end(),
                       [&](const Toleration& tol) { return Tolerates(tol, t); })) {
        ++untolerated;
      }
    }
    return -untolerated;
  }
};

}  // namespace

bool MatchesRequirement(const Labels& labels, const LabelRequirement& r) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  switch (r.op) {
    case SelectorOp::kIn:
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    case SelectorOp::kNotIn:
      return !has || std::find(r.values.begin(), r.values.end(), it->second) == r.values.end();
    case SelectorOp::kExists:
      return has;
    case SelectorOp::kDoesNotExist:
      return !has;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      int64_t node_v = 0;
      int64_t want = 0;
      if (!has || r.values.size() != 1 || !ParseInt(it->second, node_v) ||
          !ParseInt(r.values[0], want)) {
        return false;
      }
      return r.op == SelectorOp::kGt ? node_v > want : node_v < want;
    }
  }
  return false;
}

bool MatchesSelector(const Labels& labels, const Labels& selector) {
  return std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
    auto it = labels.find(kv.first);
    return it != labels.end() && it->second == kv.second;
  });
}

bool MatchesTerm(const Labels& labels, const NodeSelectorTerm& term) {
  return std::all_of(term.requirements.begin(), term.requirements.end(),
                     [&](const LabelRequirement& r) { return MatchesRequirement(labels, r); });
}

bool Tolerates(const Toleration& t, const Taint& taint) {
  if (!t.any_effect && t.effect != taint.effect) return false;
  if (t.key.empty()) return t.op == TolerationOp::kExists;
  if (t.key != taint.key) return false;
  return t.op == TolerationOp::kExists || t.value == taint.value;
}

std::unique_ptr<FilterPlugin> MakeNodeUnschedulableFilter() {
  return std::make_unique<NodeUnschedulable>();
}
std::unique_ptr<FilterPlugin> MakeTaintTolerationFilter() {
  return std::make_unique<TaintToleration>();
}
std::unique_ptr<FilterPlugin> MakeNodeAffinityFilter() { return std::make_unique<NodeAffinity>(); }
std::unique_ptr<FilterPlugin> MakeNodeResourcesFitFilter() {
  return std::make_unique<NodeResourcesFit>();
}
std::unique_ptr<ScorePlugin> MakeBestFitScore() { return std::make_unique<BestFit>(); }
std::unique_ptr<ScorePlugin> MakeSpreadScore() { return std::make_unique<Spread>(); }
std::unique_ptr<ScorePlugin> MakeGpuPackingScore() { return std::make_unique<GpuPacking>(); }
std::unique_ptr<ScorePlugin> MakeDotProductScore() { return std::make_unique<DotProduct>(); }
std::unique_ptr<ScorePlugin> MakeRandomScore() { return std::make_unique<Random>(); }
std::unique_ptr<ScorePlugin> MakeTopologyScore() { return std::make_unique<Topology>(); }
std::unique_ptr<ScorePlugin> MakeGangLocalityScore() { return std::make_unique<GangLocality>(); }
std::unique_ptr<ScorePlugin> MakeNodeAffinityPreferredScore() {
  return std::make_unique<NodeAffinityPreferred>();
}
std::unique_ptr<ScorePlugin> MakeTaintPreferNoScheduleScore() {
  return std::make_unique<TaintPreferNoSchedule>();
}

}  // namespace tessera::core
