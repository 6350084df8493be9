#include "server/usage_book.h"

#include <algorithm>

#include "server/json_names.h"

namespace tessera::server {

namespace {

// The non-negative integer `obj[key]` at `path`; a window must be above 0.
Result<int64_t> Count(const json& obj, const char* key, const std::string& path) {
  const std::string at = path.empty() ? key : path + "." + key;
  if (!obj.contains(key) || !obj[key].is_number_integer()) {
    return InvalidArgument(at + ": must be an integer");
  }
  const int64_t v = obj[key].get<int64_t>();
  if (v < 0 || (std::string_view(key) == "windowMs" && v == 0)) {
    return InvalidArgument(at + ": must be above 0");
  }
  return v;
}

Result<api::MeasuredUsage> UsageOf(const json& obj, const std::string& path, int64_t now_ms) {
  if (!obj.is_object())
    return InvalidArgument((path.empty() ? "body" : path) + ": must be an object");
  auto cpu = Count(obj, "cpuNanoCores", path);
  if (!cpu.ok()) return cpu.status();
  auto memory = Count(obj, "memoryBytes", path);
  if (!memory.ok()) return memory.status();
  auto window = Count(obj, "windowMs", path);
  if (!window.ok()) return window.status();
  return api::MeasuredUsage{*cpu, *memory, now_ms, *window};
}

}  // namespace

Status UsageBook::Put(const std::string& node, const json& body, int64_t now_ms) {
  auto usage = UsageOf(body, "", now_ms);
  if (!usage.ok()) return usage.status();
  Report report{*usage, {}};
  if (body.contains("pods")) {
    const json& pods = body["pods"];
    if (!pods.is_array()) return InvalidArgument("pods: must be a list");
    if (pods.size() > kMaxPods) {
      return InvalidArgument("pods: at most " + std::to_string(kMaxPods) + " per report");
    }
    for (size_t i = 0; i < pods.size(); ++i) {
      const std::string at = "pods[" + std::to_string(i) + "]";
      auto u = UsageOf(pods[i], at, now_ms);
      if (!u.ok()) return u.status();
      if (!pods[i].contains("pod") || !pods[i]["pod"].is_string() ||
          std::count(pods[i]["pod"].get_ref<const std::string&>().begin(),
                     pods[i]["pod"].get_ref<const std::string&>().end(), '/') != 2) {
        return InvalidArgument(at + ".pod: must be \"<namespace>/<job>/<pod>\"");
      }
      report.pods[pods[i]["pod"].get<std::string>()] = *u;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  reports_[node] = std::move(report);
  return Status::Ok();
}

std::optional<UsageBook::Report> UsageBook::Get(const std::string& node, int64_t now_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reports_.find(node);
  if (it == reports_.end()) return std::nullopt;
  const api::MeasuredUsage& u = it->second.node;
  if (now_ms - u.at_ms > std::max(kFreshMs, 3 * u.window_ms)) return std::nullopt;
  return it->second;
}

void UsageBook::Forget(const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  reports_.erase(node);
}

}  // namespace tessera::server
