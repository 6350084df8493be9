// The scheduler: a profile of plugins chosen by policy name, run over a ClusterState to place
// one pod (with its exact devices) or a gang of pods all-or-nothing.
#ifndef TESSERA_CORE_SCHEDULER_H_
#define TESSERA_CORE_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "core/fgd.h"
#include "core/framework.h"
#include "core/gang_pods.h"
#include "core/pod.h"
#include "core/result_cache.h"
#include "core/state_classes.h"

namespace tessera::core {

struct DeviceRequest;
class Diagnosis;

struct SchedulerConfig {
  // Placement policy: bestfit, spread, gpupacking, dotproduct, random, fgd, fragpack.
  std::string policy = "bestfit";
  // Seed for the random policy (and any other seeded choice).
  uint64_t seed = 0;
  // How many nodes to find feasible before scoring, as kube-scheduler's
  // percentageOfNodesToScore: 0 adapts to the cluster size (50% minus 1% per 125 nodes, at least
  // 5% and 100 nodes); 100 scores every feasible node.
  int percentage_of_nodes_to_score = 0;
  // FGD's target workload; empty: learned from the pods placed.
  std::vector<TaskType> fgd_workload;
  // Reuse per-node results across cycles for pods of one placement signature on nodes that have
  // not changed (NodeResultCache). Placements are the same either way; off only to check that.
  bool reuse_node_results = true;
  // When no node fits, examine the nodes the scan passed over to say why each does not (the
  // kube-scheduler style "0/N nodes are available: ..." reason). Callers that never read the
  // reason (the simulator) turn it off; a failure then says only that no node fits.
  bool diagnose_failures = true;
  // When every node is to be scored and the profile's filters and scores this cycle are
  // node-local, examine and score one node per class of identical state (StateClasses) instead
  // of every node. Placements are the same either way; off only to check that.
  bool group_identical_nodes = true;
};

// Builds plugins by name; the default registry holds every built-in plugin.
class PluginRegistry {
 public:
  using FilterFactory = std::function<std::unique_ptr<FilterPlugin>(const SchedulerConfig&)>;
  using ScoreFactory = std::function<std::unique_ptr<ScorePlugin>(const SchedulerConfig&)>;

  void RegisterFilter(std::string name, FilterFactory f);
  void RegisterScore(std::string name, ScoreFactory f);
  std::unique_ptr<FilterPlugin> NewFilter(std::string_view name, const SchedulerConfig& c) const;
  std::unique_ptr<ScorePlugin> NewScore(std::string_view name, const SchedulerConfig& c) const;

  static const PluginRegistry& Default();

 private:
  std::map<std::string, FilterFactory, std::less<>> filters_;
  std::map<std::string, ScoreFactory, std::less<>> scores_;
};

// Which plugins run, in order, with score weights.
struct Profile {
  std::vector<std::string> filters;
  std::vector<std::pair<std::string, int>> scores;
};

// The profile of a policy name, or an error listing the known policies.
Result<Profile> ProfileForPolicy(std::string_view policy);
// Every policy name, in a stable order.
std::vector<std::string> PolicyNames();

struct PlaceOutcome {
  bool ok = false;
  Placement placement;
  // When !ok: "0/1523 nodes are available: 900 insufficient GPU memory, ...".
  std::string reason;
  // When !ok: no node could ever hold the pod, whatever ends (kube-scheduler's
  // UnschedulableAndUnresolvable on every node: a node selector, affinity or taint that does
  // not match, fewer GPUs than asked); false when not diagnosed.
  bool never_fits = false;
  int evaluated_nodes = 0;  // nodes looked at in this cycle
  int feasible_nodes = 0;   // of which passed every filter and the device step
};

struct GangOutcome {
  bool ok = false;
  // Per member, in the order given: the placement (reserved in the state). Empty when !ok.
  std::vector<std::optional<Placement>> placements;
  std::string reason;
  // When !ok: members that can never be placed (PlaceOutcome::never_fits) leave fewer than the
  // gang needs.
  bool never_fits = false;
};

class Scheduler {
 public:
  static Result<std::unique_ptr<Scheduler>> Create(
      const SchedulerConfig& config, const PluginRegistry& registry = PluginRegistry::Default());

  const SchedulerConfig& config() const { return config_; }

  // Finds the best placement for `pod` on `state` without changing it.
  PlaceOutcome Place(const ClusterState& state, const PodSpec& pod,
                     const GangContext* gang = nullptr);

  // Place, then allocate the placement in `state` and tell the reserve plugins.
  PlaceOutcome Schedule(ClusterState& state, const PodSpec& pod);

  // Places the members of a gang: succeeds when at least `min_member` of them (all when
  // min_member <= 0) are placed, among them every member `required` marks (per member; empty:
  // none), and then holds their placements in `state`; otherwise nothing stays reserved and
  // the reason names the member that could not be placed. Required members are placed first,
  // then the largest. It stops as soon as the gang cannot succeed, and a member that does not
  // fit stands for the rest of its run (alike, and nothing changed since): a gang that fails
  // costs about as many placements as there is room for, however many members it has.
  GangOutcome ScheduleGang(ClusterState& state, const GangPods& members, int min_member = 0);
  // The same with members one by one, `required` per member (empty: none).
  GangOutcome ScheduleGang(ClusterState& state, std::span<const PodSpec> members,
                           int min_member = 0, std::span<const uint8_t> required = {});

  // Returns a placement (e.g. of a finished pod) to the state and tells the reserve plugins.
  Status Unreserve(ClusterState& state, const PodSpec& pod, const Placement& p);

  // True when `pod` passes every pre-filter, filter and the device step on one of `nodes` as
  // `state` stands: then Place finds a placement. The gate for "did freeing these nodes make
  // room". Changes nothing but scratch.
  bool AnyFeasible(const ClusterState& state, const PodSpec& pod, std::span<const NodeId> nodes);

  // How many classes of identical node state the last placement that scored every node by
  // class saw (0 before any).
  size_t state_classes() const { return states_.live().size(); }

 private:
  struct WeightedScore {
    std::unique_ptr<ScorePlugin> plugin;
    int weight;
  };

  Scheduler() = default;
  int NumFeasibleToFind(int nodes) const;
  // Runs the pre-filters and resets the per-class filter memo for a new cycle.
  Status BeginCycle(CycleState& cycle, const ClusterState& state);
  // Runs the filters, then the device step, on one node: empty when it is feasible (its
  // candidates appended to candidates_), else the reason.
  std::string_view Examine(CycleState& cycle, const ClusterState& state, const DeviceRequest& req,
                           NodeId id);
  // After a failed placement that examined every node: whether no node could ever hold the
  // request (its class rejected by a class-scoped filter, or fewer GPUs than asked).
  // `by_class`: the cycle examined one node per state class (ScanClasses).
  bool NeverFitsAnywhere(const ClusterState& state, const DeviceRequest& req, bool by_class) const;
  // True when this cycle may examine one node per state class: grouping is on, every filter
  // and every score plugin run this cycle is node-local, and the pod does not name the
  // hostname label (which state classes do not tell apart).
  bool GroupsIdenticalNodes(const CycleState& cycle) const;
  // True when every filter and every score plugin run this cycle (skipped_ set) is node-local,
  // and then points the result cache at the pod's row.
  bool BeginReuse(const CycleState& cycle, const ClusterState& state);
  // Examines nodes from `start` until `want` are feasible or all were looked at, appending
  // candidates (and their origin) and the rejections to `diag`; returns how many it looked at
  // and how many were feasible. Nodes certain to fail are passed over (passed_over_) unexamined.
  std::pair<int, int> Scan(CycleState& cycle, const ClusterState& state, const DeviceRequest& req,
                           uint32_t start, int want, bool reuse, Diagnosis& diag);
  // Scan over every node by state class: the first node of each class is examined for all of
  // it (candidates of that node only; rejections and passed-over nodes counted by class size).
  std::pair<int, int> ScanClasses(CycleState& cycle, const ClusterState& state,
                                  const DeviceRequest& req, bool reuse, Diagnosis& diag);
  // Examine, recording where each candidate it appends came from (origin_).
  std::string_view ExamineAndRecord(CycleState& cycle, const ClusterState& state,
                                    const DeviceRequest& req, NodeId id);
  // Scores candidates_ with every score plugin not skipped this cycle; the index of the best,
  // ties broken by node id.
  size_t PickBest(CycleState& cycle, const ClusterState& state, bool reuse);

  SchedulerConfig config_;
  std::vector<std::unique_ptr<FilterPlugin>> filters_;
  std::vector<WeightedScore> scores_;
  std::vector<PreFilterPlugin*> prefilters_;
  std::vector<ReservePlugin*> reservers_;
  uint64_t sequence_ = 0;
  uint32_t next_start_ = 0;
  // Scratch reused across cycles.
  std::vector<Candidate> candidates_;
  // Nodes passed over unexamined, each standing for this many nodes (its class, or itself).
  std::vector<std::pair<NodeId, int>> passed_over_;
  std::vector<std::vector<int64_t>> raw_scores_;
  std::vector<int64_t> totals_;  // per candidate: the weighted sum of its scores
  // Per score plugin: whether it skips this cycle (ScorePlugin::Skip, asked once per cycle).
  std::vector<uint8_t> skipped_;
  // Per class-scoped filter and node class: 0 unknown, 1 pass, 2 fail.
  std::vector<std::vector<uint8_t>> class_memo_;
  std::vector<std::vector<std::string>> class_reason_;
  // Per node class: 1 once a class-scoped filter rejected it in this cycle.
  std::vector<uint8_t> class_failed_;
  // Results reused across cycles, and per candidate of this cycle where it came from.
  std::unique_ptr<NodeResultCache> cache_;
  bool filters_node_local_ = true;
  enum class Origin : uint8_t { kComputed, kComputedAlone, kCached };
  std::vector<Origin> origin_;
  std::vector<uint64_t> generations_;
  StateClasses states_;
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_SCHEDULER_H_
