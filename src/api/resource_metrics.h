// The resource metrics API, metrics.k8s.io/v1beta1, as metrics-server serves it and
// `kubectl top` reads it: a NodeMetrics per node and a PodMetrics per running pod, each with
// the CPU (a rate, in nanocores) and memory (the working set) measured over a window. Tessera's
// agents measure them (agent/usage.h) and the server holds the latest (server/usage_book.h);
// these are the documents.
#ifndef TESSERA_API_RESOURCE_METRICS_H_
#define TESSERA_API_RESOURCE_METRICS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tessera::api {

inline constexpr std::string_view kMetricsGroup = "metrics.k8s.io";
inline constexpr std::string_view kMetricsVersion = "v1beta1";

// What was measured of one node or one container.
struct MeasuredUsage {
  int64_t nano_cores = 0;
  int64_t memory_bytes = 0;
  int64_t at_ms = 0;      // when it was measured
  int64_t window_ms = 0;  // over how long the CPU rate was measured
};

// "1234567n" and "2048Ki", as metrics-server writes them.
std::string CpuQuantity(int64_t nano_cores);
std::string MemoryQuantity(int64_t bytes);
// A metav1.Duration's text: 5000 -> "5s", 5034 -> "5.034s".
std::string WindowText(int64_t ms);

// The NodeMetrics of `node` (a Kubernetes Node view: its name and labels are taken).
nlohmann::json NodeMetrics(const nlohmann::json& node, const MeasuredUsage& usage);
// The PodMetrics of `pod` (a core/v1 Pod view): one container, named as the pod's.
nlohmann::json PodMetrics(const nlohmann::json& pod, const MeasuredUsage& usage);
// A NodeMetricsList or PodMetricsList of `items`.
nlohmann::json MetricsList(std::string_view kind, nlohmann::json items);

}  // namespace tessera::api

#endif  // TESSERA_API_RESOURCE_METRICS_H_
