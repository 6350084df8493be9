// The resource metrics API (metrics.k8s.io/v1beta1) that `kubectl top` reads, served from the
// usage node agents report (server/usage_book.h), and the agents' reports themselves.
//
//   PUT /apis/tessera.io/v1/nodes/{node}/usage          an agent's report for its own node
//   GET /apis/metrics.k8s.io/v1beta1/nodes[/{node}]     NodeMetrics (as Nodes are read)
//   GET /apis/metrics.k8s.io/v1beta1/pods               PodMetrics of every namespace (admin)
//   GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods[/{pod}]
//                                                       PodMetrics (as the namespace's Pods)
//
// As metrics-server: a node or pod with no fresh measurement is left out of a list and is a 404
// by name; labelSelector selects on the node's or pod's labels, fieldSelector as for Pods.
#include <optional>
#include <string>
#include <vector>

#include "api/json_read.h"
#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/resource_metrics.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

std::optional<HttpResponse> ApiServer::ResourceMetrics(const HttpRequest& req,
                                                       const Principal& who) {
  const std::vector<std::string_view> seg = PathSegments(req.path);
  // An agent's report.
  if (seg.size() == 6 && seg[0] == "apis" && seg[1] == api::kGroup && seg[2] == "v1" &&
      seg[3] == "nodes" && seg[5] == "usage") {
    const std::string node(seg[4]);
    if (req.method != "PUT") {
      return Reply(405, "application/json",
                   StatusJson(405, "MethodNotAllowed",
                              "a node's usage is reported with PUT and read through "
                              "metrics.k8s.io (kubectl top)"));
    }
    if (who.role != Principal::Role::kAgent || who.node != node) {
      return Error(PermissionDenied("only node " + node + "'s agent reports its usage"));
    }
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) return Error(InvalidArgument("body: not JSON"));
    if (Status s = usage_.Put(node, body, clock_()); !s.ok()) return Error(s);
    return Json(200, {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}});
  }

  if (seg.size() < 4 || seg[0] != "apis" || seg[1] != api::kMetricsGroup ||
      seg[2] != api::kMetricsVersion) {
    return std::nullopt;
  }
  if (req.method != "GET") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "metrics.k8s.io is read with GET"));
  }
  auto selector = SelectorOf(req);
  if (!selector.ok()) return Error(selector.status());
  const int64_t now = clock_();

  if (seg[3] == "nodes" && seg.size() <= 5) {
    std::optional<std::string> name;
    if (seg.size() == 5) name = std::string(seg[4]);
    if (Status s = Authorize(who, *api::FindKind("Node"), std::nullopt, name, Verb::kRead);
        !s.ok()) {
      return Error(s);
    }
    auto fields = FieldSelectorOf(req);
    if (!fields.ok()) return Error(fields.status());
    auto nodes = objects_.List("Node");
    if (!nodes.ok()) return Error(nodes.status());
    json items = json::array();
    for (const StoredJson& n : *nodes) {
      const std::string node = Str(Member(n.obj(), "metadata"), "name");
      if (name && node != *name) continue;
      auto report = usage_.Get(node, now);
      if (!report || !Selected(*selector, *fields, n.obj())) continue;
      items.push_back(api::NodeMetrics(n.obj(), report->node));
    }
    if (name) {
      if (items.empty()) {
        return Error(NotFound("nodemetrics.metrics.k8s.io \"" + *name + "\" not found"));
      }
      return Json(200, items[0]);
    }
    return Json(200, api::MetricsList("NodeMetrics", std::move(items)));
  }

  std::optional<std::string> ns, name;
  if (seg[3] == "pods" && seg.size() == 4) {
    // every namespace
  } else if (seg[3] == "namespaces" && seg.size() >= 6 && seg.size() <= 7 && seg[5] == "pods") {
    ns = std::string(seg[4]);
    if (seg.size() == 7) name = std::string(seg[6]);
  } else {
    return Error(NotFound("the server could not find the requested resource"));
  }
  if (Status s = Authorize(who, *api::FindKind("Job"), ns, std::nullopt, Verb::kRead); !s.ok()) {
    return Error(s);
  }
  auto fields = FieldSelectorOf(req, {"spec.nodeName", "status.phase"});
  if (!fields.ok()) return Error(fields.status());
  auto jobs = objects_.List("Job");
  if (!jobs.ok()) return Error(jobs.status());
  std::map<std::string, std::optional<UsageBook::Report>> reports;  // by node, each read once
  json items = json::array();
  for (const StoredJson& j : *jobs) {
    const json& meta = Member(j.obj(), "metadata");
    const std::string job_ns = Str(meta, "namespace");
    if (ns && job_ns != *ns) continue;
    json served = j.obj();
    served["metadata"]["resourceVersion"] = std::to_string(j.version);
    for (const json& pod : api::JobPods(served)) {
      if (name && Str(Member(pod, "metadata"), "name") != *name) continue;
      const std::string node = Str(Member(pod, "spec"), "nodeName");
      if (node.empty() || Str(Member(pod, "status"), "phase") != "Running") continue;
      if (!Selected(*selector, *fields, pod)) continue;
      auto [it, fresh] = reports.try_emplace(node);
      if (fresh) it->second = usage_.Get(node, now);
      if (!it->second) continue;
      const auto usage =
          it->second->pods.find(job_ns + "/" + Str(meta, "name") + "/" + api::TesseraPodName(pod));
      if (usage == it->second->pods.end()) continue;
      items.push_back(api::PodMetrics(pod, usage->second));
    }
  }
  if (name) {
    if (items.empty()) {
      return Error(NotFound("podmetrics.metrics.k8s.io \"" + *ns + "/" + *name + "\" not found"));
    }
    return Json(200, items[0]);
  }
  return Json(200, api::MetricsList("PodMetrics", std::move(items)));
}

}  // namespace tessera::server
