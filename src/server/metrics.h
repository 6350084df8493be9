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
#include "store/store.h"

namespace tessera::server {

// Counters the scheduling loop updates.
class SchedulerMetrics {
 public:
  SchedulerMetrics();
  prometheus::Registry& registry() { return *registry_; }
  void ObserveCycle(double seconds, int admitted, int preempted, int pending);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram* cycle_seconds_;
  prometheus::Counter* cycles_;
  prometheus::Counter* admissions_;
  prometheus::Counter* preemptions_;
  prometheus::Gauge* pending_;
};

// The whole /metrics text: `scheduler`'s counters, the state of `store` at `now_ms`, and the pods
// holding GPUs idle.
std::string RenderMetrics(store::Store& store, SchedulerMetrics& scheduler,
                          std::span<const core::IdlePod> idle, int64_t now_ms);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_METRICS_H_
