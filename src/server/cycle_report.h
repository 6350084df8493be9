// The report stage of a scheduling cycle: what it did, told to the metrics (the cluster's
// fragmentation once the decisions are placed, the queues' quotas, the objects skipped as
// unreadable, how long each admitted Job waited) and to the accountant, which reads the Jobs
// holding devices and each ended Job once. The pods the accountant finds idle mark their Jobs
// (status.idle, an Idle event), and a queue's idleReclaim policy stops those idle long enough.
#ifndef TESSERA_SERVER_CYCLE_REPORT_H_
#define TESSERA_SERVER_CYCLE_REPORT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/accounting.h"
#include "core/admission.h"
#include "server/accountant.h"
#include "server/control_plane.h"
#include "server/cycle_decide.h"
#include "server/cycle_read.h"
#include "server/cycle_record.h"
#include "server/cycle_writes.h"
#include "server/metrics.h"

namespace tessera::server {

// The gauges after a cycle's decisions: the fragmentation of `state` (the cluster the cycle
// decided on) once `result`'s preemptions of `running` are released and its admissions and
// growths placed, and every queue's nominal quotas (GPUs, CPU cores, bytes).
CycleGauges GaugesAfter(core::ClusterState state, const core::CycleResult& result,
                        const std::vector<core::AdmittedWorkload>& running,
                        const core::QueueConfig& cfg);

// Marks the snapshot's running Jobs with idle pods (status.idle {since, pods, message}, an Idle
// event), clears the mark when their GPUs are busy again, and stops those their queue's
// idleReclaim policy reclaims (true when it stopped one). Jobs in `released` are left alone.
bool MarkIdle(int64_t now_ms, const std::vector<core::IdlePod>& idle, const AccountingOptions& opts,
              const CycleSnapshot& snap, const std::set<std::string, std::less<>>& released,
              CycleWrites& writes);

class CycleReporter {
 public:
  explicit CycleReporter(ControlPlane& plane) : plane_(plane) {}

  // Reports the cycle of `snap` (its cluster state is consumed), decided as `decision` and
  // recorded as `recorded`; idle marks go to `writes`. True when an idle reclaim ended work;
  // the accountant's error when it failed (every ended Job is given to it again next time).
  Result<bool> Report(int64_t now_ms, CycleSnapshot& snap, const Decision& decision,
                      const Recorded& recorded, CycleWrites& writes);

 private:
  ControlPlane& plane_;
  // Whether the accountant has been given every ended Job's end (false after it failed).
  bool ends_accounted_ = false;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CYCLE_REPORT_H_
