#include "core/fgd.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>

#include "core/devices.h"

namespace tessera::core {

namespace {

bool ModelOk(const TaskType& t, const std::string* model) {
  if (t.models.empty()) return true;
  return model != nullptr &&
         std::any_of(t.models.begin(), t.models.end(),
                     [&](const std::string& m) { return SameModel(m, *model); });
}

}  // namespace

FragNode MakeFragNode(const ClusterState& state, NodeId id) {
  FragNode f;
  const NodeRecord& n = state.node(id);
  const NodeUsage& u = state.usage(id);
  f.cpu_free = n.allocatable.cpu_milli - u.used.cpu_milli;
  f.n = static_cast<int>(n.gpus.size());
  for (int g = 0; g < f.n; ++g) {
    const GpuUsage& c = u.gpus[g];
    f.free[g] = c.free_milli;
    f.shareable[g] = c.healthy && c.mode == SharingMode::kShared;
    f.wholeable[g] =
        c.healthy && (c.mode == SharingMode::kShared || c.mode == SharingMode::kExclusive);
    f.model[g] = &n.gpus[g].model;  // address only: read when a task type names models
  }
  return f;
}

int64_t TaskFragmentation(const FragNode& node, const TaskType& t) {
  int64_t total = 0;
  for (int g = 0; g < node.n; ++g) total += node.free[g];
  if (t.num_gpu == 0 || t.gpu_milli == 0 || node.cpu_free < t.cpu_milli) return total;
  const bool share = t.gpu_milli < kMilliPerGpu;
  int usable = 0;
  int64_t usable_free = 0;
  for (int g = 0; g < node.n; ++g) {
    const bool fits = share ? node.shareable[g] && node.free[g] >= t.gpu_milli
                            : node.wholeable[g] && node.free[g] == kMilliPerGpu;
    if (fits && ModelOk(t, node.model[g])) {
      ++usable;
      usable_free += node.free[g];
    }
  }
  if (usable < t.num_gpu) return total;
  return total - usable_free;
}

int64_t NodeFragmentation(const FragNode& node, std::span<const TaskType> types) {
  int64_t sum = 0;
  for (const TaskType& t : types) sum += t.weight * TaskFragmentation(node, t);
  return sum;
}

FragmentationMemo::FragmentationMemo(std::vector<TaskType> types) : types_(std::move(types)) {
  double cpu = 0;
  double gpu = 0;
  for (const TaskType& t : types_) {
    total_weight_ += t.weight;
    cpu_levels_.push_back(t.cpu_milli);
    models_matter_ |= !t.models.empty();
    cpu += static_cast<double>(t.weight) * static_cast<double>(t.cpu_milli);
    gpu += static_cast<double>(t.weight) * t.num_gpu * t.gpu_milli;
  }
  cpu_per_gpu_milli_ = gpu > 0 ? cpu / gpu : 0;
  std::sort(cpu_levels_.begin(), cpu_levels_.end());
  cpu_levels_.erase(std::unique(cpu_levels_.begin(), cpu_levels_.end()), cpu_levels_.end());
}

uint64_t FragmentationMemo::Hash(const Key& k) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t{k.cpu_level} << 8) ^ k.n;
  for (uint32_t i = 0; i < k.n; ++i) {
    h ^= k.cards[i];
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return h;
}

uint32_t FragmentationMemo::ModelId(const std::string* model) {
  if (!models_matter_ || model == nullptr) return 0;
  for (size_t i = 0; i < models_.size(); ++i) {
    if (SameModel(models_[i], *model)) return static_cast<uint32_t>(i + 1);
  }
  models_.push_back(*model);
  return static_cast<uint32_t>(models_.size());
}

std::span<const uint32_t> FragmentationMemo::ModelBits(const ClusterState& s) {
  // Shape versions are unique across states, and states of one shape share their model list.
  if (model_bits_shape_ != s.shape_version() || model_bits_.size() != s.models().size()) {
    model_bits_shape_ = s.shape_version();
    model_bits_.clear();
    for (const std::string& m : s.models()) model_bits_.push_back(ModelId(&m) << 13);
  }
  return model_bits_;
}

FragmentationMemo::Key FragmentationMemo::KeyOf(std::span<const uint32_t> cards,
                                                int64_t cpu_free) const {
  // A type's CPU test depends only on the CPU level, its card tests only on each card's free
  // share, flags and model, and the card order does not matter.
  Key k;
  k.n = static_cast<uint32_t>(cards.size());
  k.cpu_level = static_cast<uint32_t>(
      std::upper_bound(cpu_levels_.begin(), cpu_levels_.end(), cpu_free) - cpu_levels_.begin());
  for (size_t g = 0; g < cards.size(); ++g) {
    size_t i = g;  // insertion sort: at most 16 cards
    while (i > 0 && k.cards[i - 1] > cards[g]) {
      k.cards[i] = k.cards[i - 1];
      --i;
    }
    k.cards[i] = cards[g];
  }
  return k;
}

FragmentationMemo::Key FragmentationMemo::MakeKey(const FragNode& node) {
  std::array<uint32_t, kMaxGpusPerNode> cards;
  for (int g = 0; g < node.n; ++g) cards[g] = PackCard(node, g);
  return KeyOf({cards.data(), static_cast<size_t>(node.n)}, node.cpu_free);
}

void FragmentationMemo::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (Slot& s : old) {
    if (!s.used) continue;
    size_t i = Hash(s.key) & mask;
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

const int64_t* FragmentationMemo::Find(const Key& key) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = Hash(key) & mask; slots_[i].used; i = (i + 1) & mask) {
    if (slots_[i].key == key) return &slots_[i].value;
  }
  return nullptr;
}

int64_t FragmentationMemo::Insert(const Key& key, const FragNode& node) {
  const int64_t value = NodeFragmentation(node, types_);
  if (used_ >= (size_t{1} << 20)) {  // bound the memory: start over
    slots_.clear();
    used_ = 0;
  }
  if (2 * (used_ + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = Hash(key) & mask;
  while (slots_[i].used) i = (i + 1) & mask;
  slots_[i] = {key, value, true};
  ++used_;
  return value;
}

TaskType TaskTypeOf(const PodSpec& pod) {
  TaskType t;
  t.cpu_milli = pod.requests.cpu_milli;
  t.models = pod.gpu_models;
  switch (pod.gpu.kind) {
    case GpuRequestKind::kWhole:
      t.num_gpu = pod.gpu.count;
      t.gpu_milli = static_cast<int32_t>(kMilliPerGpu);
      break;
    case GpuRequestKind::kShare:
      t.num_gpu = pod.gpu.count;
      t.gpu_milli = pod.gpu.milli > 0 ? pod.gpu.milli : 1;
      break;
    default:
      break;  // MIG and replicas do not take shareable capacity
  }
  return t;
}

std::vector<TaskType> TypicalTaskTypes(std::vector<TaskType> observed, int coverage_percent) {
  std::stable_sort(observed.begin(), observed.end(),
                   [](const TaskType& a, const TaskType& b) { return a.weight > b.weight; });
  int64_t total = 0;
  for (const TaskType& t : observed) total += t.weight;
  std::vector<TaskType> out;
  int64_t covered = 0;
  for (TaskType& t : observed) {
    if (covered * 100 >= total * coverage_percent) break;
    covered += t.weight;
    out.push_back(std::move(t));
  }
  return out;
}

FragmentationWorkload::FragmentationWorkload(std::vector<TaskType> fixed)
    : fixed_(!fixed.empty()), memo_(std::move(fixed)) {}

bool TaskTypeCounter::Add(const PodSpec& pod) {
  TaskType t = TaskTypeOf(pod);
  auto [it, inserted] =
      counts_.try_emplace(Key{t.cpu_milli, t.num_gpu, t.gpu_milli, std::move(t.models)}, 0);
  ++it->second;
  return inserted;
}

std::vector<TaskType> TaskTypeCounter::Types() const {
  std::vector<TaskType> types;
  types.reserve(counts_.size());
  for (const auto& [k, n] : counts_) {
    types.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), n});
  }
  return types;
}

void FragmentationWorkload::Observe(const PodSpec& pod) {
  if (fixed_) return;
  const bool inserted = observed_.Add(pod);
  ++observations_;
  // Rebuild the typical types when a new shape appears or the count doubles.
  if (inserted || observations_ >= next_rebuild_) {
    memo_ = FragmentationMemo(TypicalTaskTypes(observed_.Types(), kTypicalCoveragePercent));
    next_rebuild_ = observations_ * 2;
    ++generation_;
  }
}

FragmentationDelta::Take FragmentationDelta::TakeOf(const CycleState& cycle, const ClusterState& s,
                                                    const Candidate& c) {
  Take take{};
  for (const DevicePick& p : c.devices()) take[p.gpu] += PickMilli(s, cycle.pod(), c, p);
  return take;
}

int64_t FragmentationDelta::Added(const CycleState& cycle, const ClusterState& s,
                                  const Candidate& c, const Take& take, FragmentationMemo& memo) {
  if (cached_node_ != c.node) {
    cached_node_ = c.node;
    before_node_ = MakeFragNode(s, c.node);
    const std::span<const uint32_t> model_bits = memo.ModelBits(s);
    const NodeUsage& usage = s.usage(c.node);
    for (int g = 0; g < before_node_.n; ++g) {
      before_cards_[g] =
          FragmentationMemo::PackCard(before_node_, g, model_bits[usage.gpus[g].model]);
    }
    const FragmentationMemo::Key key = memo.KeyOf(
        {before_cards_.data(), static_cast<size_t>(before_node_.n)}, before_node_.cpu_free);
    before_ = memo.Get(key, before_node_);
  }
  // The state after placing: less CPU, less free on the picked cards.
  auto free_after = [&](int g) { return std::max<int64_t>(0, before_node_.free[g] - take[g]); };
  std::array<uint32_t, kMaxGpusPerNode> cards = before_cards_;
  for (const DevicePick& p : c.devices()) {
    cards[p.gpu] = (cards[p.gpu] & ~uint32_t{0x7ff}) | static_cast<uint32_t>(free_after(p.gpu));
  }
  const int64_t cpu_free = before_node_.cpu_free - cycle.pod().requests.cpu_milli;
  const FragmentationMemo::Key key =
      memo.KeyOf({cards.data(), static_cast<size_t>(before_node_.n)}, cpu_free);
  if (const int64_t* v = memo.Find(key)) return *v - before_;
  FragNode node = before_node_;
  node.cpu_free = cpu_free;
  for (const DevicePick& p : c.devices()) node.free[p.gpu] = free_after(p.gpu);
  return memo.Insert(key, node) - before_;
}

namespace {

class Fgd final : public ScorePlugin, public PreFilterPlugin {
 public:
  static constexpr double kPaperMaxScore = 100;  // kube-scheduler's MaxNodeScore

  explicit Fgd(std::vector<TaskType> workload) : workload_(std::move(workload)) {}

  std::string_view Name() const override { return "FGD"; }
  bool Normalizes() const override { return true; }
  bool NodeLocal(const CycleState&) const override { return true; }
  uint64_t Generation() const override { return workload_.generation(); }

  Status PreFilter(CycleState& cycle, const ClusterState&) override {
    delta_.Reset();
    workload_.Observe(cycle.pod());
    return Status::Ok();
  }

  // The FGD paper's score: floor(100 x sigmoid(reduction)), the fragmentation the placement
  // removes (mean over the workload, in GPUs; negative when it adds). Growths within one step
  // (about 40 milli-GPUs near zero) tie, and the scheduler takes the lowest node id among them
  // (the paper's simulator takes the smallest node name, its names prefixed by a random order).
  // Min-max normalization then spreads the steps of the cycle over the score range.
  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    FragmentationMemo& memo = workload_.memo();
    const int64_t added = delta_.Added(cycle, s, c, FragmentationDelta::TakeOf(cycle, s, c), memo);
    const double reduction = -static_cast<double>(added) /
                             static_cast<double>(std::max<int64_t>(1, memo.total_weight())) /
                             static_cast<double>(kMilliPerGpu);
    return static_cast<int64_t>(kPaperMaxScore / (1.0 + std::exp(-reduction)));
  }

 private:
  FragmentationWorkload workload_;
  FragmentationDelta delta_;
};

// Fragmentation-aware packing (policy "fragpack"). Three steps per pod:
//  1. Each candidate's cost is, in milli-GPUs:
//     - the fragmentation it adds (FGD's measure, as a mean over the workload's task types);
//     - kStrandedWeight x the growth of the node's stranded capacity: the free milli-GPUs its
//       free CPU cannot feed at the workload's CPU per milli-GPU, max(0, G - C / r). Pods asking
//       more CPU per GPU than the workload does go where CPU is plentiful, the others where it
//       is scarce, so CPU-poor nodes do not run out of CPU with GPUs still free;
//     - on clusters whose workload pins models, the demand it crowds out: the milli-GPUs it takes
//       times the model's contention, kContention x the sum over task types t that accept the
//       model of p_t x d_t / U_t (popularity, GPU demand, and the free capacity t could use
//       anywhere), so scarce models stay free for the pods that need them.
//  2. Candidates within a tolerance of the cheapest (kTolerancePerMille of the pod's GPU
//     demand) count as equally good: FGD's differences below that are noise that scatters pods.
//  3. Among those, the node left fullest (least free GPU capacity as a share of its own, then
//     fewest whole free cards) wins, which keeps empty nodes and whole cards for large pods.
// A raw score holds the numbers of steps 1 and 3: the cost in 1/kValueScale milli-GPUs in the
// high bits, the packing measure in the low kPackBits; NormalizeScores applies steps 2 and 3.
class FragPack final : public ScorePlugin, public PreFilterPlugin {
 public:
  static constexpr int64_t kTolerancePerMille = 30;
  static constexpr double kStrandedWeight = 0.25;
  // Large enough that crowding out a scarce model outweighs the fragmentation differences
  // between candidates: at 300 it did not on gpuspec20 (94.02 at 100%, FGD 94.63); from 1000 to
  // 10000 the results barely move (docs/BENCHMARKS.md, "Model contention").
  static constexpr double kContention = 1000;
  // Packing: the node's free share of its GPU capacity (0 to 1), then its whole free cards.
  static constexpr double kPerWholeCard = 1.0 / 320;
  static constexpr double kPackRange = 1.0 + kMaxGpusPerNode * kPerWholeCard;
  // Raw score layout.
  static constexpr int kPackBits = 20;
  static constexpr int64_t kPackLevels = int64_t{1} << kPackBits;
  static constexpr double kValueScale = 1024;
  static constexpr int64_t kValueLimit = int64_t{1} << 40;

  explicit FragPack(std::vector<TaskType> workload) : workload_(std::move(workload)) {}

  std::string_view Name() const override { return "FragPack"; }
  bool Normalizes() const override { return true; }
  // Score's part is node-local; contention, which reads the whole cluster, is applied in
  // AdjustScores.
  bool NodeLocal(const CycleState&) const override { return true; }
  uint64_t Generation() const override { return workload_.generation(); }

  Status PreFilter(CycleState& cycle, const ClusterState& s) override {
    delta_.Reset();
    workload_.Observe(cycle.pod());
    tolerance_ = static_cast<double>(NominalGpuMilli(cycle.pod())) * kTolerancePerMille / 1000;
    contention_.clear();
    if (workload_.memo().models_matter()) MeasureContention(s);
    return Status::Ok();
  }

  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    FragmentationMemo& memo = workload_.memo();
    const FragmentationDelta::Take take = FragmentationDelta::TakeOf(cycle, s, c);
    const double added = static_cast<double>(delta_.Added(cycle, s, c, take, memo)) /
                         std::max<int64_t>(1, memo.total_weight());
    const NodeRecord& node = s.node(c.node);
    const NodeUsage& usage = s.usage(c.node);
    const int64_t free_before = usage.gpu_free_milli;
    int64_t free_after = 0;
    int whole_free = 0;
    for (size_t g = 0; g < usage.gpus.size(); ++g) {
      const int64_t f = std::max<int64_t>(0, usage.gpus[g].free_milli - take[g]);
      free_after += f;
      whole_free += f == kMilliPerGpu;
    }
    double stranded = 0;  // growth of the capacity left without CPU
    if (const double r = memo.cpu_per_gpu_milli(); r > 0) {
      const auto cpu_free = static_cast<double>(node.allocatable.cpu_milli - usage.used.cpu_milli);
      const auto cpu_after = cpu_free - static_cast<double>(cycle.pod().requests.cpu_milli);
      stranded = std::max(0.0, static_cast<double>(free_after) - cpu_after / r) -
                 std::max(0.0, static_cast<double>(free_before) - cpu_free / r);
    }
    const double emptiness = node.gpu_capacity_milli > 0
                                 ? static_cast<double>(free_after) / node.gpu_capacity_milli
                                 : 0.0;
    // value: minus (fragmentation added + capacity stranded); AdjustScores takes the demand
    // crowded out. pack: minus how empty the node is left, in [-kPackRange, 0]. Higher is better
    // for both.
    const double value = -added - kStrandedWeight * stranded;
    const double pack = -emptiness - whole_free * kPerWholeCard;
    const int64_t p = RoundHalfAway((1.0 + pack / kPackRange) * (kPackLevels - 1));
    return Pack(value, std::clamp<int64_t>(p, 0, kPackLevels - 1));
  }

  void AdjustScores(const CycleState& cycle, const ClusterState& s,
                    std::span<const Candidate> candidates, std::span<int64_t> scores) override {
    if (contention_.empty()) return;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      double crowded = 0;
      const NodeUsage& usage = s.usage(c.node);
      for (const DevicePick& pick : c.devices()) {
        const int64_t milli =
            c.kind == DeviceKind::kWhole ? kMilliPerGpu : PickMilli(s, cycle.pod(), c, pick);
        crowded += static_cast<double>(milli) * contention_[usage.gpus[pick.gpu].model];
      }
      const int64_t value = scores[i] >> kPackBits;  // arithmetic shift (C++20)
      scores[i] = Pack(static_cast<double>(value) / kValueScale - kContention * crowded,
                       scores[i] & (kPackLevels - 1));
    }
  }

  void NormalizeScores(std::span<int64_t> scores) const override {
    auto value = [](int64_t raw) { return raw >> kPackBits; };
    int64_t best = std::numeric_limits<int64_t>::min();
    int64_t worst = std::numeric_limits<int64_t>::max();
    for (int64_t raw : scores) {
      best = std::max(best, value(raw));
      worst = std::min(worst, value(raw));
    }
    const int64_t cut = best - std::llround(tolerance_ * kValueScale);
    constexpr int64_t kHalf = kMaxNodeScore / 2;
    for (int64_t& raw : scores) {
      const int64_t v = value(raw);
      if (v >= cut) {
        // Within the tolerance: the packing measure, onto the upper half.
        raw = kHalf + (raw & (kPackLevels - 1)) * (kHalf - 1) / (kPackLevels - 1);
      } else {
        raw = static_cast<int64_t>(static_cast<double>(v - worst) /
                                   static_cast<double>(std::max<int64_t>(1, cut - worst)) *
                                   (kHalf - 1));
      }
    }
  }

 private:
  // A raw score: `value` (milli-GPUs) in the high bits, `pack` (in [0, kPackLevels)) below.
  static int64_t Pack(double value, int64_t pack) {
    const double x = std::clamp(value * kValueScale, -static_cast<double>(kValueLimit),
                                static_cast<double>(kValueLimit));
    return RoundHalfAway(x) * kPackLevels + pack;
  }
  // std::llround without the library call (x is within +-2^40 here).
  static int64_t RoundHalfAway(double x) { return static_cast<int64_t>(x < 0 ? x - 0.5 : x + 0.5); }

  // Which task types accept each of the cluster's models, grouped; rebuilt when the node set or
  // the workload changes.
  void IndexModels(const ClusterState& s) {
    if (indexed_ && indexed_shape_ == s.shape_version() &&
        indexed_generation_ == workload_.generation()) {
      return;
    }
    const std::span<const std::string> models = s.models();
    num_models_ = models.size();
    free_.clear();
    card_free_.assign(s.size(), {});
    seen_version_.assign(s.size(), std::numeric_limits<uint64_t>::max());
    // Task types that accept the same models are one group: their demand over that capacity.
    const std::span<const TaskType> types = workload_.memo().types();
    const auto total_weight =
        static_cast<double>(std::max<int64_t>(1, workload_.memo().total_weight()));
    group_accepts_.clear();
    group_demand_.clear();
    std::vector<bool> accepts(num_models_);
    for (const TaskType& t : types) {
      if (t.num_gpu == 0 || t.gpu_milli == 0) continue;
      for (size_t m = 0; m < num_models_; ++m) accepts[m] = ModelOk(t, &models[m]);
      size_t g = 0;
      while (g < group_demand_.size() &&
             !std::equal(accepts.begin(), accepts.end(),
                         group_accepts_.begin() + static_cast<std::ptrdiff_t>(g * num_models_))) {
        ++g;
      }
      if (g == group_demand_.size()) {
        group_accepts_.insert(group_accepts_.end(), accepts.begin(), accepts.end());
        group_demand_.push_back(0);
      }
      group_demand_[g] += static_cast<double>(t.weight) / total_weight * t.num_gpu * t.gpu_milli;
    }
    indexed_ = true;
    indexed_shape_ = s.shape_version();
    indexed_generation_ = workload_.generation();
    seen_usage_ = kNever;
  }

  // Free capacity per model (kept up to date from the nodes whose version changed) and, from
  // it, each model's contention.
  void MeasureContention(const ClusterState& s) {
    IndexModels(s);
    const size_t models = num_models_;
    free_.resize(models, 0);
    if (s.last_usage_version() != seen_usage_) {
      if (seen_usage_ != kNever && s.previous_usage_version() == seen_usage_) {
        CountFree(s, s.last_changed_node().value());  // one node changed since the last cycle
      } else {
        for (uint32_t i = 0; i < s.size(); ++i) CountFree(s, i);
      }
      seen_usage_ = s.last_usage_version();
    }
    contention_.assign(models, 0.0);
    for (size_t g = 0; g < group_demand_.size(); ++g) {
      const auto accepts = group_accepts_.begin() + static_cast<std::ptrdiff_t>(g * models);
      double usable = 0;
      for (size_t m = 0; m < models; ++m) {
        if (accepts[m]) usable += static_cast<double>(free_[m]);
      }
      if (usable <= 0) continue;
      const double pressure = group_demand_[g] / usable;
      for (size_t m = 0; m < models; ++m) {
        if (accepts[m]) contention_[m] += pressure;
      }
    }
  }

  // Brings node i's cards into free_ when its usage changed since they were counted.
  void CountFree(const ClusterState& s, uint32_t i) {
    const NodeUsage& usage = s.usage(NodeId(i));
    if (usage.version == seen_version_[i]) return;
    seen_version_[i] = usage.version;
    for (size_t g = 0; g < usage.gpus.size(); ++g) {
      const GpuUsage& c = usage.gpus[g];
      const bool counts =
          c.healthy && c.mode != SharingMode::kMig && c.mode != SharingMode::kTimeSlice;
      const auto now = static_cast<int32_t>(counts ? c.free_milli : 0);
      free_[c.model] += now - card_free_[i][g];
      card_free_[i][g] = now;
    }
  }

  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  FragmentationWorkload workload_;
  FragmentationDelta delta_;
  double tolerance_ = 0;
  // Contention, for workloads that pin models (see IndexModels and MeasureContention).
  bool indexed_ = false;
  uint64_t indexed_shape_ = 0;
  uint64_t indexed_generation_ = 0;
  size_t num_models_ = 0;  // the cluster's models (ClusterState::models)
  std::vector<std::array<int32_t, kMaxGpusPerNode>> card_free_;  // counted in free_
  std::vector<uint64_t> seen_version_;  // per node: the version card_free_ was read at
  uint64_t seen_usage_ = kNever;        // the state's last_usage_version() free_ reflects
  std::vector<bool> group_accepts_;     // group of task types x model
  std::vector<double> group_demand_;    // per group: sum of popularity x GPU demand
  std::vector<int64_t> free_;           // per model
  std::vector<double> contention_;
};

}  // namespace

std::unique_ptr<ScorePlugin> MakeFragPackScore(std::vector<TaskType> workload) {
  return std::make_unique<FragPack>(std::move(workload));
}

std::unique_ptr<ScorePlugin> MakeFgdScore(std::vector<TaskType> workload) {
  return std::make_unique<Fgd>(std::move(workload));
}

}  // namespace tessera::core
