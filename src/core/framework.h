// The placement framework, modelled on the Kubernetes scheduling framework: small plugin
// interfaces per extension point (pre-filter, filter, score + normalize, reserve/unreserve),
// run over a ClusterState snapshot once per placement cycle.
//
// Unlike kube-scheduler, a node is not scored alone: the device step proposes candidate device
// sets on each feasible node (which GPUs, which MIG instance, which share), and score plugins
// score each candidate, so the chosen placement names the exact devices.
#ifndef TESSERA_CORE_FRAMEWORK_H_
#define TESSERA_CORE_FRAMEWORK_H_

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster_state.h"
#include "core/pod.h"
#include "core/status.h"

namespace tessera::core {

// Scores that plugins return without normalization lie in [0, kMaxNodeScore].
inline constexpr int64_t kMaxNodeScore = 1'000'000;

// One device of a candidate: a GPU position plus the MIG instance (kMig) or the number of
// replicas (kReplica / time-sliced kWhole) taken on it.
struct DevicePick {
  uint8_t gpu = 0;
  uint8_t mig_instance = 0;
  uint16_t replicas = 0;
};

// A way to satisfy a pod's GPU request on one node.
struct Candidate {
  NodeId node;
  DeviceKind kind = DeviceKind::kWhole;
  uint8_t n = 0;
  std::array<DevicePick, kMaxGpusPerNode> picks;

  std::span<const DevicePick> devices() const { return {picks.data(), n}; }
};

// Members of a gang already placed in this gang-placement attempt.
struct GangContext {
  std::vector<NodeId> nodes;  // one entry per placed member
};

// Per-cycle scratch shared by the plugins of one placement attempt.
class CycleState {
 public:
  CycleState(const PodSpec& pod, uint64_t seed, uint64_t sequence, const GangContext* gang)
      : pod_(pod), seed_(seed), sequence_(sequence), gang_(gang) {}

  const PodSpec& pod() const { return pod_; }
  uint64_t seed() const { return seed_; }
  // Ordinal of this placement attempt within its Scheduler; feeds seeded randomness.
  uint64_t sequence() const { return sequence_; }
  const GangContext* gang() const { return gang_; }

  // Stores a reason string for the rest of the cycle and returns a view of it.
  std::string_view Keep(std::string s) { return kept_.emplace_back(std::move(s)); }

 private:
  const PodSpec& pod_;
  uint64_t seed_;
  uint64_t sequence_;
  const GangContext* gang_;
  std::deque<std::string> kept_;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};

// Runs once per cycle before any node is looked at. A non-OK Status makes the pod unschedulable
// with that message (e.g. a MIG profile no GPU in the catalog offers).
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status PreFilter(CycleState& cycle, const ClusterState& state) = 0;
};

// Rejects nodes. Returns an empty view when the node passes, else the reason
// ("untolerated taint {gpu: }"), which must outlive the cycle (a literal or CycleState::Keep).
class FilterPlugin : public virtual Plugin {
 public:
  virtual std::string_view Filter(CycleState& cycle, const ClusterState& state, NodeId node) = 0;
  // True when the verdict depends only on the node's class (labels and taints); the framework
  // then evaluates it once per class per cycle.
  virtual bool ClassScoped() const { return false; }
  // True when the verdict depends only on the pod's PlacementSignature and the node (its record,
  // class and usage), so it may be reused for pods of one signature while the node's version
  // (NodeUsage::version) stays the same.
  virtual bool NodeLocal() const { return false; }
};

// Scores a candidate; higher is better. Without normalization a score lies in
// [0, kMaxNodeScore]; a plugin whose raw scores have another range normalizes them.
class ScorePlugin : public virtual Plugin {
 public:
  virtual int64_t Score(const CycleState& cycle, const ClusterState& state,
                        const Candidate& candidate) = 0;
  virtual bool Normalizes() const { return false; }
  // True when the plugin has nothing to say about this pod (kube's PreScore "Skip"): it is not
  // run this cycle, which scores every candidate alike.
  virtual bool Skip(const CycleState& cycle, const ClusterState& state) const { return false; }
  // Adjusts the raw scores of all candidates of the cycle (computed and reused alike) by what
  // depends on the whole cluster, before NormalizeScores; what Score returns can then stay
  // node-local. Default: no adjustment.
  virtual void AdjustScores(const CycleState& cycle, const ClusterState& state,
                            std::span<const Candidate> candidates, std::span<int64_t> scores) {}
  // Maps raw scores of all candidates of the cycle into [0, kMaxNodeScore].
  virtual void NormalizeScores(std::span<int64_t> scores) const;
  // True when, this cycle, a candidate's raw score depends only on the pod's PlacementSignature,
  // the candidate, its node (record, class and usage), the cluster-wide values that
  // ClusterState::shape_version covers and Generation(); and Skip only on the first and the last
  // two. The scheduler then reuses raw scores across cycles for pods of one signature on nodes
  // whose version has not changed.
  virtual bool NodeLocal(const CycleState& cycle) const { return false; }
  // Changes whenever the plugin's own scoring changes between cycles (e.g. a learned workload is
  // rebuilt), so that raw scores of an earlier generation are not reused.
  virtual uint64_t Generation() const { return 0; }
};

// Told when a placement is committed to, or rolled back from, the state.
class ReservePlugin : public virtual Plugin {
 public:
  virtual void Reserve(const PodSpec& pod, const ClusterState& state, const Placement& p) = 0;
  virtual void Unreserve(const PodSpec& pod, const ClusterState& state, const Placement& p) = 0;
};

// Min-max normalization into [0, kMaxNodeScore]; all equal scores map to kMaxNodeScore.
void MinMaxNormalize(std::span<int64_t> scores);

}  // namespace tessera::core

#endif  // TESSERA_CORE_FRAMEWORK_H_
