// The control plane's scheduling loop: on every change (and periodically) it runs a cycle over
// the stored objects, in four stages with typed hand-offs:
//   read    (cycle_read.h)    a CycleSnapshot: the ready nodes with their GPUs' sharing configs
//                             and the work already bound, the queues, the pending Jobs;
//   decide  (cycle_decide.h)  a Decision: one admission cycle of the core's queue layer;
//   write   (cycle_record.h)  the decisions in the Jobs' statuses (bindings with exact devices,
//                             evictions, growths), then pending reasons and Queue statuses, with
//                             Events ("Scheduled to node-3 GPUs 0,1", "Preempted by ...");
//   report  (cycle_report.h)  metrics, accounting, idle marks.
// All of a cycle's writes go through one CycleWrites (cycle_writes.h).
//
// Job status written here:
//   phase: Pending | Admitted (here) | Succeeded | Failed (by the node agents, when the pods end;
//   such Jobs are left alone), message (why pending), queue, flavors {resource: flavor},
//   admittedAt, pods[] {name, node, cpuMilli, memoryMiB,
//                       devices[] {gpu (position), index, uuid, kind, milli, memoryMiB,
//                                  gpuMilli (GPU equivalents taken), migInstance, migProfile,
//                                  replicas}}
// Jobs without spec.queue go through a built-in queue without quota ("tessera-unqueued"), so
// namespace quotas and placement still apply to them. A Queue whose definition is invalid (an
// unknown flavor, say) is inactive: its work waits with the reason, the rest is scheduled, and
// the Queue's status says {active: false, message}.
#ifndef TESSERA_SERVER_SCHEDULING_LOOP_H_
#define TESSERA_SERVER_SCHEDULING_LOOP_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/accounting.h"
#include "core/admission.h"
#include "core/quarantine.h"
#include "core/scheduler.h"
#include "server/control_plane.h"
#include "server/cycle_read.h"
#include "server/cycle_record.h"
#include "server/cycle_report.h"

namespace tessera::server {

struct SchedulingLoopOptions {
  std::string policy = "fragpack";
  int period_ms = 1000;  // a cycle at least this often, and after every change
  // A node whose status.heartbeat is older than this is NotReady (0: never), and its pods are
  // bound elsewhere. Nodes without a heartbeat (declared by hand) are always ready. A node that
  // publishes status.fenceSeconds (its agent stops its pods that long after its last accepted
  // heartbeat, see agent/fence.h) is given at least fenceSeconds + kFenceMarginMs.
  int64_t node_grace_ms = 40'000;
  // A waiting job's changed reason is written at most this often once it is Pending (the
  // first reason, and a job's becoming Pending, are written at once).
  int64_t pending_refresh_ms = 5'000;
  // And such rewrites (with their Events) are at most this many a second over all waiting jobs,
  // with as many at once, the longest unrefreshed first: with a thousand jobs behind busy GPUs
  // (their reasons name the job holding a reservation, which changes as the queue drains) a
  // rewrite of each every pending_refresh_ms would cost more than the placing.
  int pending_refreshes_per_s = 50;
  // After a cycle the loop waits as long as that cycle took, at least min_gap_ms and at most
  // max_gap_ms, before it follows the next change: busy, it spends at most about half a core.
  int min_gap_ms = 2;
  int max_gap_ms = 50;
  // How long a preemptor holds the quota it freed from its victims while it waits to be
  // admitted (core::Workload::yields_to): its victims stand aside that long at most.
  int64_t preemption_hold_ms = 300'000;
  // An ended Job that sets no ttlSecondsAfterFinished is deleted this long after it ended
  // (-1: kept), so that the state of finished work does not grow without end: Slurm purges an
  // ended job from its controller after MinJobAge (300 s by default); the accounting keeps
  // what the Job used (usage.db), and its Events and logs expire on their own schedules.
  int64_t finished_ttl_ms = 86'400'000;
  // Fair sharing and its strategies (Kueue's fairSharing config); classic preemption by default.
  core::CycleOptions cycle;
  // Quarantine of GPUs and nodes for their Xids, with its circuit breaker (core/quarantine.h).
  core::QuarantinePolicy quarantine;
  // Several replicas (on etcd): the fence while this replica leads, nullopt while it does not
  // (store/etcd_election.h). A cycle runs only while it leads, and each of its writes holds only
  // while the fence does. Unset: one replica, always leading.
  std::function<std::optional<store::Fence>()> leadership;
  std::function<int64_t()> transitions;  // how often leadership changed, for the metrics
};

// What one cycle did.
struct CycleSummary {
  bool standby = false;  // another replica leads: nothing was read, decided or written
  int pending = 0;
  int admitted = 0;
  int preempted = 0;
  int writes = 0;            // status and event writes
  int write_conflicts = 0;   // writes refused because the object changed meanwhile
  int inactive_queues = 0;   // queues left out for an invalid definition
  std::string config_error;  // the queue configuration could not be repaired: nothing admitted
  // What could not be read (a kind's listing, a node's record) or was ignored (an invalid
  // sharing config's problems, a dropped object of the queue configuration).
  std::vector<std::string> problems;
  // Whether its own writes can let the next cycle decide more: it preempted, ended work (a
  // deadline, an idle reclaim, an array's end) or admitted or advanced an array, whose next
  // tasks are placed from the next cycle on. Otherwise the loop's thread does not wake for
  // what the cycle wrote (its admissions, pending reasons, marks and events).
  bool follow_up = false;
};

class SchedulingLoop {
 public:
  static Result<std::unique_ptr<SchedulingLoop>> Create(ControlPlane& plane,
                                                        SchedulingLoopOptions options = {});
  ~SchedulingLoop();  // stops

  // One cycle at wall time `now_ms`.
  Result<CycleSummary> RunOnce(int64_t now_ms);

  // Runs cycles on a thread of its own until Stop: after every change that can change what a
  // cycle decides (not events, tokens or node leases, nor the last cycle's own writes unless
  // it asked to be followed), after a gap as long as the last cycle (options' min_gap_ms to
  // max_gap_ms), and at least once a period.
  void Start();
  void Stop();
  // Cycles the thread of Start has run.
  uint64_t cycles() const { return cycles_.load(); }

 private:
  SchedulingLoop(ControlPlane& plane, SchedulingLoopOptions options,
                 std::unique_ptr<core::Scheduler> placer);
  // The cycle as its stages: read a snapshot, decide, write the decisions and statuses, report.
  Result<CycleSummary> Cycle(int64_t now_ms);
  // Publishes where each waiting Job of the cycle stands in its queue, with its reason.
  void PublishOrder(const CycleSnapshot& snap, const core::CycleResult& result,
                    std::vector<std::string> reasons, int64_t now_ms);
  // Revokes the exec tokens of Jobs no longer running (`running`: "ns/name/uid" of those that
  // are). The store's tokens are read only when a Job stopped, and at the first cycle.
  void RevokeStoppedJobsTokens(std::set<std::string> running, std::vector<std::string>* problems);

  // With `lock` held: waits until a change after revision `seen` that can change a cycle's
  // decisions (true), or until `deadline` or Stop (false).
  bool WaitForChange(std::unique_lock<std::mutex>& lock, int64_t seen,
                     std::chrono::steady_clock::time_point deadline);

  ControlPlane& plane_;
  SchedulingLoopOptions options_;
  std::unique_ptr<core::Scheduler> placer_;
  CycleReader reader_;
  CycleReporter reporter_;
  RefreshBudget refresh_budget_;
  std::vector<core::Reservation> held_;
  // The Jobs running at the last cycle ("ns/name/uid"), for revoking their exec tokens when they
  // stop; known once a sweep has succeeded.
  std::set<std::string> running_jobs_;
  bool running_jobs_known_ = false;
  int64_t event_seq_ = 0;

  // The revisions the last cycle wrote, and whether they wake the thread (follow_up).
  std::vector<int64_t> own_revisions_;
  bool follow_up_ = true;

  std::atomic<uint64_t> cycles_ = 0;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool dirty_ = false;
  std::thread thread_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_SCHEDULING_LOOP_H_
