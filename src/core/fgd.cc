#include "core/fgd.h"

#include <algorithm>

#include "core/devices.h"

namespace tessera::core {

namespace {

bool ModelOk(const TaskType& t, const std::string* model) {
  if (t.models.empty()) return true;
  return model != nullptr && std::find(t.models.begin(), t.models.end(), *model) != t.models.end();
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
  for (const TaskType& t : types_) {
    cpu_levels_.push_back(t.cpu_milli);
    models_matter_ |= !t.models.empty();
  }
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
    if (models_[i] == *model) return static_cast<uint32_t>(i + 1);
  }
  models_.push_back(*model);
  return static_cast<uint32_t>(models_.size());
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

namespace {

using TypeKey = std::tuple<int64_t, int32_t, int32_t, std::vector<std::string>>;

class Fgd final : public ScorePlugin, public PreFilterPlugin {
 public:
  explicit Fgd(std::vector<TaskType> workload)
      : fixed_(!workload.empty()), memo_(std::move(workload)) {}

  std::string_view Name() const override { return "FGD"; }
  bool Normalizes() const override { return true; }

  Status PreFilter(CycleState& cycle, const ClusterState&) override {
    cached_node_ = NodeId();
    if (fixed_) return Status::Ok();
    TaskType t = TaskTypeOf(cycle.pod());
    TypeKey key{t.cpu_milli, t.num_gpu, t.gpu_milli, t.models};
    auto [it, inserted] = observed_.try_emplace(std::move(key), 0);
    ++it->second;
    ++observations_;
    // Rebuild the typical types when a new shape appears or the count doubles.
    if (inserted || observations_ >= next_rebuild_) {
      std::vector<TaskType> all;
      all.reserve(observed_.size());
      for (const auto& [k, w] : observed_) {
        all.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), w});
      }
      memo_ = FragmentationMemo(TypicalTaskTypes(std::move(all), 95));
      next_rebuild_ = observations_ * 2;
    }
    return Status::Ok();
  }

  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    if (cached_node_ != c.node) {
      cached_node_ = c.node;
      before_node_ = MakeFragNode(s, c.node);
      for (int g = 0; g < before_node_.n; ++g) before_cards_[g] = memo_.PackCard(before_node_, g);
      const FragmentationMemo::Key key = memo_.KeyOf(
          {before_cards_.data(), static_cast<size_t>(before_node_.n)}, before_node_.cpu_free);
      before_ = memo_.Get(key, before_node_);
    }
    // The state after placing: less CPU, less free on the picked cards.
    std::array<int64_t, kMaxGpusPerNode> take{};
    for (const DevicePick& p : c.devices()) take[p.gpu] += PickMilli(s, cycle.pod(), c, p);
    auto free_after = [&](int g) { return std::max<int64_t>(0, before_node_.free[g] - take[g]); };
    std::array<uint32_t, kMaxGpusPerNode> cards = before_cards_;
    for (const DevicePick& p : c.devices()) {
      cards[p.gpu] = (cards[p.gpu] & ~uint32_t{0x7ff}) | static_cast<uint32_t>(free_after(p.gpu));
    }
    const int64_t cpu_free = before_node_.cpu_free - cycle.pod().requests.cpu_milli;
    const FragmentationMemo::Key key =
        memo_.KeyOf({cards.data(), static_cast<size_t>(before_node_.n)}, cpu_free);
    int64_t after;
    if (const int64_t* v = memo_.Find(key)) {
      after = *v;
    } else {
      FragNode node = before_node_;
      node.cpu_free = cpu_free;
      for (const DevicePick& p : c.devices()) node.free[p.gpu] = free_after(p.gpu);
      after = memo_.Insert(key, node);
    }
    return before_ - after;  // higher: less fragmentation added
  }

 private:
  bool fixed_;
  FragmentationMemo memo_;
  std::map<TypeKey, int64_t> observed_;
  int64_t observations_ = 0;
  int64_t next_rebuild_ = 0;
  NodeId cached_node_;
  FragNode before_node_;
  std::array<uint32_t, kMaxGpusPerNode> before_cards_{};
  int64_t before_ = 0;
};

}  // namespace

std::unique_ptr<ScorePlugin> MakeFgdScore(std::vector<TaskType> workload) {
  return std::make_unique<Fgd>(std::move(workload));
}

}  // namespace tessera::core
