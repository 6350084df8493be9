// Acting on NVIDIA's Xid actions (core/xid.h), as NVSentinel does: detect, quarantine, drain,
// then a reset or a reboot, with a circuit breaker against mass quarantine. Pure: what each
// node's agent reported (its Xids with their times, its GPU resets, which GPUs pass their checks,
// its boot), the quarantine state kept for it and the time come in; the new state and the events
// come out. The server's scheduling loop applies them: a quarantined GPU takes no work and the
// Jobs on it are scheduled again, whole; a node marked for reboot takes no work and its Jobs move.
//
//   IGNORE, RESTART_APP          nothing (the application restarts by its own policy)
//   RESET_GPU, unknown           quarantine the GPU and request its reset
//   a workflow (45, 48, 74)      quarantine the GPU; a diagnosis decides (no reset requested)
//   RESTART_BM (79)              mark the node for reboot: it is drained
//
// Circuit breaker: quarantines (a node to reboot counts its GPUs) started within `window_ms`
// may cover at most `breaker_percent` of the cluster's GPUs, and always one node's worth (the
// GPUs of its largest node), so a small cluster can still take one node out. An Xid that would
// go beyond is not acted on; an event says so, and the breaker stays open while the window
// holds that many.
//
// A quarantined GPU comes back when its agent reset it after the quarantine began and reports
// it healthy, with clean checks and no Xid since the reset; or when an admin uncordons it (the
// state is edited outside). A node marked for reboot comes back once its agent reports another
// boot.
#ifndef TESSERA_CORE_QUARANTINE_H_
#define TESSERA_CORE_QUARANTINE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/xid.h"

namespace tessera::core {

struct QuarantinedGpu {
  int64_t gpu = 0;  // index on its node
  uint64_t xid = 0;
  int64_t since_ms = 0;
  bool reset_requested = false;  // RESET_GPU and unknown Xids
};

struct RebootMark {
  uint64_t xid = 0;
  int64_t since_ms = 0;
  std::string boot_id;  // the boot it was marked in; another boot lifts it
};

// What is kept per node between cycles.
struct NodeQuarantine {
  std::vector<QuarantinedGpu> gpus;  // by index
  std::optional<RebootMark> reboot;
  int64_t handled_until_ms = 0;  // Xids at or before this time were acted on
  bool operator==(const NodeQuarantine&) const = default;
};

inline bool operator==(const QuarantinedGpu& a, const QuarantinedGpu& b) {
  return a.gpu == b.gpu && a.xid == b.xid && a.since_ms == b.since_ms &&
         a.reset_requested == b.reset_requested;
}
inline bool operator==(const RebootMark& a, const RebootMark& b) {
  return a.xid == b.xid && a.since_ms == b.since_ms && a.boot_id == b.boot_id;
}

struct XidSeenAt {
  int64_t gpu = 0;
  uint64_t xid = 0;
  int64_t at_ms = 0;
};

struct GpuReset {
  int64_t gpu = 0;
  int64_t at_ms = 0;
  bool ok = false;
};

// One node as its agent reports it.
struct NodeHealthReport {
  std::string node;
  int64_t gpu_count = 0;
  std::vector<XidSeenAt> xids;
  std::vector<GpuReset> resets;
  std::set<int64_t> passing;  // GPUs healthy with clean checks (no pending retirement or remap)
  std::string boot_id;        // empty: not reported
  NodeQuarantine state;
};

struct QuarantinePolicy {
  bool enabled = true;
  int64_t breaker_percent = 10;
  int64_t window_ms = 30 * 60'000;
};

struct QuarantineEvent {
  std::string node;
  bool warning = true;
  std::string reason;  // GpuQuarantined, GpuReturned, NodeRebootRequired, NodeRebooted,
                       // QuarantineCircuitBreakerOpen
  std::string message;
};

struct QuarantineOutcome {
  std::vector<std::pair<std::string, NodeQuarantine>> changed;  // node -> its new state
  std::vector<QuarantineEvent> events;
  bool breaker_open = false;
  int64_t quarantined_in_window = 0;  // GPUs
  int64_t breaker_limit = 0;          // GPUs
};

QuarantineOutcome DecideQuarantine(const std::vector<NodeHealthReport>& nodes,
                                   const QuarantinePolicy& policy, int64_t now_ms);

// The most GPUs quarantines within the window may cover: `percent` of `total`, and at least
// `largest_node` (and one).
int64_t BreakerLimit(int64_t total_gpus, int64_t largest_node, int64_t percent);

}  // namespace tessera::core

#endif  // TESSERA_CORE_QUARANTINE_H_
