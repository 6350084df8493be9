// From the last cycle of this replica's scheduling loop (server/queue_order_book.h):
// GET /apis/tessera.io/v1/pendingworkloads: every waiting Job with its queue, its position in
// the queue's order, the queue's length, its priority and the scheduler's reason. As Kueue's
// visibility API (pendingworkloads of a ClusterQueue or LocalQueue): a namespace token sees its
// own Jobs, placed among every namespace's. Query: queue, namespace (the admin's), limit,
// offset.
// GET /apis/tessera.io/v1/quotas (the admin's): every queue and cohort with its weight, share,
// state and per flavor and resource its quota, limits, use, borrowing, lending, what its weight
// deserves and how much waits.
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "api/time.h"
#include "server/api_common.h"
#include "server/api_server.h"

namespace tessera::server {

using json = nlohmann::json;

namespace {

Result<std::shared_ptr<const QueueOrder>> LastOrder(QueueOrderBook& book) {
  std::shared_ptr<const QueueOrder> order = book.Last();
  if (order == nullptr) {
    return Unavailable(
        "this replica has not run a scheduling cycle: the queues' order is kept by the replica "
        "that leads the scheduling loop (tessera store status names it)");
  }
  return order;
}

json Limit(int64_t v) { return v < 0 ? json() : json(v); }

}  // namespace

HttpResponse ApiServer::Quotas(const Principal& who) {
  if (who.role != Principal::Role::kAdmin) {
    return Error(
        PermissionDenied("the queues' quotas are read with the admin token, as Queues are"));
  }
  auto last = LastOrder(plane_.queue_order());
  if (!last.ok()) return Error(last.status());
  const QueueOrder& order = **last;
  std::map<std::string, int64_t> waiting;
  for (const QueueOrderEntry& e : order.entries) {
    if (!e.queue.empty()) ++waiting[e.queue];
  }
  json items = json::array();
  for (const core::QuotaNodeReport& n : order.quotas) {
    json figures = json::array();
    for (const core::QuotaFigures& f : n.figures) {
      figures.push_back({{"flavor", f.flavor},
                         {"resource", std::string(core::QuotaResourceName(f.resource))},
                         {"nominal", f.nominal},
                         {"borrowingLimit", Limit(f.borrowing_limit)},
                         {"lendingLimit", Limit(f.lending_limit)},
                         {"used", f.used},
                         {"borrowed", f.borrowed},
                         {"lent", f.lent},
                         {"deserved", f.deserved}});
    }
    json item = {{"name", n.name},
                 {"kind", n.is_queue ? "Queue" : "Cohort"},
                 {"weight", n.weight_milli / 1000.0},
                 {"share", n.share_milli / 1000.0},
                 {"resources", std::move(figures)}};
    if (!n.parent.empty()) item["cohort"] = n.parent;
    if (n.is_queue) {
      item["waiting"] = waiting[n.name];
      static constexpr const char* kStop[] = {"None", "Hold", "HoldAndDrain"};
      item["stopPolicy"] = kStop[static_cast<int>(n.stop)];
      if (!n.stop_reason.empty()) item["stopReason"] = n.stop_reason;
    }
    items.push_back(std::move(item));
  }
  return Json(200, {{"apiVersion", "tessera.io/v1"},
                    {"kind", "QuotaReport"},
                    {"metadata", {{"reportedAt", api::FormatTime(order.at_ms)}}},
                    {"items", std::move(items)}});
}

HttpResponse ApiServer::PendingWorkloads(const HttpRequest& req, const Principal& who) {
  if (who.role != Principal::Role::kAdmin && who.role != Principal::Role::kNamespace) {
    return Error(
        PermissionDenied("pending workloads are read with the admin or a namespace token"));
  }
  auto last = LastOrder(plane_.queue_order());
  if (!last.ok()) return Error(last.status());
  const std::shared_ptr<const QueueOrder>& order = *last;
  int64_t limit = 1000, offset = 0;
  for (auto [key, value] : {std::pair{"limit", &limit}, std::pair{"offset", &offset}}) {
    if (Status s = QueryCount(req, key, "a whole number", value); !s.ok()) return Error(s);
  }
  std::string ns;
  if (auto it = req.query.find("namespace"); it != req.query.end()) ns = it->second;
  if (who.role == Principal::Role::kNamespace) {
    if (!ns.empty() && ns != who.ns) {
      return Error(PermissionDenied("this token is limited to namespace " + who.ns));
    }
    ns = who.ns;
  }
  const std::string queue = req.query.contains("queue") ? req.query.at("queue") : "";
  json items = json::array();
  int64_t skipped = 0, matched = 0;
  for (const QueueOrderEntry& e : order->entries) {
    if ((!ns.empty() && e.ns != ns) || (!queue.empty() && e.queue != queue)) continue;
    ++matched;
    if (skipped < offset) {
      ++skipped;
      continue;
    }
    if (static_cast<int64_t>(items.size()) >= limit) continue;
    json item = {{"metadata", {{"namespace", e.ns}, {"name", e.name}}},
                 {"priority", e.priority},
                 {"reason", e.reason}};
    // Known for a queue's blocked head only: the cycle searched for room to hold for it.
    if (e.fits_when_all_end != core::QueuePlace::Fit::kUnknown) {
      item["fitsWhenRunningWorkEnds"] = e.fits_when_all_end == core::QueuePlace::Fit::kYes;
    }
    if (e.position > 0) {
      item["queue"] = e.queue;
      item["positionInClusterQueue"] = e.position;
      item["waitingInClusterQueue"] = e.waiting;
    }
    items.push_back(std::move(item));
  }
  return Json(200,
              {{"apiVersion", "tessera.io/v1"},
               {"kind", "PendingWorkloadList"},
               {"metadata", {{"orderedAt", api::FormatTime(order->at_ms)}, {"total", matched}}},
               {"items", std::move(items)}});
}

}  // namespace tessera::server
