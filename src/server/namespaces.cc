// Namespaces as Kubernetes shows them: those written as objects, those that hold objects, and
// default. They are read, watched and deleted (with everything in them) here.
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "api/json_read.h"
#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/kube_table.h"
#include "api/object.h"
#include "api/time.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

// A namespace as core/v1 shows it: the one written (`written`, stored), or one in use.
json NamespaceView(const std::string& name, const store::StoredObject* written) {
  if (written == nullptr) return api::KubeNamespace(name);
  return api::KubeObject(*api::FindKubeKind("", "v1", "namespaces"), Served(*written));
}

}  // namespace

Result<std::vector<store::StoredObject>> ApiServer::NamespaceContents(const std::string& ns) {
  std::vector<store::StoredObject> out;
  for (const api::KindInfo& k : api::Kinds()) {
    if (!k.namespaced) continue;
    auto list = store_->List(std::string(k.kind),
                             ns.empty() ? std::nullopt : std::optional<std::string_view>(ns));
    if (!list.ok()) return list.status();
    for (store::StoredObject& o : *list) out.push_back(std::move(o));
  }
  return out;
}

Result<json> ApiServer::ImplicitNamespace(const std::string& name) {
  if (name == "default") return api::KubeNamespace(name);
  auto inside = NamespaceContents(name);
  if (!inside.ok()) return inside.status();
  return inside->empty() ? json() : api::KubeNamespace(name);
}

Result<std::vector<store::StoredObject>> ApiServer::NamespaceViews(const Principal& who) {
  const bool admin = who.role == Principal::Role::kAdmin;
  std::set<std::string> names = {admin ? "default" : who.ns};
  auto stored = store_->List("Namespace", std::nullopt);
  if (!stored.ok()) return stored.status();
  std::map<std::string, const store::StoredObject*> held;
  for (const store::StoredObject& o : *stored) held[o.key.name] = &o;
  if (admin) {
    auto all = NamespaceContents("");
    if (!all.ok()) return all.status();
    for (const store::StoredObject& o : *all) names.insert(o.key.ns);
    for (const auto& [n, o] : held) names.insert(n);
  }
  std::vector<store::StoredObject> out;
  for (const std::string& n : names) {
    auto it = held.find(n);
    out.push_back({{"Namespace", "", n},
                   0,
                   NamespaceView(n, it == held.end() ? nullptr : it->second).dump()});
  }
  return out;
}

HttpResponse ApiServer::WatchNamespaces(const HttpRequest& req, const Principal& who) {
  const api::KubeKind& kind = *api::FindKubeKind("", "v1", "namespaces");
  auto selector = SelectorOf(req);
  if (!selector.ok()) return Error(selector.status());
  auto fields = FieldSelectorOf(req);
  if (!fields.ok()) return Error(fields.status());
  const bool admin = who.role == Principal::Role::kAdmin;
  const std::string own = who.ns;
  // The namespaces there are now, as views (version 0).
  auto now = NamespaceViews(who);
  if (!now.ok()) return Error(now.status());
  // The namespaces this watch has shown, so that the first object in one adds it and the last
  // one out of it (of one neither written nor default) deletes it.
  auto shown = std::make_shared<std::set<std::string>>();
  for (const store::StoredObject& o : *now) shown->insert(o.key.name);
  WatchRender render = [this, &kind, admin, own, shown, sel = *selector, fs = *fields,
                        table = api::WantsTable(req.accept), include = IncludeObject(req)](
                           const char* type, const store::StoredObject& o, std::string* out) {
    const bool written = o.key.kind == "Namespace";
    const std::string n = written ? o.key.name : o.key.ns;
    if (n.empty() || (!admin && n != own)) return;
    auto emit = [&](const char* t, json ns) {
      if (!Selected(sel, fs, ns)) return;
      if (table) {
        ns = api::KubeTable(kind, {ns}, std::to_string(o.version), clock_());
        api::IncludeObjects(include, &ns);
      }
      *out += json{{"type", t}, {"object", std::move(ns)}}.dump();
      *out += '\n';
    };
    const bool deleted = std::strcmp(type, "DELETED") == 0;
    if (deleted) {
      // Gone when nothing holds it: not written, not default, and empty.
      if (!shown->contains(n) || n == "default") return;
      auto held = written ? Result<std::optional<store::StoredObject>>(std::nullopt)
                          : store_->Get({"Namespace", "", n});
      auto inside = NamespaceContents(n);
      if (!held.ok() || !inside.ok() || held->has_value() || !inside->empty()) return;
      shown->erase(n);
      return emit("DELETED", NamespaceView(n, written ? &o : nullptr));
    }
    // The initial state comes as views already made (version 0), each one ADDED.
    if (o.version == 0) return emit("ADDED", json::parse(o.body));
    const bool added = shown->insert(n).second;
    if (!written && !added) return;  // one more object in a namespace already shown
    emit(added ? "ADDED" : "MODIFIED", NamespaceView(n, written ? &o : nullptr));
  };
  // A watch from now starts with the namespaces there are now.
  InitialObjects initial = [now = std::move(*now)]() -> Result<std::vector<store::StoredObject>> {
    return now;
  };
  return Watch(
      req, "", std::nullopt, std::nullopt, std::move(render),
      api::WantsTable(req.accept) ? json() : json{{"apiVersion", "v1"}, {"kind", "Namespace"}},
      std::nullopt, std::move(initial));
}

HttpResponse ApiServer::Namespaces(const HttpRequest& req, const Principal& who,
                                   const std::optional<std::string>& name) {
  if (req.method != "GET" && !(req.method == "DELETE" && name)) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "method " + req.method + " is not allowed on " + req.path));
  }
  if (Watching(req)) {
    if (name) return Error(InvalidArgument("watch: a namespace is watched by list, not by name"));
    return WatchNamespaces(req, who);
  }
  const api::KubeKind& kind = *api::FindKubeKind("", "v1", "namespaces");
  const bool admin = who.role == Principal::Role::kAdmin;
  if (name) {
    if (Status s = api::ValidateName(*name, true, "metadata.name"); !s.ok()) return Error(s);
    if (!admin && *name != who.ns) {
      return Error(PermissionDenied("this token is limited to namespace " + who.ns));
    }
    // Written as an object, or not.
    auto held = store_->Get({"Namespace", "", *name});
    if (!held.ok()) return Error(held.status());
    const store::StoredObject* written = held->has_value() ? &**held : nullptr;
    auto inside = NamespaceContents(*name);
    if (!inside.ok()) return Error(inside.status());
    // A namespace is there when it was written, holds objects, or is default (or the token's).
    if (written == nullptr && inside->empty() && *name != "default" && *name != who.ns) {
      return Error(NotFound("namespaces \"" + *name + "\" not found"));
    }
    if (req.method == "GET") return Json(200, NamespaceView(*name, written));
    if (!admin) {
      return Error(PermissionDenied("a namespace token may not delete its namespace"));
    }
    if (*name == "default" || *name == "kube-system" || *name == "kube-public") {
      return Error(PermissionDenied("namespaces \"" + *name +
                                    "\" is forbidden: this namespace may not be deleted"));
    }
    // The namespace and everything in it, in one write.
    std::vector<store::Write> writes;
    for (const store::StoredObject& o : *inside) {
      writes.push_back({store::Write::Op::kDelete, o.key, "", o.version});
    }
    if (written != nullptr) {
      writes.push_back({store::Write::Op::kDelete, written->key, "", written->version});
    }
    json gone = NamespaceView(*name, written);
    if (!DryRun(req)) {
      auto r = Commit(writes);
      if (!r.ok()) return Error(r.status());
    }
    gone["metadata"]["deletionTimestamp"] = FormatTime(clock_());
    gone["status"]["phase"] = "Terminating";
    return Json(200, gone);
  }
  // Those written, those in use, and default.
  auto all = NamespaceViews(who);
  if (!all.ok()) return Error(all.status());
  auto selector = SelectorOf(req);
  if (!selector.ok()) return Error(selector.status());
  auto fields = FieldSelectorOf(req);
  if (!fields.ok()) return Error(fields.status());
  std::vector<json> items;
  for (const store::StoredObject& o : *all) {
    json ns = json::parse(o.body);
    if (!Selected(*selector, *fields, ns)) continue;
    items.push_back(std::move(ns));
  }
  const std::string version = std::to_string(store_->Revision());
  if (api::WantsTable(req.accept)) {
    return TableReply(req, api::KubeTable(kind, items, version, clock_()));
  }
  return Json(200, {{"kind", "NamespaceList"},
                    {"apiVersion", "v1"},
                    {"metadata", {{"resourceVersion", version}}},
                    {"items", std::move(items)}});
}

}  // namespace tessera::server
