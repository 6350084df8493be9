// The Kubernetes, Kueue and Volcano kinds at their own API groups: each request is translated
// to and from the Tessera objects the kind's manifests make (api/manifest.h, api/kube_kinds.h),
// and written through the same checks as every other write.
#include <algorithm>
#include <map>
#include <set>

#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kube_kinds.h"
#include "api/kube_table.h"
#include "api/manifest.h"
#include "api/patch.h"
#include "api/queue_views.h"
#include "server/api_common.h"
#include "server/api_server.h"

namespace tessera::server {

using api::Member;
using api::Str;
using nlohmann::json;

namespace {

// A parsed path of a served Kubernetes kind: /api/v1/... or /apis/{group}/{version}/..., then
// [namespaces/{ns}/]{plural}[/{name}].
struct KubeRoute {
  const api::KubeKind* kind = nullptr;
  std::optional<std::string> ns;
  std::optional<std::string> name;
  bool log = false;       // pods/{name}/log
  bool eviction = false;  // pods/{name}/eviction
  bool exec = false;      // pods/{name}/exec
  bool attach = false;    // pods/{name}/attach
  bool status = false;    // {plural}/{name}/status: the object, read (Tessera writes status)
};

// nullopt when the path names no served Kubernetes kind; an error for a malformed one.
std::optional<Result<KubeRoute>> ParseKubeRoute(std::string_view path) {
  const std::vector<std::string_view> parts = PathSegments(path);
  size_t i = 0;
  std::string_view group, version;
  if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
    version = "v1";
    i = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis" && parts[1] != api::kGroup) {
    group = parts[1];
    version = parts[2];
    i = 3;
  } else {
    return std::nullopt;
  }
  KubeRoute r;
  if (parts[i] == "namespaces" && parts.size() >= i + 3) {
    if (Status s = api::ValidateName(parts[i + 1], true, "namespace"); !s.ok()) {
      return Result<KubeRoute>(s);
    }
    r.ns = std::string(parts[i + 1]);
    i += 2;
  }
  r.kind = api::FindKubeKind(group, version, parts[i]);
  if (r.kind == nullptr) return std::nullopt;
  if (i + 1 < parts.size()) r.name = std::string(parts[i + 1]);
  const std::string plural(r.kind->plural);
  if (i + 2 < parts.size()) {
    const bool pod_sub = r.kind->kind == "Pod" && i + 3 == parts.size();
    r.log = pod_sub && parts[i + 2] == "log";
    r.eviction = pod_sub && parts[i + 2] == "eviction";
    r.exec = pod_sub && parts[i + 2] == "exec";
    r.attach = pod_sub && parts[i + 2] == "attach";
    r.status = parts[i + 2] == "status" && i + 3 == parts.size();
    if (pod_sub && parts[i + 2] == "portforward") {
      // Pods share their node's network: what a pod listens on is at its node's address.
      return Result<KubeRoute>(InvalidArgument(
          "pods/portforward is not served: a pod shares its node's network, so the ports it "
          "listens on are reached at its node's address (status.hostIP; kubectl get pod -o "
          "wide); `tessera exec` runs commands in it"));
    }
    if (!r.log && !r.eviction && !r.exec && !r.attach && !r.status) {
      return Result<KubeRoute>(
          NotFound(plural + " has no subresource \"" + std::string(parts[i + 2]) + "\" here"));
    }
  }
  if (r.ns && !r.kind->namespaced) {
    return Result<KubeRoute>(NotFound(plural + " are cluster-scoped: no namespace in the path"));
  }
  if (r.name && r.kind->namespaced && !r.ns) {
    return Result<KubeRoute>(NotFound("a namespaced " + std::string(r.kind->kind) +
                                      " is addressed under /namespaces/{namespace}/"));
  }
  return Result<KubeRoute>(std::move(r));
}

// `plural "name"`, as Kubernetes' messages name an object.
std::string Named(const api::KubeKind& kind, const std::string& name) {
  std::string out(kind.plural);
  if (!kind.group.empty()) out += "." + std::string(kind.group);
  return out + " \"" + name + "\"";
}

// The stored objects made from `kind` ns/name (every name when `name` is empty), in the store's
// order; each with its version.
struct Made {
  json obj;  // served form
  store::ObjectKey key;
  int64_t version = 0;
};

// The Kubernetes kinds whose objects are each one Tessera Job of their own name, which
// Kubernetes keeps in separate name spaces: core/v1 Pods and batch/v1 Jobs.
bool SharesJobNames(const api::KubeKind& kind) {
  return (kind.group.empty() && kind.kind == "Pod") ||
         (kind.group == "batch" && kind.kind == "Job");
}

}  // namespace

bool ApiServer::NamesKubeKind(std::string_view path) { return ParseKubeRoute(path).has_value(); }

std::optional<HttpResponse> ApiServer::Kube(const HttpRequest& req, const Principal& who) {
  std::optional<Result<KubeRoute>> parsed = ParseKubeRoute(req.path);
  if (!parsed) return std::nullopt;
  if (!parsed->ok()) return Error(parsed->status());
  // Agents, join and metrics tokens act through Tessera's own paths only, where their
  // object-level rules (a node's bound Jobs) apply.
  if (who.role != Principal::Role::kAdmin && who.role != Principal::Role::kNamespace) {
    return Error(PermissionDenied(
        "the Kubernetes kinds' paths are for the admin and namespace tokens; agent, join and "
        "metrics tokens use " +
        std::string(api::kGroupPath)));
  }
  const KubeRoute route = std::move(parsed->value());
  const api::KubeKind& kind = *route.kind;
  if (kind.kind == "Command") return VolcanoCommands(req, who, route.ns, route.name);
  // Namespaces are read (with those in use) and deleted (with what is in them) on their own;
  // written as the other kinds.
  if (kind.kind == "Namespace" && (req.method == "GET" || req.method == "DELETE")) {
    return Namespaces(req, who, route.name);
  }
  const api::KindInfo& stored_kind = *api::FindKind(kind.stored);
  const std::optional<std::string> stored_ns = stored_kind.namespaced ? route.ns : std::nullopt;

  // A list's revision (ListRevision): its objects as they were then.
  std::optional<int64_t> list_at;
  auto made_from = [&](const std::string& ns,
                       const std::string& name) -> Result<std::vector<Made>> {
    auto list = ListStored(kind.stored, stored_ns, list_at);
    if (!list.ok()) return list.status();
    std::vector<Made> out;
    for (const store::StoredObject& o : *list) {
      json obj = Served(o);
      if (!api::MadeFrom(obj, kind, ns, name)) continue;
      out.push_back({std::move(obj), o.key, o.version});
    }
    return out;
  };
  // One view per source object (a ConfigMap makes several GpuSharingConfigs).
  auto views = [&](const std::vector<Made>& made) {
    std::vector<json> out;
    std::set<std::pair<std::string, std::string>> seen;
    for (const Made& m : made) {
      json v = api::KubeObject(kind, m.obj);
      const json& meta = v["metadata"];
      if (!seen.insert({Str(meta, "namespace"), Str(meta, "name")}).second) continue;
      out.push_back(std::move(v));
    }
    return out;
  };

  // The status the views of some kinds carry, computed from other objects: Kueue's queue
  // counts and flavor usage, Volcano's queue state, a PodGroup's phase. Read and write answers
  // alike, so that a write that changes nothing answers what a read does (kubectl patch then
  // says "(no change)").
  auto add_status = [&](const std::vector<Made>& made, std::vector<json>* found) -> Status {
    if (found->empty()) return Status::Ok();
    if (kind.group == "kueue.x-k8s.io" &&
        (kind.kind == "ClusterQueue" || kind.kind == "LocalQueue")) {
      return AddKueueStatus(found);
    }
    if (kind.group == "scheduling.volcano.sh" && kind.kind == "Queue") {
      std::vector<json> jobs, pod_groups;
      TESSERA_RETURN_IF_ERROR(JobsAndPodGroups(&jobs, &pod_groups));
      for (json& v : *found) {
        const auto m = std::find_if(made.begin(), made.end(), [&](const Made& x) {
          return x.key.name == Str(v["metadata"], "name");
        });
        if (m != made.end()) api::AddVolcanoQueueStatus(m->obj, jobs, pod_groups, &v);
      }
    }
    if (kind.kind == "PodGroup") {
      auto jobs =
          store_->List("Job", route.ns ? std::optional<std::string_view>(*route.ns) : std::nullopt);
      if (!jobs.ok()) return jobs.status();
      std::vector<json> job_objs;
      for (const store::StoredObject& o : *jobs) job_objs.push_back(json::parse(o.body));
      for (json& v : *found) api::AddPodGroupStatus(job_objs, &v);
    }
    return Status::Ok();
  };

  // Every Pod of the Jobs in the route's namespace (all namespaces without one), or the one
  // named `name`.
  auto all_pods = [&](const std::string& name) -> Result<std::vector<json>> {
    auto jobs = ListStored("Job", route.ns, list_at);
    if (!jobs.ok()) return jobs.status();
    std::vector<json> out;
    for (const store::StoredObject& o : *jobs) {
      for (json& pod : api::JobPods(Served(o))) {
        if (!name.empty() && Str(pod["metadata"], "name") != name) continue;
        out.push_back(std::move(pod));
      }
    }
    return out;
  };

  // Who may touch the kind at all comes first, so nothing about other namespaces leaks.
  if (Status s = Authorize(who, stored_kind, stored_ns, std::nullopt,
                           req.method == "GET"      ? Verb::kRead
                           : req.method == "DELETE" ? Verb::kDelete
                                                    : Verb::kWrite);
      !s.ok()) {
    return Error(s);
  }

  if (route.eviction) return Evict(req, *route.ns, *route.name);
  if (route.exec) return PodExec(req, who, *route.ns, *route.name);
  if (route.attach) return PodAttach(req, who, *route.ns, *route.name);
  if (route.status && req.method != "GET") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "status is Tessera's: the scheduler and the node agents write it; "
                            "it is read with GET (the whole object, as kube-apiserver serves it)"));
  }
  if (route.log) return PodLog(req, who, *route.ns, *route.name);

  if (req.method == "GET") {
    const bool one = route.name.has_value();
    auto selector = SelectorOf(req);
    if (!selector.ok()) return Error(selector.status());
    std::vector<std::string_view> extra;
    if (kind.kind == "Pod") extra = {"spec.nodeName", "status.phase"};
    if (kind.kind == "Event" && kind.group == "events.k8s.io") {
      extra = {"regarding.kind",
               "regarding.name",
               "regarding.namespace",
               "regarding.uid",
               "regarding.apiVersion",
               "reason",
               "type"};
    } else if (kind.kind == "Event") {
      extra = {"involvedObject.kind",
               "involvedObject.name",
               "involvedObject.namespace",
               "involvedObject.uid",
               "involvedObject.apiVersion",
               "reason",
               "type"};
    }
    auto fields = FieldSelectorOf(req, extra);
    if (!fields.ok()) return Error(fields.status());
    if (!one && Watching(req)) {
      // Each change of a stored object, as the changes of the views it makes.
      // kubectl get -w asks for Tables here too: each event's object is then a Table of one row.
      WatchRender render = [this, k = &kind, ns = route.ns, sel = *selector, fs = *fields,
                            table = api::WantsTable(req.accept), include = IncludeObject(req)](
                               const char* type, const store::StoredObject& o, std::string* out) {
        const json obj = Served(o);
        std::vector<json> views;
        if (k->kind == "Pod") {
          views = api::JobPods(obj);
        } else if (k->kind == "Workload") {
          if (json w = api::KueueWorkload(obj); !w.is_null()) views.push_back(std::move(w));
        } else if (k->kind == "Event") {
          // About the object the event names, as listed (a Pod's Job reads as the Pod).
          std::map<store::ObjectKey, std::optional<api::ObjectRef>> refs;
          auto e = EventView(o, &refs);
          views.push_back(e.ok() ? std::move(e).value() : api::KubeEvent(obj, nullptr));
          if (k->group == "events.k8s.io") views.back() = api::EventsV1(views.back());
        } else if (api::MadeFrom(obj, *k, ns.value_or(""), "")) {
          views.push_back(api::KubeObject(*k, obj));
        }
        for (json& v : views) {
          if (!Selected(sel, fs, v)) continue;
          if (table) {
            v = api::KubeTable(*k, {v}, std::to_string(o.version), clock_());
            api::IncludeObjects(include, &v);
          }
          *out += json{{"type", type}, {"object", std::move(v)}}.dump();
          *out += '\n';
        }
      };
      return Watch(req, std::string(kind.stored), stored_ns, std::nullopt, std::move(render),
                   api::WantsTable(req.accept)
                       ? json()
                       : json{{"apiVersion", kind.GroupVersion()}, {"kind", kind.kind}});
    }
    if (!one) {
      auto at = ListRevision(req, store_->Revision());
      if (!at.ok()) return ListReadError(at.status(), req);
      list_at = *at;
    }
    Result<std::vector<json>> found = std::vector<json>();
    if (kind.kind == "Pod") {
      found = all_pods(route.name.value_or(""));
    } else if (kind.kind == "Workload") {
      found = Workloads(route.ns, route.name.value_or(""), list_at);
    } else if (kind.kind == "Event") {
      found = EventViews(route.ns, route.name.value_or(""), list_at);
      if (found.ok() && kind.group == "events.k8s.io") {
        for (json& e : *found) e = api::EventsV1(e);
      }
    } else {
      auto made = made_from(route.ns.value_or(""), route.name.value_or(""));
      if (!made.ok()) return list_at ? ListReadError(made.status(), req) : Error(made.status());
      found = views(*made);
      if (Status s = add_status(*made, &*found); !s.ok()) return Error(s);
    }
    if (!found.ok()) return list_at ? ListReadError(found.status(), req) : Error(found.status());
    std::vector<json> items;
    for (json& v : *found) {
      if (!Selected(*selector, *fields, v)) continue;
      items.push_back(std::move(v));
    }
    if (one && items.empty()) return Error(NotFound(Named(kind, *route.name) + " not found"));
    const std::string version = one ? Str(items[0]["metadata"], "resourceVersion")
                                    : std::to_string(list_at ? *list_at : store_->Revision());
    json meta = {{"resourceVersion", version}};
    if (!one) {
      if (Status s = Paginate(req, &items, &meta); !s.ok()) return Error(s);
    }
    if (api::WantsTable(req.accept)) {
      json table = api::KubeTable(kind, items, version, clock_());
      table["metadata"] = meta;
      return TableReply(req, std::move(table));
    }
    if (one) return Json(200, items[0]);
    return Json(200, {{"kind", std::string(kind.kind) + "List"},
                      {"apiVersion", kind.GroupVersion()},
                      {"metadata", std::move(meta)},
                      {"items", std::move(items)}});
  }

  if (!kind.writable) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            std::string(kind.plural) + " are read-only views of " +
                                std::string(kind.stored) + "s, which Tessera writes"));
  }
  // A Pod of a Job made from another kind is changed through that object.
  if (kind.kind == "Pod" && route.name && req.method != "POST") {
    auto made = made_from(*route.ns, *route.name);
    if (!made.ok()) return Error(made.status());
    auto pods = all_pods(*route.name);
    if (!pods.ok()) return Error(pods.status());
    if (made->empty() && !pods->empty()) {
      const json& owner = Member(Member((*pods)[0], "metadata"), "ownerReferences")[0];
      return Reply(405, "application/json",
                   StatusJson(405, "MethodNotAllowed",
                              "pod " + *route.name + " is one of the pods of " +
                                  Str(owner, "kind") + " " + Str(owner, "name") + " (" +
                                  Str(owner, "apiVersion") + "): change or delete that instead"));
    }
  }

  if (req.method == "DELETE") {
    // Pods belong to their Job here: there is nothing to orphan them to.
    std::string policy;
    if (auto it = req.query.find("propagationPolicy"); it != req.query.end()) policy = it->second;
    if (auto options = api::ParseJson(req.body); options.ok() && options->is_object()) {
      if (Str(*options, "propagationPolicy") != "") policy = Str(*options, "propagationPolicy");
      if (Member(*options, "orphanDependents") == true) policy = "Orphan";
    }
    if (policy == "Orphan") {
      return Error(InvalidArgument(
          "propagationPolicy: Orphan is not possible: a job's pods go with it (use Background "
          "or Foreground)"));
    }
    if (!route.name) {
      // deletecollection: every object the selectors match (metadata.name/namespace for
      // fields), in one write; the answer lists them.
      auto selector = SelectorOf(req);
      if (!selector.ok()) return Error(selector.status());
      auto fields = FieldSelectorOf(req, {});
      if (!fields.ok()) return Error(fields.status());
      auto made = made_from(route.ns.value_or(""), "");
      if (!made.ok()) return Error(made.status());
      std::vector<store::Write> writes;
      std::vector<json> deleted;
      std::map<std::pair<std::string, std::string>, bool> matched;
      for (const Made& m : *made) {
        json v = api::KubeObject(kind, m.obj);
        const json& meta = v["metadata"];
        auto [it, fresh] = matched.try_emplace({Str(meta, "namespace"), Str(meta, "name")}, false);
        if (fresh) {
          it->second = Selected(*selector, *fields, v);
          if (it->second) deleted.push_back(std::move(v));
        }
        if (!it->second) continue;
        if (Status s = Authorize(who, stored_kind, stored_ns, m.key.name, Verb::kDelete); !s.ok()) {
          return Error(s);
        }
        writes.push_back({store::Write::Op::kDelete, m.key, "", m.version});
      }
      if (!writes.empty() && !DryRun(req)) {
        auto r = Commit(writes);
        if (!r.ok()) return Error(r.status());
      }
      return Json(200, {{"kind", std::string(kind.kind) + "List"},
                        {"apiVersion", kind.GroupVersion()},
                        {"metadata", {{"resourceVersion", std::to_string(store_->Revision())}}},
                        {"items", std::move(deleted)}});
    }
    auto made = made_from(route.ns.value_or(""), *route.name);
    if (!made.ok()) return Error(made.status());
    if (made->empty()) return Error(NotFound(Named(kind, *route.name) + " not found"));
    std::vector<store::Write> writes;
    for (const Made& m : *made) {
      if (Status s = Authorize(who, stored_kind, stored_ns, m.key.name, Verb::kDelete); !s.ok()) {
        return Error(s);
      }
      writes.push_back({store::Write::Op::kDelete, m.key, "", m.version});
    }
    const json view = views(*made)[0];
    if (!DryRun(req)) {
      auto r = Commit(writes);
      if (!r.ok()) return Error(r.status());
    }
    return Json(200, {{"kind", "Status"},
                      {"apiVersion", "v1"},
                      {"status", "Success"},
                      {"details",
                       {{"name", *route.name},
                        {"group", kind.group},
                        {"kind", kind.plural},
                        {"uid", Str(view["metadata"], "uid")}}}});
  }

  if (!(req.method == "POST" && !route.name) && !(req.method == "PUT" && route.name) &&
      !(req.method == "PATCH" && route.name)) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "method " + req.method + " is not allowed on " + req.path));
  }
  std::optional<api::PatchType> patch_type;
  if (req.method == "PATCH") {
    auto type = api::PatchTypeOf(req.content_type, /*apply_served=*/true);
    if (!type.ok()) {
      return Reply(415, "application/json",
                   StatusJson(415, "UnsupportedMediaType", type.status().message()));
    }
    patch_type = *type;
  }
  // Server-side apply: the manager's whole intent, merged with what others own.
  const bool apply = patch_type == api::PatchType::kApply;
  const auto named_manager = req.query.find("fieldManager");
  const std::string manager = named_manager != req.query.end()
                                  ? named_manager->second
                                  : api::DefaultManager(req.user_agent);
  if (named_manager != req.query.end()) {
    if (Status s = api::ValidateManager(manager); !s.ok()) return Error(s);
  } else if (apply) {
    return Error(InvalidArgument("fieldManager: is required for apply patch"));
  }
  if (req.query.contains("force") && !apply) {
    return Error(InvalidArgument("force: may not be specified for non-apply patch"));
  }
  const bool force = QueryFlag(req, "force");
  const std::string ns = route.ns.value_or("");
  // The document to write: the body (create, replace), the patched current view, or the
  // applied configuration merged into the current document.
  std::vector<Made> before;
  json doc;
  std::optional<std::vector<api::ManagedEntry>> applied;
  bool create = req.method == "POST";
  if (create) {
    auto body = api::ParseJson(req.body);
    if (!body.ok()) return Error(body.status());
    doc = std::move(body).value();
  } else {
    auto made = made_from(ns, *route.name);
    if (!made.ok()) return Error(made.status());
    before = std::move(made).value();
    if (apply) {
      auto config = api::ParseApplyConfiguration(req.body);
      if (!config.ok()) return Error(config.status());
      if (!config->contains("apiVersion")) (*config)["apiVersion"] = kind.GroupVersion();
      if (!config->contains("kind")) (*config)["kind"] = kind.kind;
      create = before.empty();
      // As kube-apiserver: a uid is a precondition, which an object not there fails.
      if (create && !Str(Member(*config, "metadata"), "uid").empty()) {
        return Error(Conflict(Named(kind, *route.name) + " does not exist: metadata.uid " +
                              Str(Member(*config, "metadata"), "uid") + " does not match"));
      }
      const json live = create ? json() : api::SourceOf(before[0].obj);
      api::Applied a = api::Apply(
          live, *config, create ? std::vector<api::ManagedEntry>() : api::ManagedOf(before[0].obj),
          manager, kind.GroupVersion(), FormatTime(clock_()), force);
      if (!a.conflicts.empty()) {
        json status = json::parse(StatusJson(409, "Conflict", api::ConflictMessage(a.conflicts)));
        json causes = json::array();
        for (const api::FieldConflict& c : a.conflicts) {
          causes.push_back(
              {{"type", "FieldManagerConflict"},
               {"message", "conflict with \"" + c.manager + "\"" +
                               (c.api_version.empty() ? "" : " using " + c.api_version)},
               {"field", c.field}});
        }
        status["details"] = {{"name", *route.name},
                             {"group", kind.group},
                             {"kind", kind.plural},
                             {"causes", std::move(causes)}};
        return Reply(409, "application/json", status.dump());
      }
      doc = std::move(a.object);
      applied = std::move(a.managed);
    } else {
      // What is there: the object, or a namespace in use that was never written (which this
      // write then creates).
      json current;
      if (!before.empty()) {
        current = views(before)[0];
      } else if (kind.kind == "Namespace") {
        auto implicit = ImplicitNamespace(*route.name);
        if (!implicit.ok()) return Error(implicit.status());
        current = std::move(implicit).value();
        create = !current.is_null();
      }
      if (current.is_null()) return Error(NotFound(Named(kind, *route.name) + " not found"));
      auto body = api::ParseJson(req.body);
      if (!body.ok()) return Error(body.status());
      if (patch_type) {
        auto patched = api::ApplyPatch(current, *body, *patch_type);
        if (!patched.ok()) return Error(patched.status());
        doc = std::move(patched).value();
      } else {
        doc = std::move(body).value();
      }
    }
  }
  if (!doc.is_object()) return Error(InvalidArgument("body: must be an object"));
  // What the server set and a client sends back from what it read (kubectl edit, replace, or
  // the view a patch applies to) is the server's, not the client's say.
  if (req.method != "POST") {
    doc.erase("status");
    if (doc["metadata"].is_object()) {
      for (const char* k :
           {"uid", "creationTimestamp", "generation", "managedFields", "selfLink"}) {
        doc["metadata"].erase(k);
      }
    }
    // A placed Pod's spec.nodeName is the scheduler's (the view says where it runs): sent back
    // as it was read, it does not ask to pin the pod there (it made labelling a running pod
    // fail as a change of its node selector).
    if (kind.kind == "Pod" && !before.empty() && Member(doc, "spec").is_object()) {
      const json& sent = Member(doc["spec"], "nodeName");
      if (sent.is_string() &&
          !Member(Member(api::SourceOf(before[0].obj), "spec"), "nodeName").is_string() &&
          sent == Member(Member(views(before)[0], "spec"), "nodeName")) {
        doc["spec"].erase("nodeName");
      }
    }
  }
  // As kube-apiserver: a body without apiVersion and kind is of the path's kind.
  if (!doc.contains("apiVersion")) doc["apiVersion"] = kind.GroupVersion();
  if (!doc.contains("kind")) doc["kind"] = kind.kind;
  if (Str(doc, "apiVersion") != kind.GroupVersion() || Str(doc, "kind") != kind.kind) {
    return Error(InvalidArgument("apiVersion and kind: " + Str(doc, "apiVersion") + " " +
                                 Str(doc, "kind") + " does not match the path (" +
                                 kind.GroupVersion() + " " + std::string(kind.kind) + ")"));
  }
  const json& meta = Member(doc, "metadata");
  const std::string doc_ns = Str(meta, "namespace");
  if (kind.namespaced && !doc_ns.empty() && doc_ns != ns) {
    return Error(InvalidArgument("metadata.namespace: \"" + doc_ns +
                                 "\" does not match the path's namespace \"" + ns + "\""));
  }
  if (route.name && Str(meta, "name") != *route.name) {
    return Error(InvalidArgument("metadata.name: \"" + Str(meta, "name") +
                                 "\" does not match the path's name \"" + *route.name + "\""));
  }
  // kubectl replace and edit send the version they read: it must still be current.
  std::optional<int64_t> expected;
  if (!create && Member(meta, "resourceVersion").is_string()) {
    const std::string rv = Str(meta, "resourceVersion");
    if (rv.empty() || rv.size() > 18 || !std::all_of(rv.begin(), rv.end(), ::isdigit)) {
      return Error(InvalidArgument("metadata.resourceVersion: must be a decimal number"));
    }
    expected = std::stoll(rv);
    if (!before.empty() && *expected != before[0].version) {
      return Error(Conflict("Operation cannot be fulfilled on " + Named(kind, *route.name) +
                            ": the object has been modified; please apply your changes to the "
                            "latest version and try again"));
    }
  }
  if (!create && doc["metadata"].is_object()) doc["metadata"].erase("resourceVersion");
  std::vector<std::string> notes;
  auto objs = api::TranslateDocument(doc, ns.empty() ? "default" : ns, &notes);
  if (!objs.ok()) return Error(objs.status());
  if (create && !objs->empty()) {
    auto existing = made_from(ns, Str(meta, "name"));
    if (!existing.ok()) return Error(existing.status());
    if (!existing->empty()) {
      return Error(AlreadyExists(Named(kind, Str(meta, "name")) + " already exists"));
    }
  }
  std::vector<std::vector<std::string>> per_object;
  std::vector<json> items;
  api::AppendDocument(std::move(objs).value(), notes, &items, &per_object);
  std::vector<store::Write> writes;
  std::vector<api::ObjectId> ids;
  size_t primary = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    json& obj = items[i];
    if (Status s = CheckObject(obj); !s.ok()) return Error(s);
    if (create && SharesJobNames(kind) && Str(obj, "kind") == "Job" &&
        api::MadeFrom(obj, kind, ns, Str(meta, "name"))) {
      // Kubernetes keeps a Pod and a Job of one name apart; both are Tessera Jobs here. A name
      // another kind's object holds (kubectl run hello while Job hello runs) is taken as
      // "<name>.<kind>": the views still show the object's own name.
      auto held =
          store_->Get({"Job", Str(obj["metadata"], "namespace"), Str(obj["metadata"], "name")});
      if (!held.ok()) return Error(held.status());
      // (A name too long to take the suffix stays, and its create is refused as taken.)
      if (held->has_value() && Str(obj["metadata"], "name").size() + kind.kind.size() < 253) {
        std::string suffix(kind.kind);
        for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        obj["metadata"]["name"] = Str(obj["metadata"], "name") + "." + suffix;
      }
    }
    const api::ObjectId id = api::IdOf(obj);
    if (Status s = Authorize(who, *id.kind,
                             id.ns.empty() ? std::nullopt : std::optional<std::string>(id.ns),
                             std::nullopt, Verb::kWrite);
        !s.ok()) {
      return Error(s);
    }
    if (Status s = AuthorizeWrite(who, &obj); !s.ok()) return Error(s);
    const bool own = api::MadeFrom(obj, kind, ns, Str(meta, "name"));
    if (own) {
      primary = i;
      // Who owns which field of the document: the apply's owners, or those of the update.
      if (!applied) {
        applied = api::RecordUpdate(
            before.empty() ? json() : api::SourceOf(before[0].obj), api::SourceOf(obj),
            before.empty() ? std::vector<api::ManagedEntry>() : api::ManagedOf(before[0].obj),
            manager, kind.GroupVersion(), FormatTime(clock_()));
      }
      json& annotations = obj["metadata"]["annotations"];
      if (!annotations.is_object()) annotations = json::object();
      annotations[std::string(api::kManagedAnnotation)] = api::ManagedFieldsJson(*applied).dump();
    }
    // Objects the document makes for itself are created (409 if something else holds the
    // name); the ones Volcano queues share are kept up to date.
    store::Write w{create && own ? store::Write::Op::kCreate : store::Write::Op::kPut, KeyOf(id),
                   "", std::nullopt};
    if (Status s = KeepSystemFields(who, &obj, &w); !s.ok()) return Error(s);
    if (!create && own) {
      const auto held =
          std::find_if(before.begin(), before.end(), [&](const Made& m) { return m.key == w.key; });
      if (held == before.end()) {
        // Not made from this object: the name is someone else's.
        auto other = store_->Get(w.key);
        if (!other.ok()) return Error(other.status());
        if (other->has_value()) {
          return Error(
              AlreadyExists(store::Describe(w.key) + " exists and was not made from this object"));
        }
        w.op = store::Write::Op::kCreate;
        w.expected_version.reset();
      }
    }
    writes.push_back(std::move(w));
    ids.push_back(id);
  }
  if (items.empty()) return Error(InvalidArgument("the object translates into nothing"));
  // What this object made before and makes no more (a ConfigMap key removed).
  for (const Made& m : before) {
    const bool kept = std::any_of(writes.begin(), writes.end(),
                                  [&](const store::Write& w) { return w.key == m.key; });
    if (!kept) writes.push_back({store::Write::Op::kDelete, m.key, "", m.version});
  }
  // A write that changes nothing is not written, as kube-apiserver leaves an object whose
  // bytes are unchanged (same resourceVersion, no events).
  const bool unchanged =
      !create && std::all_of(writes.begin(), writes.end(), [&](const store::Write& w) {
        const auto held = std::find_if(before.begin(), before.end(),
                                       [&](const Made& m) { return m.key == w.key; });
        if (w.op != store::Write::Op::kPut || held == before.end()) return false;
        json was = held->obj;
        was["metadata"].erase("resourceVersion");
        return json::parse(w.body) == was;
      });
  std::vector<store::Write> events;
  const std::vector<std::string> warned =
      NotActedOn(ids, per_object, unchanged ? &events : &writes);
  json stored = json::parse(writes[primary].body);
  if (unchanged) {
    stored = std::find_if(before.begin(), before.end(), [&](const Made& m) {
               return m.key == writes[primary].key;
             })->obj;
  } else if (DryRun(req)) {
    stored["metadata"]["resourceVersion"] = std::to_string(store_->Revision());
  } else {
    auto versions = Commit(writes);
    if (!versions.ok()) return Error(versions.status());
    stored["metadata"]["resourceVersion"] = std::to_string((*versions)[primary]);
  }
  std::vector<json> answer = {api::KubeObject(kind, stored)};
  if (Status s = add_status({Made{stored, writes[primary].key, 0}}, &answer); !s.ok()) {
    return Error(s);
  }
  HttpResponse r = Json(create ? 201 : 200, answer[0]);
  AddWarningHeaders(warned, &r);
  return r;
}

Result<std::vector<store::StoredObject>> ApiServer::ListStored(std::string_view kind,
                                                               const std::optional<std::string>& ns,
                                                               std::optional<int64_t> at) {
  const auto in = ns ? std::optional<std::string_view>(*ns) : std::nullopt;
  return at ? store_->ListAt(kind, in, *at) : store_->List(kind, in);
}

Result<std::vector<json>> ApiServer::EventViews(const std::optional<std::string>& ns,
                                                const std::string& name,
                                                std::optional<int64_t> at) {
  auto events = ListStored("Event", ns, at);
  if (!events.ok()) return events.status();
  // What each event is about, looked up once per object.
  std::map<store::ObjectKey, std::optional<api::ObjectRef>> refs;
  std::vector<json> out;
  for (const store::StoredObject& o : *events) {
    if (!name.empty() && o.key.name != name) continue;
    auto view = EventView(o, &refs);
    if (!view.ok()) return view.status();
    out.push_back(std::move(view).value());
  }
  return out;
}

Result<json> ApiServer::EventView(const store::StoredObject& o,
                                  std::map<store::ObjectKey, std::optional<api::ObjectRef>>* refs) {
  const json e = Served(o);
  const json& obj = Member(Member(e, "spec"), "involvedObject");
  const api::KindInfo* info = api::FindKind(Str(obj, "kind"));
  std::optional<api::ObjectRef>* ref = nullptr;
  if (info != nullptr) {
    const store::ObjectKey key{std::string(info->kind), info->namespaced ? o.key.ns : "",
                               Str(obj, "name")};
    auto [it, fresh] = refs->try_emplace(key);
    if (fresh) {
      auto got = store_->Get(key);
      if (!got.ok()) return got.status();
      if (got->has_value()) it->second = api::RefOf(Served(**got));
    }
    ref = &it->second;
  }
  return api::KubeEvent(e, ref != nullptr && *ref ? &**ref : nullptr);
}

Result<std::vector<json>> ApiServer::Workloads(const std::optional<std::string>& ns,
                                               const std::string& name, std::optional<int64_t> at) {
  auto jobs = ListStored("Job", ns, at);
  if (!jobs.ok()) return jobs.status();
  std::vector<json> out;
  for (const store::StoredObject& o : *jobs) {
    json w = api::KueueWorkload(Served(o));
    if (w.is_null() || (!name.empty() && Str(w["metadata"], "name") != name)) continue;
    out.push_back(std::move(w));
  }
  return out;
}

Status ApiServer::AddKueueStatus(std::vector<json>* views) {
  if (views->empty()) return Status::Ok();
  auto jobs = store_->List("Job", std::nullopt);
  if (!jobs.ok()) return jobs.status();
  auto local_queues = store_->List("LocalQueue", std::nullopt);
  if (!local_queues.ok()) return local_queues.status();
  std::vector<json> job_objs, lq_objs;
  for (const store::StoredObject& o : *jobs) job_objs.push_back(json::parse(o.body));
  for (const store::StoredObject& o : *local_queues) lq_objs.push_back(json::parse(o.body));
  for (json& v : *views) api::AddQueueStatus(job_objs, lq_objs, &v);
  return Status::Ok();
}

}  // namespace tessera::server
