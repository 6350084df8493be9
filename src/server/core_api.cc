// The core group (/api/v1) beyond the Kubernetes kinds' views: core/v1 nodes as Kubernetes serves
// them (kubectl get nodes, describe, cordon, label, taint), made from the Tessera Nodes, their
// Leases and the sharing configs that reach their GPUs; services are sent on to services.cc.
#include <algorithm>

#include "api/json_read.h"
#include "api/kinds.h"
#include "api/kube_node.h"
#include "api/kube_table.h"
#include "api/patch.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

json ApiServer::WithLease(json node) {
  auto lease = ReadJson(*store_, {"Lease", "", Str(Member(node, "metadata"), "name")});
  const bool stored = lease.ok() && lease->is_object();
  const int64_t beat = leases_.LastBeat(node, stored ? &*lease : nullptr);
  if (beat >= 0) node["status"]["heartbeat"] = FormatTime(beat);
  return node;
}

HttpResponse ApiServer::Core(const HttpRequest& req, const Principal& who) {
  const std::string_view rest =
      std::string_view(req.path).substr(std::string_view("/api/v1").size());
  if (auto services = Services(req, who, rest)) return *std::move(services);
  const bool list = rest == "/nodes";
  const bool one =
      rest.starts_with("/nodes/") && rest.find('/', 7) == std::string_view::npos && rest.size() > 7;
  if (!list && !one) {
    return Error(NotFound("the server could not find the requested resource (" + req.path +
                          "); the core group serves nodes"));
  }
  const api::KindInfo& kind = *api::FindKind("Node");
  const std::optional<std::string> name =
      one ? std::optional<std::string>(std::string(rest.substr(7))) : std::nullopt;
  if (one && (req.method == "PATCH" || req.method == "PUT")) return NodeChange(req, who, *name);
  if (req.method != "GET") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "core/v1 nodes are views of tessera.io/v1 Nodes: get, list, watch, "
                            "and PATCH or PUT of labels, annotations, unschedulable and taints "
                            "(kubectl cordon, label, taint); method " +
                                req.method + " is not allowed here"));
  }
  if (Status s = Authorize(who, kind, std::nullopt, name, Verb::kRead); !s.ok()) return Error(s);
  const int64_t now = clock_();
  if (one) {
    const store::ObjectKey key{"Node", "", *name};
    auto got = store_->Get(key);
    if (!got.ok()) return Error(got.status());
    if (!got->has_value()) return Error(NotFound("nodes \"" + *name + "\" not found"));
    json node = api::KubeNode(WithLease(Served(**got)), now, node_grace_ms_, SharingConfigs());
    if (api::WantsTable(req.accept)) {
      return TableReply(req, api::NodeTable({node}, std::to_string((*got)->version), now));
    }
    return Json(200, node);
  }
  auto selector = SelectorOf(req);
  if (!selector.ok()) return Error(selector.status());
  auto fields = FieldSelectorOf(req);
  if (!fields.ok()) return Error(fields.status());
  if (Watching(req)) {
    WatchRender render = [this, sel = *selector, fs = *fields, table = api::WantsTable(req.accept),
                          include = IncludeObject(req)](
                             const char* type, const store::StoredObject& o, std::string* out) {
      const int64_t at = clock_();
      json node = api::KubeNode(WithLease(Served(o)), at, node_grace_ms_, SharingConfigs());
      if (!Selected(sel, fs, node)) return;
      if (table) {
        node = api::NodeTable({node}, std::to_string(o.version), at);
        api::IncludeObjects(include, &node);
      }
      *out += json{{"type", type}, {"object", std::move(node)}}.dump();
      *out += '\n';
    };
    return Watch(
        req, "Node", std::nullopt, std::nullopt, std::move(render),
        api::WantsTable(req.accept) ? json() : json{{"apiVersion", "v1"}, {"kind", "Node"}});
  }
  auto stored = store_->List("Node", std::nullopt);
  if (!stored.ok()) return Error(stored.status());
  std::vector<json> nodes;
  const std::vector<api::GpuSharingConfigSpec> sharing = SharingConfigs();
  for (const store::StoredObject& o : *stored) {
    json node = api::KubeNode(WithLease(Served(o)), now, node_grace_ms_, sharing);
    if (!Selected(*selector, *fields, node)) continue;
    nodes.push_back(std::move(node));
  }
  const std::string version = std::to_string(store_->Revision());
  if (api::WantsTable(req.accept)) return TableReply(req, api::NodeTable(nodes, version, now));
  return Json(200, {{"kind", "NodeList"},
                    {"apiVersion", "v1"},
                    {"metadata", {{"resourceVersion", version}}},
                    {"items", std::move(nodes)}});
}

std::vector<api::GpuSharingConfigSpec> ApiServer::SharingConfigs() {
  std::vector<api::GpuSharingConfigSpec> out;
  auto stored = store_->List("GpuSharingConfig", std::nullopt);
  if (!stored.ok()) return out;
  for (const store::StoredObject& o : *stored) {
    if (auto c = api::DecodeGpuSharingConfig(json::parse(o.body)); c.ok()) {
      out.push_back(std::move(c).value());
    }
  }
  return out;
}

HttpResponse ApiServer::NodeChange(const HttpRequest& req, const Principal& who,
                                   const std::string& name) {
  if (who.role != Principal::Role::kAdmin) {
    return Error(PermissionDenied("a node's labels, cordon and taints are the admin's"));
  }
  const store::ObjectKey key{"Node", "", name};
  auto got = store_->Get(key);
  if (!got.ok()) return Error(got.status());
  if (!got->has_value()) return Error(NotFound("nodes \"" + name + "\" not found"));
  const json stored = Served(**got);
  const json view = api::KubeNode(stored, clock_(), node_grace_ms_, SharingConfigs());
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  json changed;
  if (req.method == "PATCH") {
    auto type = api::PatchTypeOf(req.content_type);
    if (!type.ok()) {
      return Reply(415, "application/json",
                   StatusJson(415, "UnsupportedMediaType", type.status().message()));
    }
    auto patched = api::ApplyPatch(view, *body, *type);
    if (!patched.ok()) return Error(patched.status());
    changed = std::move(patched).value();
  } else {
    changed = std::move(body).value();
    const std::string rv = Str(Member(changed, "metadata"), "resourceVersion");
    if (!rv.empty() && rv != std::to_string((*got)->version)) {
      return Error(Conflict("Operation cannot be fulfilled on nodes \"" + name +
                            "\": the object has been modified; please apply your changes to "
                            "the latest version and try again"));
    }
  }
  auto next = api::NodeWithKubeChanges(stored, view, changed);
  if (!next.ok()) return Error(next.status());
  if (Status s = CheckObject(*next); !s.ok()) return Error(s);
  store::Write w{store::Write::Op::kPut, key, "", (*got)->version};
  StoredRead read(*store_, key, *got, &plane_.objects());  // the version the change was made from
  if (Status s = KeepSystemFields(who, &*next, &w, read); !s.ok()) return Error(s);
  // A server dry run (kubectl taint/cordon --dry-run=server) answers what would be written.
  if (DryRun(req)) {
    return Json(200, api::KubeNode(WithLease(Served({key, (*got)->version, w.body})), clock_(),
                                   node_grace_ms_, SharingConfigs()));
  }
  auto r = Commit(std::span<const store::Write>(&w, 1));
  if (!r.ok()) return Error(r.status());
  return Json(200, api::KubeNode(WithLease(Served({key, (*r)[0], w.body})), clock_(),
                                 node_grace_ms_, SharingConfigs()));
}

}  // namespace tessera::server
