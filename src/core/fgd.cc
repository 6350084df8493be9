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
  f.cpu_free = n.allocatable.cpu_milli - state.usage(id).used.cpu_milli;
  f.n = static_cast<int>(n.gpus.size());
  for (int g = 0; g < f.n; ++g) {
    const GpuDevice& d = n.gpus[g];
    f.free[g] = state.GpuFreeMilli(id, g);
    const bool healthy = d.health == GpuHealth::kHealthy;
    f.shareable[g] = healthy && d.sharing.mode == SharingMode::kShared;
    f.wholeable[g] = healthy && (d.sharing.mode == SharingMode::kShared ||
                                 d.sharing.mode == SharingMode::kExclusive);
    f.model[g] = &d.model;
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
      : fixed_(!workload.empty()), types_(std::move(workload)) {}

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
      types_ = TypicalTaskTypes(std::move(all), 95);
      next_rebuild_ = observations_ * 2;
    }
    return Status::Ok();
  }

  int64_t Score(const CycleState& cycle, const ClusterState& s, const Candidate& c) override {
    if (cached_node_ != c.node) {
      cached_node_ = c.node;
      before_node_ = MakeFragNode(s, c.node);
      before_ = NodeFragmentation(before_node_, types_);
    }
    FragNode after = before_node_;
    after.cpu_free -= cycle.pod().requests.cpu_milli;
    for (const DevicePick& p : c.devices()) {
      after.free[p.gpu] = std::max<int64_t>(0, after.free[p.gpu] - PickMilli(s, cycle.pod(), c, p));
    }
    return before_ - NodeFragmentation(after, types_);  // higher: less fragmentation added
  }

 private:
  bool fixed_;
  std::vector<TaskType> types_;
  std::map<TypeKey, int64_t> observed_;
  int64_t observations_ = 0;
  int64_t next_rebuild_ = 0;
  NodeId cached_node_;
  FragNode before_node_;
  int64_t before_ = 0;
};

}  // namespace

std::unique_ptr<ScorePlugin> MakeFgdScore(std::vector<TaskType> workload) {
  return std::make_unique<Fgd>(std::move(workload));
}

}  // namespace tessera::core
