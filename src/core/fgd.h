// Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation", USENIX ATC'23).
//
// The fragmentation of a node, as seen by a task type t, is the free GPU capacity (milli-GPUs)
// that t cannot use there: all of it when t cannot run on the node at all (no GPU demand, CPU
// short, no eligible card, model not accepted), else the free capacity of the cards that cannot
// host t. The node's fragmentation for a workload is the popularity-weighted sum over task
// types. FGD places a pod where (node and cards) this sum grows the least.
#ifndef TESSERA_CORE_FGD_H_
#define TESSERA_CORE_FGD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/cluster_state.h"
#include "core/framework.h"

namespace tessera::core {

// One kind of task in the target workload, with its popularity.
struct TaskType {
  int64_t cpu_milli = 0;
  int32_t num_gpu = 0;              // cards (1 for a share)
  int32_t gpu_milli = 0;            // per card: < 1000 a share, 1000 whole cards, 0 no GPU
  std::vector<std::string> models;  // accepted models; empty: any
  int64_t weight = 1;               // popularity (e.g. number of pods of this type)
};

// Free GPU state of one node, as FGD sees it.
struct FragNode {
  int64_t cpu_free = 0;
  int n = 0;
  std::array<int64_t, kMaxGpusPerNode> free{};       // free milli per card
  std::array<uint8_t, kMaxGpusPerNode> shareable{};  // card takes fractional shares
  std::array<uint8_t, kMaxGpusPerNode> wholeable{};  // card can be held whole
  std::array<const std::string*, kMaxGpusPerNode> model{};
};

FragNode MakeFragNode(const ClusterState& state, NodeId id);

// Fragmentation of `node` for one task type, in milli-GPUs.
int64_t TaskFragmentation(const FragNode& node, const TaskType& t);
// Popularity-weighted fragmentation over `types` (milli-GPU x weight).
int64_t NodeFragmentation(const FragNode& node, std::span<const TaskType> types);

// NodeFragmentation for one fixed workload, memoized on the node's canonical state (CPU reduced to
// which task types it admits, cards sorted), so nodes in equal states are computed once.
class FragmentationMemo {
 public:
  // The canonical state of a node: equal keys have equal fragmentation for every task type.
  struct Key {
    std::array<uint32_t, kMaxGpusPerNode> cards{};  // free milli, flags and model, sorted
    uint32_t cpu_level = 0;                         // how many task CPU demands fit
    uint32_t n = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };

  explicit FragmentationMemo(std::vector<TaskType> types);
  // One card of `node` in key form.
  uint32_t PackCard(const FragNode& node, int g) {
    const uint32_t model = models_matter_ ? ModelId(node.model[g]) : 0;
    return PackCard(node, g, model << 13);
  }
  // The same, with the card's model part (ModelBits) known.
  static uint32_t PackCard(const FragNode& node, int g, uint32_t model_bits) {
    return static_cast<uint32_t>(node.free[g]) | uint32_t{node.shareable[g]} << 11 |
           uint32_t{node.wholeable[g]} << 12 | model_bits;
  }
  // The model part of a card's key for each of `s`'s models (indexed by GpuUsage::model): looked
  // up once until the cluster's nodes change.
  std::span<const uint32_t> ModelBits(const ClusterState& s);
  // The key of a node with these packed cards (any order) and free CPU.
  Key KeyOf(std::span<const uint32_t> cards, int64_t cpu_free) const;
  Key MakeKey(const FragNode& node);
  // The memoized value for `key`, or nullptr.
  const int64_t* Find(const Key& key) const;
  // Computes NodeFragmentation(node, <the workload>) and stores it under `key` = MakeKey(node).
  int64_t Insert(const Key& key, const FragNode& node);
  int64_t Get(const Key& key, const FragNode& node) {
    const int64_t* v = Find(key);
    return v ? *v : Insert(key, node);
  }
  int64_t Get(const FragNode& node) { return Get(MakeKey(node), node); }
  std::span<const TaskType> types() const { return types_; }
  // Sum of the types' weights.
  int64_t total_weight() const { return total_weight_; }
  // True when some type accepts only certain GPU models.
  bool models_matter() const { return models_matter_; }
  // Millicores the workload asks per milli-GPU it asks (CPU-only types' CPU included); 0 when it
  // asks no GPU.
  double cpu_per_gpu_milli() const { return cpu_per_gpu_milli_; }

 private:
  struct Slot {
    Key key;
    int64_t value = 0;
    bool used = false;
  };
  static uint64_t Hash(const Key& k);
  uint32_t ModelId(const std::string* model);
  void Grow();

  std::vector<TaskType> types_;
  std::vector<int64_t> cpu_levels_;  // distinct task CPU demands, ascending
  int64_t total_weight_ = 0;
  bool models_matter_ = false;
  double cpu_per_gpu_milli_ = 0;
  std::vector<std::string> models_;
  // ModelBits' answer for the cluster shape model_bits_shape_.
  uint64_t model_bits_shape_ = 0;
  std::vector<uint32_t> model_bits_;
  std::vector<Slot> slots_;  // open addressing, linear probing, at most half full
  size_t used_ = 0;
};

// Counts pods by task type (CPU, GPU count, GPU share, accepted models).
class TaskTypeCounter {
 public:
  // Counts `pod`'s type; true when the type is new.
  bool Add(const PodSpec& pod);
  // One type per distinct shape counted, weighted by its count, in a fixed (key) order.
  std::vector<TaskType> Types() const;

 private:
  using Key = std::tuple<int64_t, int32_t, int32_t, std::vector<std::string>>;
  std::map<Key, int64_t> counts_;
};

// Builds the workload FGD aims at from observed pod shapes: the most popular types covering
// `coverage_percent` of the weight.
std::vector<TaskType> TypicalTaskTypes(std::vector<TaskType> observed, int coverage_percent);
// The FGD paper's coverage of its typical pods (podPopularityThreshold).
inline constexpr int kTypicalCoveragePercent = 95;

// The workload a fragmentation-aware plugin aims at: fixed, or learned from the pods it is asked
// to place (each placement attempt counts its pod's shape once; the typical types cover
// kTypicalCoveragePercent of the attempts and are rebuilt when a new shape appears or the count
// doubles).
class FragmentationWorkload {
 public:
  explicit FragmentationWorkload(std::vector<TaskType> fixed);
  // Counts `pod`'s shape when the workload is learned; no-op when it is fixed.
  void Observe(const PodSpec& pod);
  FragmentationMemo& memo() { return memo_; }
  const FragmentationMemo& memo() const { return memo_; }
  // Changes whenever the workload (and with it every node's fragmentation) is rebuilt.
  uint64_t generation() const { return generation_; }

 private:
  bool fixed_;
  FragmentationMemo memo_;
  TaskTypeCounter observed_;
  int64_t observations_ = 0;
  int64_t next_rebuild_ = 0;
  uint64_t generation_ = 0;
};

// The fragmentation a candidate adds to its node (after minus before, milli-GPU x weight), with
// the node's own state cached across the candidates of one cycle on that node.
class FragmentationDelta {
 public:
  // Milli-GPUs the candidate takes on each card of its node.
  using Take = std::array<int64_t, kMaxGpusPerNode>;
  static Take TakeOf(const CycleState& cycle, const ClusterState& state, const Candidate& c);

  // Forgets the cached node; call at the start of every cycle.
  void Reset() { cached_node_ = NodeId(); }
  // `take` is TakeOf(cycle, state, c).
  int64_t Added(const CycleState& cycle, const ClusterState& state, const Candidate& c,
                const Take& take, FragmentationMemo& memo);

 private:
  NodeId cached_node_;
  FragNode before_node_;
  std::array<uint32_t, kMaxGpusPerNode> before_cards_{};
  int64_t before_ = 0;
};

// The FGD score plugin. With a fixed workload it uses it; without one it learns the workload
// from the pods it is asked to place (each placement attempt counts its pod's shape once).
std::unique_ptr<ScorePlugin> MakeFgdScore(std::vector<TaskType> workload);

// Fragmentation-aware packing, Tessera's policy for GPU-sharing clusters: FGD's fragmentation
// growth, plus the GPU capacity a placement leaves without the CPU to use it and (where the
// workload pins GPU models) the demand it crowds out of a scarce model, with candidates within a
// small tolerance of the best treated alike and the fullest node among them chosen. Workload as
// for MakeFgdScore.
std::unique_ptr<ScorePlugin> MakeFragPackScore(std::vector<TaskType> workload);

// The task type a pod belongs to.
TaskType TaskTypeOf(const PodSpec& pod);

}  // namespace tessera::core

#endif  // TESSERA_CORE_FGD_H_
