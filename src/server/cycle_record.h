// The write stage of a scheduling cycle: the decisions recorded in the Jobs' statuses, with the
// events that tell them. An admission binds the Job's pods to their exact devices (status.pods,
// flavors, rendezvous ports for a job of several pods); a preemption evicts a running Job, which
// stands aside for its preemptor a while; a running gang's growth binds its newly placed pods and
// says why the others wait. Then the statuses: each waiting Job's reason (rewritten when it
// changes, at most once per refresh interval and within a budget per second), the arrays advanced
// by the read, and each Queue's activity.
#ifndef TESSERA_SERVER_CYCLE_RECORD_H_
#define TESSERA_SERVER_CYCLE_RECORD_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/admission.h"
#include "server/cycle_read.h"
#include "server/cycle_writes.h"

namespace tessera::server {

// The ports rendezvous of distributed jobs take on each node: [kFirstRendezvousPort, +1000).
constexpr int64_t kFirstRendezvousPort = 29500;
constexpr int64_t kRendezvousPorts = 1000;

// Rewrites of waiting Jobs' changed reasons allowed: `per_s` a second, with as many at once.
class RefreshBudget {
 public:
  explicit RefreshBudget(int per_s) : per_s_(per_s) {}
  // Refills it for the time since the last refill (full at the first).
  void Refill(int64_t now_ms);
  // Spends one rewrite (false: none left).
  bool Spend();

 private:
  int per_s_;
  int64_t milli_ = 0;  // thousandths of a rewrite
  int64_t at_ms_ = -1;
};

struct RecordOptions {
  // A waiting Job's changed reason is rewritten at most this often once it waits for a reason
  // of its own.
  int64_t pending_refresh_ms = 5'000;
  // How long a preemptor holds the quota its victims freed (status.preemptedBy.holdUntil).
  int64_t preemption_hold_ms = 300'000;
};

// What the decisions' writes did, for the report stage.
struct Recorded {
  int admitted = 0;
  int preempted = 0;
  bool follow_up = false;                       // they preempted, placed pods or advanced an array
  std::set<std::string, std::less<>> released;  // "ns/name" of the Jobs preempted
  // Per admission: its queue and how long the Job waited for it, in seconds.
  std::vector<std::pair<std::string, double>> waits;
};

class DecisionWriter {
 public:
  // The arrays `snap` advanced are taken by the first write of their Job.
  DecisionWriter(CycleSnapshot& snap, CycleWrites& writes, int64_t now_ms, RecordOptions options,
                 RefreshBudget& budget)
      : snap_(snap),
        writes_(writes),
        now_ms_(now_ms),
        options_(options),
        budget_(budget),
        advanced_(std::move(snap.advanced)) {}

  // Job `job` (an index of the snapshot's jobs) waits for `message`.
  void SetPending(size_t job, const std::string& message);
  // The suspended and gated Jobs wait, each with its reason.
  void HoldBack();
  // The admissions, preemptions and growths of `result`.
  Recorded Decisions(const core::CycleResult& result);
  // The statuses after the decisions: the waiting Jobs' reasons (of a queue dropped as invalid:
  // `inactive` says why), the advanced arrays nothing else rewrote, and each Queue's activity.
  // Returns the reasons, parallel to the snapshot's pending list ("" for those admitted).
  std::vector<std::string> Statuses(const core::CycleResult& result,
                                    const std::map<std::string, std::string>& inactive);

 private:
  void Admit(const core::Admission& a, std::map<std::string, std::set<int64_t>>& ports,
             Recorded& out);
  void Preempt(const core::Preemption& p, Recorded& out);
  void Grow(size_t running_index, const std::vector<const core::Growth*>& growths,
            const std::vector<const core::WaitingPod*>& waiting, Recorded& out);
  // An array as the read advanced it, taken by the one write that rewrites it this cycle.
  std::optional<nlohmann::json> TakeAdvanced(size_t job);
  // What a rewrite of a Job's status keeps of an array's progress: as advanced, or as stored.
  void KeepProgress(size_t job, nlohmann::json* to);

  CycleSnapshot& snap_;
  CycleWrites& writes_;
  const int64_t now_ms_;
  const RecordOptions options_;
  RefreshBudget& budget_;
  std::map<size_t, nlohmann::json> advanced_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CYCLE_RECORD_H_
