// core/v1 Services: Tessera has none. A pod shares its node's network (its ports are at the
// node's address, status.hostIP), so there is nothing to route. Services are listed, got and
// watched (always none: `kubectl cluster-info` lists those of kube-system, `kubectl get svc`
// says there are none) and every write is refused saying why, rather than the kind being
// unknown.
#include "api/kinds.h"
#include "api/kube_table.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

// kube-apiserver's columns for Services.
json ServiceColumns() {
  json out = json::array();
  for (const char* name : {"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"}) {
    out.push_back(
        {{"name", name}, {"type", "string"}, {"format", ""}, {"description", ""}, {"priority", 0}});
  }
  return out;
}

}  // namespace

std::optional<HttpResponse> ApiServer::Services(const HttpRequest& req, const Principal& who,
                                                std::string_view rest) {
  // /services, or /namespaces/{ns}/services[/{name}]
  const std::vector<std::string_view> parts = PathSegments(rest);
  std::optional<std::string> ns, name;
  size_t i = 0;
  if (parts.size() >= 3 && parts[0] == "namespaces") {
    ns = std::string(parts[1]);
    i = 2;
  }
  if (parts.size() <= i || parts[i] != "services") return std::nullopt;
  if (parts.size() > i + 2) {
    return Error(NotFound("services have no subresources here: Tessera has no Services"));
  }
  if (parts.size() == i + 2) {
    if (!ns) return Error(NotFound("a Service is addressed under /namespaces/{namespace}/"));
    name = std::string(parts[i + 1]);
  }
  if (ns) {
    if (Status s = api::ValidateName(*ns, true, "namespace"); !s.ok()) return Error(s);
  }
  if (req.method != "GET") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "Tessera has no Services: a pod shares its node's network, so the "
                            "ports it listens on are reached at its node's address "
                            "(status.hostIP; kubectl get pod -o wide)"));
  }
  // Read as any namespaced object: a namespace token in its own namespace only.
  if (Status s = Authorize(who, *api::FindKind("Job"), ns, std::nullopt, Verb::kRead); !s.ok()) {
    return Error(s);
  }
  if (name) return Error(NotFound("services \"" + *name + "\" not found"));
  if (Watching(req)) {
    // Nothing ever changes: the watch stays open (with its bookmarks) until it times out.
    WatchRender none = [](const char*, const store::StoredObject&, std::string*) {};
    return Watch(
        req, "Namespace", std::nullopt, std::nullopt, std::move(none),
        {{"apiVersion", "v1"}, {"kind", "Service"}}, std::nullopt, [] {
          return Result<std::vector<store::StoredObject>>(std::vector<store::StoredObject>());
        });
  }
  const json meta = {{"resourceVersion", std::to_string(store_->Revision())}};
  if (api::WantsTable(req.accept)) {
    return TableReply(req, {{"kind", "Table"},
                            {"apiVersion", "meta.k8s.io/v1"},
                            {"metadata", meta},
                            {"columnDefinitions", ServiceColumns()},
                            {"rows", json::array()}});
  }
  return Json(200, {{"kind", "ServiceList"},
                    {"apiVersion", "v1"},
                    {"metadata", meta},
                    {"items", json::array()}});
}

}  // namespace tessera::server
