// The server's /metrics in the Prometheus text format (prometheus-cpp): what the scheduler did
// (cycles, admissions, preemptions: counted as they happen) and, rendered from the stored state
// at each scrape, workloads per queue and phase, GPUs allocated per queue and namespace, the
// cluster's allocation ratio, node heartbeats, and every GPU's telemetry under the field names
// dcgm-exporter uses, labelled with the namespace, job and task holding it (a shared GPU has a
// series per holder), so existing dashboards and alert rules work unchanged.
#ifndef TESSERA_SERVER_METRICS_H_
#define TESSERA_SERVER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <span>
#include <string>

#include "core/accounting.h"
#include "core/cluster_state.h"
#include "server/lease_book.h"
#include "server/object_cache.h"

namespace tessera::server {

// What the last scheduling cycle saw, rendered with each scrape.
struct CycleGauges {
  core::GpuFragmentation fragmentation;
  struct Quota {
    std::string queue, flavor, resource;
    double nominal = 0;  // GPUs, CPU cores or bytes
  };
  std::vector<Quota> quotas;
  // Stored objects the loop could not read and skipped.
  struct Undecodable {
    std::string kind, ns, name, reason;
  };
  std::vector<Undecodable> undecodable;
  // GPUs quarantined for their Xids, nodes marked for reboot, and whether the quarantine's
  // circuit breaker is open (core/quarantine.h).
  int64_t gpus_quarantined = 0;
  int64_t nodes_to_reboot = 0;
  bool quarantine_breaker_open = false;
};

// Counters the scheduling loop updates.
class SchedulerMetrics {
 public:
  SchedulerMetrics();
  prometheus::Registry& registry() { return *registry_; }
  void ObserveCycle(double seconds, int admitted, int preempted, int pending);
  // Seconds from a workload's creation to its admission, per queue.
  void ObserveAdmission(const std::string& queue, double seconds_waited);
  void SetCycleGauges(CycleGauges g);
  CycleGauges cycle_gauges() const;
  // Whether this replica leads the scheduling (1 with one replica), and how often that changed.
  void SetLeader(bool leading, int64_t transitions);
  // One commit to the store (SQLite's write, or etcd's transaction), and whether it failed.
  void ObserveCommit(double seconds, bool failed);
  // Revisions the store holds that this replica's change feed has not delivered yet.
  void SetWatchLag(int64_t revisions);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>* latency_;
  mutable std::mutex mu_;
  CycleGauges gauges_;
  prometheus::Histogram* cycle_seconds_;
  prometheus::Counter* cycles_;
  prometheus::Counter* admissions_;
  prometheus::Counter* preemptions_;
  prometheus::Gauge* pending_;
  prometheus::Gauge* leader_;
  prometheus::Gauge* transitions_;
  prometheus::Histogram* commit_seconds_;
  prometheus::Counter* commit_failures_;
  prometheus::Gauge* watch_lag_;
};

// The whole /metrics text: `scheduler`'s counters, the stored state at `now_ms` (the nodes'
// last reports read through `leases`), and the pods holding GPUs idle.
std::string RenderMetrics(ObjectCache& objects, LeaseBook& leases, SchedulerMetrics& scheduler,
                          std::span<const core::IdlePod> idle, int64_t now_ms);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_METRICS_H_
