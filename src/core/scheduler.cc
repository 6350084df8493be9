#include "core/scheduler.h"

#include <algorithm>

#include "core/check.h"
#include "core/devices.h"
#include "core/plugins.h"

namespace tessera::core {

void PluginRegistry::RegisterFilter(std::string name, FilterFactory f) {
  filters_[std::move(name)] = std::move(f);
}

void PluginRegistry::RegisterScore(std::string name, ScoreFactory f) {
  scores_[std::move(name)] = std::move(f);
}

std::unique_ptr<FilterPlugin> PluginRegistry::NewFilter(std::string_view name,
                                                        const SchedulerConfig& c) const {
  auto it = filters_.find(name);
  return it == filters_.end() ? nullptr : it->second(c);
}

std::unique_ptr<ScorePlugin> PluginRegistry::NewScore(std::string_view name,
                                                      const SchedulerConfig& c) const {
  auto it = scores_.find(name);
  return it == scores_.end() ? nullptr : it->second(c);
}

const PluginRegistry& PluginRegistry::Default() {
  static const PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();
    r->RegisterFilter("NodeUnschedulable", [](auto&) { return MakeNodeUnschedulableFilter(); });
    r->RegisterFilter("TaintToleration", [](auto&) { return MakeTaintTolerationFilter(); });
    r->RegisterFilter("NodeAffinity", [](auto&) { return MakeNodeAffinityFilter(); });
    r->RegisterFilter("NodeResourcesFit", [](auto&) { return MakeNodeResourcesFitFilter(); });
    r->RegisterScore("BestFit", [](auto&) { return MakeBestFitScore(); });
    r->RegisterScore("Spread", [](auto&) { return MakeSpreadScore(); });
    r->RegisterScore("GpuPacking", [](auto&) { return MakeGpuPackingScore(); });
    r->RegisterScore("DotProduct", [](auto&) { return MakeDotProductScore(); });
    r->RegisterScore("Random", [](auto&) { return MakeRandomScore(); });
    r->RegisterScore("FGD", [](const SchedulerConfig& c) { return MakeFgdScore(c.fgd_workload); });
    r->RegisterScore("FragPack",
                     [](const SchedulerConfig& c) { return MakeFragPackScore(c.fgd_workload); });
    r->RegisterScore("Topology", [](auto&) { return MakeTopologyScore(); });
    r->RegisterScore("GangLocality", [](auto&) { return MakeGangLocalityScore(); });
    r->RegisterScore("NodeAffinityPreferred",
                     [](auto&) { return MakeNodeAffinityPreferredScore(); });
    r->RegisterScore("TaintPreferNoSchedule",
                     [](auto&) { return MakeTaintPreferNoScheduleScore(); });
    return r;
  }();
  return *registry;
}

namespace {

const std::pair<std::string_view, std::string_view> kPolicies[] = {
    {"bestfit", "BestFit"},       {"spread", "Spread"}, {"gpupacking", "GpuPacking"},
    {"dotproduct", "DotProduct"}, {"random", "Random"}, {"fgd", "FGD"},
    {"fragpack", "FragPack"},
};

}  // namespace

std::vector<std::string> PolicyNames() {
  std::vector<std::string> out;
  for (const auto& [name, plugin] : kPolicies) out.emplace_back(name);
  return out;
}

Result<Profile> ProfileForPolicy(std::string_view policy) {
  for (const auto& [name, plugin] : kPolicies) {
    if (name != policy) continue;
    Profile p;
    p.filters = {"NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit"};
    // The policy dominates single pods; the helpers break its ties and steer multi-GPU
    // choices. Gang locality outranks the policy: members of one gang talk to each other.
    p.scores = {{std::string(plugin), 8},
                {"Topology", 2},
                {"GangLocality", 10},
                {"NodeAffinityPreferred", 1},
                {"TaintPreferNoSchedule", 1}};
    return p;
  }
  std::string known;
  for (const auto& [name, plugin] : kPolicies)
    known += (known.empty() ? "" : ", ") + std::string(name);
  return InvalidArgument("unknown placement policy \"" + std::string(policy) +
                         "\" (known: " + known + ")");
}

Result<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerConfig& config,
                                                     const PluginRegistry& registry) {
  if (config.percentage_of_nodes_to_score < 0 || config.percentage_of_nodes_to_score > 100) {
    return InvalidArgument("percentage_of_nodes_to_score must be in [0, 100]");
  }
  Result<Profile> profile = ProfileForPolicy(config.policy);
  if (!profile.ok()) return profile.status();
  std::unique_ptr<Scheduler> s(new Scheduler());
  s->config_ = config;
  for (const std::string& name : profile->filters) {
    auto f = registry.NewFilter(name, config);
    if (!f) return NotFound("no filter plugin named " + name);
    if (auto* pf = dynamic_cast<PreFilterPlugin*>(f.get())) s->prefilters_.push_back(pf);
    if (auto* rp = dynamic_cast<ReservePlugin*>(f.get())) s->reservers_.push_back(rp);
    s->filters_node_local_ &= f->NodeLocal();
    s->filters_.push_back(std::move(f));
  }
  for (const auto& [name, weight] : profile->scores) {
    auto p = registry.NewScore(name, config);
    if (!p) return NotFound("no score plugin named " + name);
    if (auto* pf = dynamic_cast<PreFilterPlugin*>(p.get())) s->prefilters_.push_back(pf);
    if (auto* rp = dynamic_cast<ReservePlugin*>(p.get())) s->reservers_.push_back(rp);
    s->scores_.push_back({std::move(p), weight});
  }
  s->raw_scores_.resize(s->scores_.size());
  s->skipped_.resize(s->scores_.size());
  // Rows for 128 pod signatures (a trace's popular shapes, bursts of replicas; a trace whose pods
  // pin GPU models has more shapes: 64 rows held 85% of gpuspec20's pods, 128 hold 94%), fewer
  // on clusters beyond 2,048 nodes: at most 2^18 entries (candidate and raw scores, about 130
  // bytes each, 34 MB).
  s->cache_ =
      std::make_unique<NodeResultCache>(static_cast<int>(s->scores_.size()), 128, size_t{1} << 18);
  s->class_memo_.resize(s->filters_.size());
  s->class_reason_.resize(s->filters_.size());
  return s;
}

int Scheduler::NumFeasibleToFind(int nodes) const {
  constexpr int kMinFeasible = 100;
  if (nodes <= kMinFeasible || config_.percentage_of_nodes_to_score >= 100) return nodes;
  int pct = config_.percentage_of_nodes_to_score;
  if (pct == 0) pct = std::max(5, 50 - nodes / 125);
  return std::max(kMinFeasible, static_cast<int>(static_cast<int64_t>(nodes) * pct / 100));
}

// Counts of filter reasons, rendered as kube-scheduler does: most frequent first.
class Diagnosis {
 public:
  void Add(std::string_view reason, int nodes = 1) {
    for (auto& [r, n] : counts_) {
      if (r.size() == reason.size() && r == reason) {
        n += nodes;
        return;
      }
    }
    counts_.emplace_back(std::string(reason), nodes);
  }
  std::string Message(int total) const {
    auto sorted = counts_;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    std::string m = "0/" + std::to_string(total) + " nodes are available";
    for (size_t i = 0; i < sorted.size(); ++i) {
      m += i == 0 ? ": " : ", ";
      m += std::to_string(sorted[i].second) + " " + sorted[i].first;
    }
    return m + ".";
  }

 private:
  std::vector<std::pair<std::string, int>> counts_;
};

Status Scheduler::BeginCycle(CycleState& cycle, const ClusterState& state) {
  for (PreFilterPlugin* p : prefilters_) {
    if (Status s = p->PreFilter(cycle, state); !s.ok()) return s;
  }
  const size_t classes = state.num_classes();
  class_failed_.assign(classes, 0);
  for (size_t f = 0; f < filters_.size(); ++f) {
    if (!filters_[f]->ClassScoped()) continue;
    class_memo_[f].assign(classes, 0);
    class_reason_[f].resize(classes);
  }
  return Status::Ok();
}

bool Scheduler::BeginReuse(const CycleState& cycle, const ClusterState& state) {
  if (!config_.reuse_node_results || !filters_node_local_) return false;
  std::string signature = PlacementSignature(cycle.pod());
  generations_.clear();
  for (size_t p = 0; p < scores_.size(); ++p) {
    const ScorePlugin& plugin = *scores_[p].plugin;
    if (!skipped_[p] && !plugin.NodeLocal(cycle)) return false;
    signature.push_back(skipped_[p] ? 's' : 'r');  // which plugins the row's scores cover
    generations_.push_back(plugin.Generation());
  }
  cache_->Begin(signature, state, generations_);
  return true;
}

std::string_view Scheduler::Examine(CycleState& cycle, const ClusterState& state,
                                    const DeviceRequest& req, NodeId id) {
  for (size_t f = 0; f < filters_.size(); ++f) {
    FilterPlugin& plugin = *filters_[f];
    std::string_view reason;
    if (plugin.ClassScoped()) {
      const uint32_t cls = state.node(id).cls.value();
      uint8_t& memo = class_memo_[f][cls];
      if (memo == 0) {
        std::string_view r = plugin.Filter(cycle, state, id);
        memo = r.empty() ? 1 : 2;
        if (!r.empty()) {
          class_reason_[f][cls] = std::string(r);
          class_failed_[cls] = 1;
        }
      }
      if (memo == 2) reason = class_reason_[f][cls];
    } else {
      reason = plugin.Filter(cycle, state, id);
    }
    if (!reason.empty()) return reason;
  }
  return ProposeCandidates(req, state, id, candidates_);
}

bool Scheduler::NeverFitsAnywhere(const ClusterState& state, const DeviceRequest& req,
                                  bool by_class) const {
  if (state.size() == 0) return false;
  // A class-scoped filter (selector, affinity, taint) rejected the node's class this cycle, or
  // the node has fewer GPUs than asked, however many were free.
  auto never = [&](NodeId id) {
    return class_failed_[state.node(id).cls.value()] || NeverHoldsWholeCards(req, state, id);
  };
  if (by_class) {
    for (const StateClasses::Live& c : states_.live()) {
      if (!never(c.first)) return false;
    }
    return true;
  }
  for (uint32_t i = 0; i < state.size(); ++i) {
    if (!never(NodeId(i))) return false;
  }
  return true;
}

bool Scheduler::GroupsIdenticalNodes(const CycleState& cycle) const {
  if (!config_.group_identical_nodes || !filters_node_local_) return false;
  for (size_t p = 0; p < scores_.size(); ++p) {
    if (!skipped_[p] && !scores_[p].plugin->NodeLocal(cycle)) return false;
  }
  const PodSpec& pod = cycle.pod();
  auto names = [](const NodeSelectorTerm& t) {
    return std::any_of(t.requirements.begin(), t.requirements.end(),
                       [](const LabelRequirement& r) { return r.key == kHostnameLabel; });
  };
  return !pod.node_selector.contains(kHostnameLabel) &&
         std::none_of(pod.required_terms.begin(), pod.required_terms.end(), names) &&
         std::none_of(pod.preferred_terms.begin(), pod.preferred_terms.end(),
                      [&](const PreferredTerm& t) { return names(t.term); });
}

bool Scheduler::AnyFeasible(const ClusterState& state, const PodSpec& pod,
                            std::span<const NodeId> nodes) {
  if (nodes.empty() || !ValidatePodSpec(pod).ok()) return false;
  CycleState cycle(pod, config_.seed, sequence_, nullptr);
  if (!BeginCycle(cycle, state).ok()) return false;
  const DeviceRequest req = MakeDeviceRequest(pod);
  candidates_.clear();
  for (NodeId id : nodes) {
    if (id.value() < state.size() && Examine(cycle, state, req, id).empty()) return true;
  }
  return false;
}

namespace {

// True only when `node` certainly cannot hold `gr` (ProposeCandidates would find no device),
// from the node's usage summary.
template <typename SharingModes>
bool NoRoom(const GpuRequest& gr, int16_t max_share_milli, uint8_t unheld_cards,
            const SharingModes& sharing_modes) {
  switch (gr.kind) {
    case GpuRequestKind::kShare:
      return max_share_milli < gr.milli;
    case GpuRequestKind::kWhole:
      // Time-sliced cards may stand in for whole ones; without them, unheld cards are needed.
      return unheld_cards < gr.count &&
             !(sharing_modes() & (1u << static_cast<int>(SharingMode::kTimeSlice)));
    default:
      return false;
  }
}

// True when the scan may pass over a node unexamined: a node of a label/taint class `cls` some
// filter already rejected, with no free milli-GPU for a GPU request of any kind, without a card
// of a model the pod accepts (`models`), or whose usage summary shows no room for the request
// (NoRoom). Reads the summary fields of NodeUsage (or of a StateClasses::Live, which copies them).
// `sharing_modes` returns NodeRecord::sharing_modes, read only when needed.
template <typename Summary, typename SharingModes>
bool PassOver(const PodSpec& pod, uint64_t models, std::span<const uint8_t> class_failed,
              const Summary& u, NodeClassId cls, const SharingModes& sharing_modes) {
  const bool wants_gpu = pod.gpu.kind != GpuRequestKind::kNone;
  return (wants_gpu && u.gpu_free_milli == 0) || class_failed[cls.value()] ||
         (wants_gpu && (u.model_mask & models) == 0) ||
         NoRoom(pod.gpu, u.max_share_milli, u.unheld_cards, sharing_modes);
}

uint64_t AcceptedModels(const ClusterState& state, const PodSpec& pod) {
  return pod.gpu.kind != GpuRequestKind::kNone ? state.AcceptedModelMask(pod.gpu_models)
                                               : ~uint64_t{0};
}

}  // namespace

std::pair<int, int> Scheduler::ScanClasses(CycleState& cycle, const ClusterState& state,
                                           const DeviceRequest& req, bool reuse, Diagnosis& diag) {
  const PodSpec& pod = *req.pod;
  const uint64_t models = AcceptedModels(state, pod);
  states_.Sync(state);
  int feasible = 0;
  for (const StateClasses::Live& c : states_.live()) {
    const NodeId id = c.first;
    const int size = c.size;
    if (PassOver(pod, models, class_failed_, c, c.cls, [&] { return c.sharing_modes; })) {
      passed_over_.emplace_back(id, size);
      continue;
    }
    // A class's first node is mostly the same node cycle after cycle: its results are reused
    // as a single node's are.
    if (reuse) {
      if (const Candidate* cached = cache_->Find(id, c.version)) {
        candidates_.push_back(*cached);
        origin_.push_back(Origin::kCached);
        feasible += size;
        continue;
      }
    }
    const std::string_view reason = ExamineAndRecord(cycle, state, req, id);
    if (!reason.empty()) {
      diag.Add(reason, size);
      continue;
    }
    feasible += size;
  }
  return {static_cast<int>(state.size()), feasible};
}

std::pair<int, int> Scheduler::Scan(CycleState& cycle, const ClusterState& state,
                                    const DeviceRequest& req, uint32_t start, int want, bool reuse,
                                    Diagnosis& diag) {
  const PodSpec& pod = *req.pod;
  const int n = static_cast<int>(state.size());
  // A node passed over (PassOver) is examined for the diagnosis only if the scan finds no node
  // at all.
  const bool wants_gpu = pod.gpu.kind != GpuRequestKind::kNone;
  const uint64_t models = AcceptedModels(state, pod);
  uint32_t next_index = start;
  int looked = 0;
  int feasible = 0;
  for (int i = 0; i < n && feasible < want; ++i) {
    const NodeId id(next_index);
    next_index = next_index + 1 == static_cast<uint32_t>(n) ? 0 : next_index + 1;
    ++looked;
    const NodeUsage& usage = state.usage(id);
    if (PassOver(pod, models, class_failed_, usage, usage.cls,
                 [&] { return state.node(id).sharing_modes; })) {
      passed_over_.emplace_back(id, 1);
      continue;
    }
    if (reuse) {
      if (const Candidate* c = cache_->Find(id, usage.version)) {
        candidates_.push_back(*c);
        origin_.push_back(Origin::kCached);
        ++feasible;
        continue;
      }
    }
    // The scan is memory-bound: fetch the next node's card records while this one is examined.
    const NodeUsage& next = state.usage(NodeId(next_index));
    if (!next.gpus.empty() && (!wants_gpu || next.gpu_free_milli > 0)) {
      const char* p = reinterpret_cast<const char*>(next.gpus.data());
      const size_t bytes = next.gpus.size() * sizeof(GpuUsage);
      for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
    }
    const std::string_view reason = ExamineAndRecord(cycle, state, req, id);
    if (!reason.empty()) {
      diag.Add(reason);
      continue;
    }
    ++feasible;
  }
  return {looked, feasible};
}

std::string_view Scheduler::ExamineAndRecord(CycleState& cycle, const ClusterState& state,
                                             const DeviceRequest& req, NodeId id) {
  const size_t before = candidates_.size();
  const std::string_view reason = Examine(cycle, state, req, id);
  origin_.resize(candidates_.size(),
                 candidates_.size() == before + 1 ? Origin::kComputedAlone : Origin::kComputed);
  return reason;
}

size_t Scheduler::PickBest(CycleState& cycle, const ClusterState& state, bool reuse) {
  const size_t m = candidates_.size();
  if (reuse) {
    // A node examined this cycle with a single candidate is kept; its scores follow.
    for (size_t c = 0; c < m; ++c) {
      if (origin_[c] == Origin::kComputedAlone) {
        cache_->Store(state.usage(candidates_[c].node).version, candidates_[c]);
      }
    }
  }
  std::vector<int64_t>& total = totals_;
  total.assign(m, 0);
  for (size_t p = 0; p < scores_.size(); ++p) {
    ScorePlugin& plugin = *scores_[p].plugin;
    if (skipped_[p]) continue;
    std::vector<int64_t>& raw = raw_scores_[p];
    raw.resize(m);
    for (size_t c = 0; c < m; ++c) {
      const Candidate& cand = candidates_[c];
      if (!reuse) {
        raw[c] = plugin.Score(cycle, state, cand);
      } else if (origin_[c] == Origin::kCached) {
        raw[c] = cache_->Score(cand.node, static_cast<int>(p));
      } else {
        raw[c] = plugin.Score(cycle, state, cand);
        if (origin_[c] == Origin::kComputedAlone) {
          cache_->SetScore(cand.node, static_cast<int>(p), raw[c]);
        }
      }
    }
    plugin.AdjustScores(cycle, state, candidates_, raw);
    if (plugin.Normalizes()) plugin.NormalizeScores(raw);
    for (size_t c = 0; c < m; ++c) total[c] += scores_[p].weight * raw[c];
  }
  size_t best = 0;
  for (size_t c = 1; c < m; ++c) {
    if (total[c] > total[best] ||
        (total[c] == total[best] && candidates_[c].node < candidates_[best].node)) {
      best = c;
    }
  }
  return best;
}

PlaceOutcome Scheduler::Place(const ClusterState& state, const PodSpec& pod,
                              const GangContext* gang) {
  PlaceOutcome out;
  if (Status s = ValidatePodSpec(pod); !s.ok()) {
    out.reason = s.message();
    return out;
  }
  CycleState cycle(pod, config_.seed, sequence_++, gang);
  if (Status s = BeginCycle(cycle, state); !s.ok()) {
    out.reason = s.message();
    return out;
  }
  const int n = static_cast<int>(state.size());
  if (n == 0) {
    out.reason = "0/0 nodes are available: no nodes in the cluster.";
    return out;
  }
  const DeviceRequest req = MakeDeviceRequest(pod);
  candidates_.clear();
  passed_over_.clear();
  origin_.clear();
  for (size_t p = 0; p < scores_.size(); ++p) skipped_[p] = scores_[p].plugin->Skip(cycle, state);
  const int want = NumFeasibleToFind(n);
  const bool by_class = want >= n && GroupsIdenticalNodes(cycle);
  const bool reuse = BeginReuse(cycle, state);
  Diagnosis diag;
  const uint32_t start = next_start_ % static_cast<uint32_t>(n);
  const auto [looked, feasible] = by_class ? ScanClasses(cycle, state, req, reuse, diag)
                                           : Scan(cycle, state, req, start, want, reuse, diag);
  if (candidates_.empty() && !config_.diagnose_failures) {
    out.evaluated_nodes = looked;
    out.reason = "0/" + std::to_string(n) + " nodes are available.";
    return out;
  }
  if (candidates_.empty()) {
    for (const auto& [id, nodes] : passed_over_) {
      const std::string_view reason = Examine(cycle, state, req, id);
      TESSERA_CHECK(!reason.empty());
      diag.Add(reason, nodes);
    }
  }
  next_start_ = (start + static_cast<uint32_t>(looked)) % static_cast<uint32_t>(n);
  out.evaluated_nodes = looked;
  out.feasible_nodes = feasible;
  if (candidates_.empty()) {
    out.reason = diag.Message(n);
    // Every node was examined: each class's class-scoped filters ran (unless another filter
    // rejected its nodes first, which leaves the answer "may fit").
    out.never_fits = NeverFitsAnywhere(state, req, by_class);
    return out;
  }
  out.ok = true;
  out.placement = Materialize(state, pod, candidates_[PickBest(cycle, state, reuse)]);
  return out;
}

PlaceOutcome Scheduler::Schedule(ClusterState& state, const PodSpec& pod) {
  PlaceOutcome out = Place(state, pod);
  if (!out.ok) return out;
  if (Status s = state.Allocate(out.placement); !s.ok()) {
    out.ok = false;
    out.reason = "placement could not be reserved: " + s.message();
    return out;
  }
  for (ReservePlugin* r : reservers_) r->Reserve(pod, state, out.placement);
  return out;
}

Status Scheduler::Unreserve(ClusterState& state, const PodSpec& pod, const Placement& p) {
  if (Status s = state.Release(p); !s.ok()) return s;
  for (ReservePlugin* r : reservers_) r->Unreserve(pod, state, p);
  return Status::Ok();
}

GangOutcome Scheduler::ScheduleGang(ClusterState& state, std::span<const PodSpec> members,
                                    int min_member, std::span<const uint8_t> required) {
  return ScheduleGang(state, GangPods::Each(members, required), min_member);
}

GangOutcome Scheduler::ScheduleGang(ClusterState& state, const GangPods& members, int min_member) {
  GangOutcome out;
  const size_t total = members.size();
  const size_t need = min_member <= 0 ? total : std::min<size_t>(min_member, total);
  // The order members are tried in: required members first, then largest GPU demand first (big
  // members are the hard ones to fit), ties in member order. Members of one run are alike, so
  // the order is made of segments of runs: [first, end) of run `run`.
  struct Segment {
    size_t run, first, end;
  };
  std::vector<Segment> order;
  for (size_t r = 0; r < members.num_runs(); ++r) {
    const GangPods::Run& run = members.run(r);
    if (run.required > 0) order.push_back({r, members.start(r), members.start(r) + run.required});
  }
  const size_t required_segments = order.size();
  for (size_t r = 0; r < members.num_runs(); ++r) {
    const GangPods::Run& run = members.run(r);
    if (run.count > run.required) {
      order.push_back({r, members.start(r) + run.required, members.start(r) + run.count});
    }
  }
  std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(required_segments), order.end(),
                   [&](const Segment& a, const Segment& b) {
                     return NominalGpuMilli(members.run(a.run).pod) >
                            NominalGpuMilli(members.run(b.run).pod);
                   });
  GangContext gang;
  std::vector<std::pair<size_t, Placement>> placed;
  size_t failed = 0, position = 0, never = 0;
  bool required_failed = false, required_never = false;
  std::string first_failure;
  for (size_t k = 0; k < order.size() && !required_failed; ++k) {
    const Segment& seg = order[k];
    const PodSpec& pod = members.run(seg.run).pod;
    for (size_t i = seg.first; i < seg.end; ++i, ++position) {
      PlaceOutcome o = Place(state, pod, &gang);
      if (o.ok) {
        if (Status s = state.Allocate(o.placement); !s.ok()) {
          o.ok = false;
          o.reason = s.message();
        }
      }
      if (o.ok) {
        gang.nodes.push_back(o.placement.node);
        placed.emplace_back(i, std::move(o.placement));
        continue;
      }
      if (first_failure.empty()) {
        first_failure = "gang member " + members.Name(i) + " (" + std::to_string(position + 1) +
                        "/" + std::to_string(total) + "): " + o.reason;
      }
      required_failed = k < required_segments;
      // Nothing changed since this member failed: the rest of its run fail alike.
      if (o.never_fits) {
        never += seg.end - i;
        required_never = required_failed;
      }
      failed += seg.end - i;
      position += seg.end - i;
      break;
    }
    // Stop once the members left cannot make up the gang's need.
    if (placed.size() + (total - placed.size() - failed) < need) break;
  }
  if (placed.size() >= need && !required_failed) {
    out.ok = true;
    out.placements.resize(total);
    for (auto& [i, p] : placed) {
      for (ReservePlugin* r : reservers_) r->Reserve(members.pod(i), state, p);
      out.placements[i] = std::move(p);
    }
    if (placed.size() < total) out.reason = first_failure;
    return out;
  }
  // All-or-nothing: return everything this attempt took.
  for (const auto& [i, p] : placed) {
    Status s = state.Release(p);
    (void)s;
  }
  const size_t tried = placed.size() + failed;
  out.never_fits = required_never || total - never < need;
  if (required_failed) {
    out.reason = "gang needs the minimum of each of its tasks placed; " + first_failure;
  } else if (tried == total) {
    out.reason = "gang needs " + std::to_string(need) + " of " + std::to_string(total) +
                 " members placed, could place " + std::to_string(placed.size()) + "; " +
                 first_failure;
  } else {
    out.reason = "gang needs " + std::to_string(need) + " of " + std::to_string(total) +
                 " members placed; with " + std::to_string(placed.size()) + " placed, the " +
                 std::to_string(total - tried) + " not yet tried cannot make up the rest; " +
                 first_failure;
  }
  return out;
}

}  // namespace tessera::core
