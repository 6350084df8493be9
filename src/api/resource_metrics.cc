#include "api/resource_metrics.h"

#include <cstdio>

#include "api/json_read.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

namespace {

std::string GroupVersion() {
  return std::string(kMetricsGroup) + "/" + std::string(kMetricsVersion);
}

// The metadata metrics-server gives a metrics object: the measured object's name, namespace and
// labels, and the time the document was made.
json MetricsMeta(const json& of, int64_t at_ms) {
  const json& meta = Member(of, "metadata");
  json out = {{"name", Member(meta, "name")}, {"creationTimestamp", FormatTime(at_ms)}};
  if (Member(meta, "namespace").is_string()) out["namespace"] = Member(meta, "namespace");
  if (Member(meta, "labels").is_object()) out["labels"] = Member(meta, "labels");
  return out;
}

json UsageOf(const MeasuredUsage& u) {
  return {{"cpu", CpuQuantity(u.nano_cores)}, {"memory", MemoryQuantity(u.memory_bytes)}};
}

}  // namespace

std::string CpuQuantity(int64_t nano_cores) { return std::to_string(nano_cores) + "n"; }

std::string MemoryQuantity(int64_t bytes) { return std::to_string(bytes / 1024) + "Ki"; }

std::string WindowText(int64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  char text[32];
  std::snprintf(text, sizeof text, "%lld.%03llds", static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000));
  std::string s = text;
  // "5.030s" -> "5.03s", as Go prints a Duration.
  while (s.size() > 2 && s[s.size() - 2] == '0') s.erase(s.size() - 2, 1);
  return s;
}

json NodeMetrics(const json& node, const MeasuredUsage& usage) {
  return {{"kind", "NodeMetrics"},
          {"apiVersion", GroupVersion()},
          {"metadata", MetricsMeta(node, usage.at_ms)},
          {"timestamp", FormatTime(usage.at_ms)},
          {"window", WindowText(usage.window_ms)},
          {"usage", UsageOf(usage)}};
}

json PodMetrics(const json& pod, const MeasuredUsage& usage) {
  const json& containers = Member(Member(pod, "spec"), "containers");
  const json& name =
      containers.is_array() && !containers.empty() ? Member(containers[0], "name") : json("main");
  return {{"kind", "PodMetrics"},
          {"apiVersion", GroupVersion()},
          {"metadata", MetricsMeta(pod, usage.at_ms)},
          {"timestamp", FormatTime(usage.at_ms)},
          {"window", WindowText(usage.window_ms)},
          {"containers", json::array({{{"name", name}, {"usage", UsageOf(usage)}}})}};
}

json MetricsList(std::string_view kind, json items) {
  return {{"kind", std::string(kind) + "List"},
          {"apiVersion", GroupVersion()},
          {"metadata", json::object()},
          {"items", std::move(items)}};
}

}  // namespace tessera::api
