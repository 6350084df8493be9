// The read stage of a scheduling cycle: a snapshot of what the control plane stores, in the
// core's terms. The ready nodes with their GPUs' sharing (a node whose agent missed its
// heartbeats is left out, and what was bound to it waits again), the queue configuration, and
// the Jobs: those running hold their devices in the cluster state, the others are pending or held
// back (suspended, scheduling-gated, outside their queue's namespaceSelector).
//
// Reading also finds what is due regardless of any decision, and hands it to the cycle's writes:
// Jobs past their activeDeadlineSeconds fail, ended Jobs past ttlSecondsAfterFinished (or the
// server's default for it) are deleted, arrays count their ended tasks, a sharing config says where
// it does not fit, a lost binding is told, and an object that cannot be read is skipped with a
// Warning event (once per version) and named in the snapshot.
//
// Each stored version is read once: the reader keeps what it computed of each object (its
// checks, a Job's decoded spec) until the object changes.
#ifndef TESSERA_SERVER_CYCLE_READ_H_
#define TESSERA_SERVER_CYCLE_READ_H_

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/job_array.h"
#include "api/kinds.h"
#include "core/admission.h"
#include "core/cluster_state.h"
#include "server/control_plane.h"
#include "server/cycle_writes.h"
#include "server/metrics.h"
#include "server/quarantine_pass.h"

namespace tessera::server {

// What a cycle reads of one stored version of an object, beyond its document.
struct ObjectView {
  std::shared_ptr<const nlohmann::json> doc;
  std::optional<Status> readable;  // its envelope and status, checked
  // Of a Job: its spec, decoded; its creation time; and the time of its QuotaReserved=False
  // condition with reason Pending, the latest where several (-1: none).
  std::optional<Result<api::JobSpec>> job;
  int64_t created_ms = -1;
  int64_t pending_since = -1;
  // Of a Job, read once per version: status.phase and status.message (a pointer into `doc`;
  // null when it has none), whether it ended (Succeeded or Failed), when an ended Job is to be
  // deleted (ttlSecondsAfterFinished, or the reader's default; -1: never), and whether its end
  // was given to the accountant.
  bool status_read = false;
  std::string phase;
  const std::string* message = nullptr;
  bool ended = false;
  int64_t delete_at_ms = -1;
  bool accounted = false;
};

// The queue that takes Jobs naming none: no quota, kube-scheduler's preemption by priority.
inline constexpr char kUnqueued[] = "tessera-unqueued";

// Covers a scheduling cycle's period and the commit of the heartbeat after its stamp.
constexpr int64_t kFenceMarginMs = 2'000;

// One cycle's snapshot. Jobs are named by their index in `jobs`.
struct CycleSnapshot {
  // The cluster: the ready nodes, their GPUs shared as configured, the running work allocated.
  core::ClusterState state;
  std::vector<StoredJson> nodes;                 // every readable Node, ready or not
  std::map<std::string, std::string> addresses;  // node -> the address its agent advertises
  std::map<std::string, std::string> not_ready;  // node -> why it takes no work
  QuarantineInForce quarantine;                  // GPUs quarantined, nodes to reboot

  // The queues, with the built-in unqueued queue and a local queue for each namespace using it
  // or a Volcano queue directly.
  core::QueueConfig cfg;
  std::vector<StoredJson> queues;  // the Queue objects (their status says whether active)

  // Every readable Job, each with its view (status read; spec decoded unless it ended).
  std::vector<StoredJson> jobs;
  std::vector<ObjectView*> views;
  // The work to decide on: pending and running, each with its Job.
  std::vector<core::Workload> pending;
  std::vector<size_t> pending_jobs;
  std::vector<core::AdmittedWorkload> running;
  std::vector<size_t> running_jobs;
  // Held back: suspended Jobs, and Jobs waiting on their gates or namespace with the reason.
  std::vector<size_t> suspended;
  std::vector<std::pair<size_t, std::string>> gated;
  // Array Jobs: the array and its task's name; and those whose status this read advanced (the
  // tasks that ended counted), as advanced.
  std::map<size_t, std::pair<api::ArraySpec, std::string>> arrays;
  std::map<size_t, nlohmann::json> advanced;
  std::set<std::string> admitted_uids;  // "ns/name/uid" of the Jobs running

  std::vector<CycleGauges::Undecodable> undecodable;
  std::vector<std::string> problems;  // what could not be read or was ignored
  bool follow_up = false;             // the read ended work or advanced an array
};

class CycleReader {
 public:
  // A node whose heartbeat is older than `node_grace_ms` (at least its fenceSeconds plus
  // kFenceMarginMs) is not ready; 0: never. An ended Job that sets no ttlSecondsAfterFinished
  // is deleted `finished_ttl_ms` after it ended; -1: kept.
  CycleReader(ControlPlane& plane, int64_t node_grace_ms, core::QuarantinePolicy quarantine = {},
              int64_t finished_ttl_ms = -1)
      : plane_(plane),
        node_grace_ms_(node_grace_ms),
        finished_ttl_ms_(finished_ttl_ms),
        quarantine_(quarantine) {}

  // The snapshot at `now_ms`; what is due is added to `writes`. The snapshot's views live until
  // the next Read.
  CycleSnapshot Read(int64_t now_ms, CycleWrites& writes);

 private:
  class Reading;

  ControlPlane& plane_;
  const int64_t node_grace_ms_;
  const int64_t finished_ttl_ms_;
  QuarantinePass quarantine_;
  // What the cycles read of each stored object, computed once per version: keyed by the parsed
  // document the object cache shares until the object changes (the view holds it, so the key
  // is not reused while the entry lives); the objects of the last read only.
  std::unordered_map<const nlohmann::json*, std::shared_ptr<ObjectView>> views_;
  // "kind/ns/name" -> the version last reported undecodable.
  std::map<std::string, int64_t> reported_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CYCLE_READ_H_
