// The CPU and memory usage node agents report for their node and its pods (agent/usage.h),
// held in memory as metrics-server holds what it scrapes: the latest report per node, served
// by metrics.k8s.io (api/resource_metrics.h) while it is fresh. Usage is not stored: it is
// measured again every few seconds, and a restarted server has it back after one beat. Reports
// cost no store write and wake no scheduling cycle. Thread-safe.
#ifndef TESSERA_SERVER_USAGE_BOOK_H_
#define TESSERA_SERVER_USAGE_BOOK_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/resource_metrics.h"
#include "core/status.h"

namespace tessera::server {

class UsageBook {
 public:
  // A report is served for this long after it came, or three of its windows if longer:
  // metrics of a node whose agent stopped reporting are not shown as current.
  static constexpr int64_t kFreshMs = 30'000;
  // At most this many pods per report.
  static constexpr size_t kMaxPods = 10'000;

  struct Report {
    api::MeasuredUsage node;
    std::map<std::string, api::MeasuredUsage, std::less<>> pods;  // "<ns>/<job>/<pod>"
  };

  // Records the report `body` of node `node`'s agent, received at `now_ms`: {cpuNanoCores,
  // memoryBytes, windowMs, pods: [{pod, cpuNanoCores, memoryBytes, windowMs}]}, each a
  // non-negative integer (a window above 0). An error names the field and records nothing.
  Status Put(const std::string& node, const nlohmann::json& body, int64_t now_ms);

  // `node`'s latest report when it is fresh at `now_ms`.
  std::optional<Report> Get(const std::string& node, int64_t now_ms) const;

  // Forgets `node` (deleted).
  void Forget(const std::string& node);

 private:
  mutable std::mutex mu_;
  std::map<std::string, Report, std::less<>> reports_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_USAGE_BOOK_H_
