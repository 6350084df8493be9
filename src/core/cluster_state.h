// The allocation state of a cluster: node definitions plus what is held on each node and GPU.
// A ClusterState is a plain value: copy it to take a snapshot for a scheduling cycle.
#ifndef TESSERA_CORE_CLUSTER_STATE_H_
#define TESSERA_CORE_CLUSTER_STATE_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/ids.h"
#include "core/mig.h"
#include "core/node.h"
#include "core/resources.h"
#include "core/status.h"

namespace tessera::core {

// What is held on one GPU, next to copies of the card's static facts that the placement scan
// needs, so that scanning a node reads this small contiguous array and not its GpuDevice records.
// The label every Kubernetes node carries with its own name.
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

struct GpuUsage {
  int64_t memory_mib = 0;  // memory held
  int32_t milli = 0;       // compute milli-GPUs held (a whole card holds 1000)
  uint16_t replicas = 0;   // time-slice replicas held
  uint16_t mig_used = 0;   // bit i: MIG instance i of the card's layout is held
  uint16_t holders = 0;    // number of assignments on the card
  // Maintained by ClusterState; never set by callers.
  int16_t free_milli = 0;                      // ClusterState::GpuFreeMilli of the card
  SharingMode mode = SharingMode::kExclusive;  // the card's sharing mode
  bool healthy = true;                         // the card's health is kHealthy
  uint16_t model = 0;                          // the card's model: ClusterState::models()[model]
  int32_t capacity_mib = 0;                    // the card's memory
  int16_t numa_node = -1;                      // the card's NUMA node
  int16_t nvlink_domain = -1;                  // the card's NVLink domain
};

struct NodeUsage {
  Resources used;
  std::vector<GpuUsage> gpus;  // parallel to NodeRecord::gpus
  int32_t pods = 0;
  int64_t gpu_free_milli = 0;  // sum of ClusterState::GpuFreeMilli over the node's GPUs
  NodeClassId cls;             // copy of NodeRecord::cls, for the scan
  // The models of the node's cards (GpuUsage::model) as bits (bit 63 for every model past the
  // 63rd), for the scan to pass over nodes without a model a pod accepts.
  uint64_t model_mask = 0;
  // For the scan to pass over nodes that cannot hold a request: the most compute (milli-GPUs)
  // free on one healthy shared card, and the healthy exclusive or shared cards nobody holds.
  int16_t max_share_milli = 0;
  uint8_t unheld_cards = 0;
  // Changes with every change to the node (its record or its usage) and is unique across the
  // process: two nodes with one version are in the same state, whichever ClusterState copy holds
  // them. Lets schedulers reuse per-node results across cycles.
  uint64_t version = 0;
};

enum class DeviceKind : uint8_t { kWhole, kShare, kMigInstance, kReplica };

std::string_view DeviceKindName(DeviceKind k);

// One device held by a placement.
struct DeviceAssignment {
  uint8_t gpu = 0;  // position in NodeSpec::gpus
  DeviceKind kind = DeviceKind::kWhole;
  int32_t milli = 0;         // kWhole: 1000; kShare: compute share
  int64_t memory_mib = 0;    // kWhole: card memory; kShare: memory share; kMig: instance memory
  uint8_t mig_instance = 0;  // kMigInstance: index into the card's layout
  uint16_t replicas = 0;     // kReplica: replicas held on this card
  friend bool operator==(const DeviceAssignment&, const DeviceAssignment&) = default;
};

// Where a pod runs and exactly which devices it holds.
struct Placement {
  NodeId node;
  Resources resources;  // CPU and memory held on the node
  std::vector<DeviceAssignment> devices;
  friend bool operator==(const Placement&, const Placement&) = default;
};

// A node as the state keeps it: the spec minus labels and taints, which live in the node's
// interned class (nodes of one pool share one copy).
struct NodeRecord {
  std::string name;
  bool unschedulable = false;
  Resources allocatable;
  std::vector<GpuDevice> gpus;  // ordered by index
  NodeClassId cls;
  int64_t gpu_capacity_milli = 0;  // GPU capacity in milli-GPUs (1000 per card)
  uint8_t sharing_modes = 0;       // bit (1 << SharingMode): some card has that mode
};

class ClusterState {
 public:
  // Adds a node; its name must be unique. GPUs are ordered by index.
  Result<NodeId> AddNode(NodeSpec spec);

  size_t size() const { return topo_->nodes.size(); }
  const NodeRecord& node(NodeId id) const { return topo_->nodes[id.value()]; }
  const NodeUsage& usage(NodeId id) const { return usage_[id.value()]; }
  const Labels& labels(NodeId id) const { return class_labels(node(id).cls); }
  const std::vector<Taint>& taints(NodeId id) const { return class_taints(node(id).cls); }
  Result<NodeId> FindNode(std::string_view name) const;
  // The node's full definition, labels and taints included.
  NodeSpec ExportSpec(NodeId id) const;

  // Interned label/taint sets: nodes with identical labels and taints share a class.
  size_t num_classes() const { return topo_->class_labels.size(); }
  // The class's pool: classes equal but for the kubernetes.io/hostname label (which every node
  // of a Kubernetes cluster has, its own name) share one. Nodes of one pool differ only to pods
  // that name the label.
  uint32_t class_pool(NodeClassId c) const { return topo_->class_pool[c.value()]; }
  const Labels& class_labels(NodeClassId c) const { return topo_->class_labels[c.value()]; }
  const std::vector<Taint>& class_taints(NodeClassId c) const {
    return topo_->class_taints[c.value()];
  }

  // Cordon / uncordon.
  Status SetUnschedulable(NodeId id, bool unschedulable);
  // Marks a GPU (by position) healthy or not; an unhealthy GPU receives no new work.
  Status SetGpuHealth(NodeId id, int gpu, GpuHealth health);
  Status SetLabels(NodeId id, Labels labels);
  Status SetTaints(NodeId id, std::vector<Taint> taints);

  // Checks that `p` fits in what is free and records it as held. Nothing changes on error.
  // Capacity is all it checks: cordons and GPU health are the scheduler's filters, so running
  // work can be restored onto a cordoned node or an unhealthy GPU.
  Status Allocate(const Placement& p);
  // Returns what `p` held. `p` must have been allocated.
  Status Release(const Placement& p);

  // Milli-GPUs of one GPU that are held (0..1000), whatever its sharing mode: the larger of the
  // compute and memory fractions for a shared card, replicas/total for time-slicing, instance
  // sizes for MIG, all-or-nothing for an exclusive card.
  int64_t GpuTakenMilli(NodeId id, int gpu) const;
  // Milli-GPUs still usable by new work: 0 on an unhealthy GPU.
  int64_t GpuFreeMilli(NodeId id, int gpu) const;
  // GPU equivalents one device of a placement on node `id` takes, in milli-GPUs: 1000 for a
  // whole card, the larger of the compute and memory fractions for a share, the slice fraction
  // for a MIG instance, replicas over the card's replicas for time-slicing.
  int64_t DeviceGpuMilli(NodeId id, const DeviceAssignment& d) const;

  // Cluster totals, kept incrementally.
  int64_t total_gpu_milli() const { return total_gpu_milli_; }
  int64_t allocated_gpu_milli() const { return allocated_gpu_milli_; }
  // False only when no node has a PreferNoSchedule taint (never reset once a node had one).
  bool any_prefer_no_schedule() const { return any_prefer_no_schedule_; }
  // Largest node CPU and GPU capacity (normalizers for best-fit style scores).
  int64_t max_node_cpu_milli() const { return max_node_cpu_milli_; }
  int64_t max_node_gpu_milli() const { return max_node_gpu_milli_; }
  // The GPU models of the cluster's cards, each once, in the order nodes brought them.
  std::span<const std::string> models() const { return topo_->models; }
  // The bits of NodeUsage::model_mask a pod accepting `accepted` models (empty: any) may use.
  uint64_t AcceptedModelMask(std::span<const std::string> accepted) const;
  // Changes, uniquely across the process, whenever the node set, a node's record or label/taint
  // class, or one of the cluster-wide values above (other than the totals) changes.
  uint64_t shape_version() const { return shape_version_; }
  // Every change to a node's usage record gives it a new version, unique across the process
  // (NodeUsage::version). The latest such version in this state, the one before it, and the node
  // of the latest: a reader that saw this state at previous_usage_version() knows that only
  // last_changed_node() has changed since (0 and no node before any change).
  uint64_t last_usage_version() const { return last_usage_version_; }
  uint64_t previous_usage_version() const { return previous_usage_version_; }
  NodeId last_changed_node() const { return last_changed_node_; }
  // The same for a reader that saw this state's history at any recent usage version: true when
  // the state's log of recent changes reaches back to `version` (a usage version of this state
  // or of the copy it was taken from), with the nodes changed since appended to `nodes` (a node
  // once per change, oldest first); false when it does not, and the reader must compare every
  // node's version. A record or class change (shape_version) is not in the log.
  bool ChangedSince(uint64_t version, std::vector<NodeId>& nodes) const;

 private:
  // Gives node `id`'s usage record a new version and records it as the latest change.
  void Touch(NodeId id);
  NodeClassId InternClass(const Labels& labels, const std::vector<Taint>& taints);
  Status CheckFits(const NodeRecord& node, const NodeUsage& usage, const Placement& p) const;
  void Apply(NodeId id, const Placement& p, int sign);
  void RefreshFree(NodeId id);

  // What changes rarely (node records, names, label/taint classes): shared by copies of the
  // state (a scheduling cycle's working copy, a simulation's run) and copied on the first change
  // made through one of them.
  struct Topology {
    std::vector<NodeRecord> nodes;
    std::unordered_map<std::string, NodeId> by_name;
    std::vector<Labels> class_labels;
    std::vector<std::vector<Taint>> class_taints;
    std::map<std::string, NodeClassId> class_index;
    std::vector<uint32_t> class_pool;  // per class
    std::map<std::string, uint32_t> pool_index;
    std::vector<std::string> models;
  };
  Topology& MutableTopology();

  std::shared_ptr<Topology> topo_ = std::make_shared<Topology>();
  std::vector<NodeUsage> usage_;
  int64_t total_gpu_milli_ = 0;
  int64_t allocated_gpu_milli_ = 0;
  int64_t max_node_cpu_milli_ = 0;
  int64_t max_node_gpu_milli_ = 0;
  bool any_prefer_no_schedule_ = false;
  uint64_t shape_version_ = 0;
  uint64_t last_usage_version_ = 0;
  uint64_t previous_usage_version_ = 0;
  NodeId last_changed_node_;
  // The latest usage changes, a ring: log_size_ entries ending before log_head_; log_floor_ is
  // the usage version before the oldest of them.
  struct Change {
    uint64_t version = 0;
    NodeId node;
  };
  static constexpr size_t kChangeLog = 32;
  std::array<Change, kChangeLog> log_{};
  size_t log_head_ = 0;
  size_t log_size_ = 0;
  uint64_t log_floor_ = 0;
};

// Free GPU capacity, and how much of it is fragmented: free milli-GPUs on GPUs that are partly
// taken, which work needing a whole card cannot use.
struct GpuFragmentation {
  int64_t free_milli = 0;
  int64_t fragmented_milli = 0;
  // fragmented / free (0 when nothing is free).
  double ratio() const {
    return free_milli > 0 ? static_cast<double>(fragmented_milli) / free_milli : 0;
  }
};
GpuFragmentation FragmentationOf(const ClusterState& state);

}  // namespace tessera::core

#endif  // TESSERA_CORE_CLUSTER_STATE_H_
