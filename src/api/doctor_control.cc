// The doctor's control-plane checks (api/doctor.h): the store and the scheduler's leadership,
// from the server's /metrics and, on etcd, `tessera store status`'s report (cli/store_cmd.h).
#include <charconv>
#include <sstream>

#include "api/doctor.h"

namespace tessera::api {

using nlohmann::json;

namespace {

// Lag (revisions) past which a replica's reads are noticeably behind.
constexpr int64_t kLagRevisions = 1000;

// The value of an unlabelled series of a Prometheus text exposition; -1 when absent.
double Series(std::string_view metrics, std::string_view name) {
  std::istringstream lines{std::string(metrics)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ' ') {
      continue;
    }
    try {
      return std::stod(line.substr(name.size() + 1));
    } catch (...) {
      return -1;
    }
  }
  return -1;
}

void FromMetrics(std::string_view metrics, std::vector<Finding>* out) {
  if (const double failures = Series(metrics, "tessera_store_commit_failures_total");
      failures > 0) {
    Finding f = MakeFinding(Severity::kWarning, "store.commit-failures", "control-plane",
                            "the store refused commits since this server started");
    f.evidence.push_back("tessera_store_commit_failures_total " +
                         std::to_string(static_cast<int64_t>(failures)));
    f.meaning =
        "Writes failed for a reason other than a conflict: etcd without a quorum or out "
        "of space, a deposed leader's write, a disk error. Clients saw 5xx answers.";
    f.fix = "tessera store status --store etcd://... (members, alarms, quota); the server's log.";
    out->push_back(std::move(f));
  }
  if (const double lag = Series(metrics, "tessera_store_watch_lag_revisions");
      lag > kLagRevisions) {
    Finding f = MakeFinding(Severity::kWarning, "store.watch-lag", "control-plane",
                            "this server's view of the store lags behind it");
    f.evidence.push_back("tessera_store_watch_lag_revisions " +
                         std::to_string(static_cast<int64_t>(lag)));
    f.meaning =
        "The replica's cache, which answers reads and watches, is behind etcd: clients "
        "see older objects, and the scheduler (when it leads) decides on them.";
    f.fix =
        "Check the server's CPU and its link to etcd; a replica far behind can be restarted "
        "(it lists again).";
    out->push_back(std::move(f));
  }
}

void FromStoreStatus(const json& s, std::vector<Finding>* out) {
  if (s.value("leader", "").empty()) {
    Finding f = MakeFinding(Severity::kCritical, "scheduler.no-leader", "control-plane",
                            "no replica leads the scheduling loop");
    f.evidence.push_back("etcd revision " + std::to_string(s.value("revision", int64_t{0})) +
                         ": no holder of the election key");
    f.meaning =
        "Nothing is admitted or placed until a replica is elected (within its lease TTL "
        "after one starts or reaches etcd).";
    f.fix =
        "Start a replica (tessera server --store etcd://...), or check that the replicas "
        "reach etcd.";
    out->push_back(std::move(f));
  }
  for (const json& r : s.value("replicas", json::array())) {
    const int64_t lag = r.value("lag", int64_t{0});
    if (lag <= kLagRevisions) continue;
    Finding f = MakeFinding(Severity::kWarning, "store.replica-lag",
                            "replica/" + r.value("id", std::string("?")),
                            "a replica's view lags behind etcd");
    f.evidence.push_back(std::to_string(lag) + " revisions behind as of its report at " +
                         r.value("at", std::string("?")));
    f.meaning = "Its reads and watches serve older objects than the others'.";
    f.fix = "Check that replica's CPU and its link to etcd; restart it if it stays behind.";
    out->push_back(std::move(f));
  }
  const json members = s.value("members", json::array());
  int down = 0;
  for (const json& m : members) down += m.contains("error") ? 1 : 0;
  if (down > 0) {
    const bool quorum_lost = 2 * down >= static_cast<int>(members.size());
    Finding f = MakeFinding(quorum_lost ? Severity::kCritical : Severity::kWarning,
                            "store.member-down", "control-plane",
                            std::to_string(down) + " of " + std::to_string(members.size()) +
                                " etcd member(s) cannot be reached");
    for (const json& m : members) {
      if (m.contains("error"))
        f.evidence.push_back(m.value("endpoint", "") + ": " + m.value("error", ""));
    }
    f.meaning = quorum_lost ? "Without a majority etcd takes no write: the API answers 503."
                            : "etcd goes on with its majority; one more loss stops every write.";
    f.fix =
        "Restart the member (etcd's own log says why it stopped), or replace it (etcdctl "
        "member remove / add).";
    out->push_back(std::move(f));
  }
  for (const json& m : members) {
    const double used = m.value("quotaUsedPercent", 0.0);
    if (used < 80) continue;
    Finding f = MakeFinding(used >= 95 ? Severity::kCritical : Severity::kWarning, "store.quota",
                            "etcd/" + m.value("endpoint", std::string("?")),
                            "etcd's database nears its quota");
    f.evidence.push_back("db size " + std::to_string(m.value("dbSize", int64_t{0})) + " bytes, " +
                         std::to_string(static_cast<int>(used)) + "% of the quota; in use " +
                         std::to_string(m.value("dbSizeInUse", int64_t{0})));
    f.meaning = "At its quota etcd raises NOSPACE and refuses every write.";
    f.fix = "Compact and defragment (etcdctl defrag), or raise --quota-backend-bytes.";
    out->push_back(std::move(f));
  }
  for (const json& a : s.value("alarms", json::array())) {
    Finding f =
        MakeFinding(Severity::kCritical, "store.alarm", "control-plane", "etcd raised an alarm");
    f.evidence.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    f.meaning =
        "A NOSPACE alarm stops every write until it is disarmed; CORRUPT means a "
        "member's data differs from the others'.";
    f.fix =
        "NOSPACE: compact, defragment, then etcdctl alarm disarm. CORRUPT: replace the "
        "member.";
    out->push_back(std::move(f));
  }
}

}  // namespace

std::vector<Finding> CheckControlPlane(const json* store_status, std::string_view metrics) {
  std::vector<Finding> out;
  FromMetrics(metrics, &out);
  if (store_status != nullptr && store_status->is_object()) FromStoreStatus(*store_status, &out);
  return out;
}

}  // namespace tessera::api
