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
#include "server/json_names.h"
#include "server/kube_call.h"

namespace tessera::server {

namespace {

using Made = KubeMade;

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

}  // namespace

// `plural "name"`, as Kubernetes' messages name an object.
std::string Named(const api::KubeKind& kind, const std::string& name) {
  std::string out(kind.plural);
  if (!kind.group.empty()) out += "." + std::string(kind.group);
  return out + " \"" + name + "\"";
}

// The Kubernetes kinds whose objects are each one Tessera Job of their own name, which
// Kubernetes keeps in separate name spaces: core/v1 Pods and batch/v1 Jobs.
bool SharesJobNames(const api::KubeKind& kind) {
  return (kind.group.empty() && kind.kind == "Pod") ||
         (kind.group == "batch" && kind.kind == "Job");
}

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
  KubeCall c{req, who, route, kind, stored_kind, stored_ns, std::nullopt};
  // Who may touch the kind at all comes first, so nothing about other namespaces leaks.
  if (Status s = Authorize(who, stored_kind, c.stored_ns, std::nullopt,
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
  return KubeServe(c);
}

// The stages of every served kind's REST call, once its route is parsed and the caller may
// touch the kind: a read (get, list, watch), a delete, or a write.
HttpResponse ApiServer::KubeServe(KubeCall& c) {
  const HttpRequest& req = c.req;
  const api::KubeKind& kind = c.kind;
  if (req.method == "GET") return KubeRead(c);
  if (!kind.writable) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            std::string(kind.plural) + " are read-only views of " +
                                std::string(kind.stored) + "s, which Tessera writes"));
  }
  if (auto refused = KubeCheckPodWrite(c)) return *refused;
  if (req.method == "DELETE") return KubeDelete(c);
  return KubeWrite(c);
}

Result<std::vector<KubeMade>> ApiServer::KubeMadeFrom(const KubeCall& c, const std::string& ns,
                                                      const std::string& name) {
  const api::KubeKind& kind = c.kind;
  std::vector<Made> out;
  if (api::IsNative(kind) && !name.empty() && !c.list_at) {
    // A native object is its own source: read the one key.
    auto got = store_->Get({std::string(kind.stored), ns, name});
    if (!got.ok()) return got.status();
    if (got->has_value()) out.push_back({Served(**got), (*got)->key, (*got)->version});
    return out;
  }
  auto list = ListStored(kind.stored, c.stored_ns, c.list_at);
  if (!list.ok()) return list.status();
  for (const store::StoredObject& o : *list) {
    json obj = Served(o);
    if (!api::MadeFrom(obj, kind, ns, name)) continue;
    out.push_back({std::move(obj), o.key, o.version});
  }
  return out;
}

std::vector<json> ApiServer::KubeViews(const KubeCall& c, const std::vector<KubeMade>& made) {
  std::vector<json> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const Made& m : made) {
    json v = api::KubeObject(c.kind, m.obj);
    const json& meta = v["metadata"];
    if (!seen.insert({Str(meta, "namespace"), Str(meta, "name")}).second) continue;
    out.push_back(std::move(v));
  }
  return out;
}

// The status the views of some kinds carry, computed from other objects: Kueue's queue counts
// and flavor usage, Volcano's queue state, a PodGroup's phase. Read and write answers alike, so
// that a write that changes nothing answers what a read does (kubectl patch then says "(no
// change)").
Status ApiServer::KubeAddStatus(const KubeCall& c, const std::vector<KubeMade>& made,
                                std::vector<json>* found) {
  const api::KubeKind& kind = c.kind;
  const KubeRoute& route = c.route;
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
}

// Every Pod of the Jobs in the route's namespace (all namespaces without one), or the one named
// `name`.
Status ApiServer::KubePods(const KubeCall& c, const std::string& name,
                           const std::function<void(json&&)>& each) {
  auto jobs = ListStored("Job", c.route.ns, c.list_at);
  if (!jobs.ok()) return jobs.status();
  for (store::StoredObject& o : *jobs) {
    json job = Served(o);
    std::string().swap(o.body);  // its text goes once its document is made
    for (json& pod : api::JobPods(job)) {
      if (!name.empty() && Str(pod["metadata"], "name") != name) continue;
      each(std::move(pod));
    }
  }
  return Status::Ok();
}

HttpResponse ApiServer::KubeRead(KubeCall& c) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
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
  if (!one && Watching(req)) return KubeWatch(c, *selector, *fields);
  if (!one) {
    auto at = ListRevision(req, store_->Revision());
    if (!at.ok()) return ListReadError(at.status(), req);
    c.list_at = *at;
  }
  // A list served whole is written out item by item (ListText); of a page (or a Table) only its
  // items' documents are kept as they come (Page); one object is answered from its document.
  const bool whole = !one && !api::WantsTable(req.accept) && !req.query.contains("limit") &&
                     !req.query.contains("continue");
  ListText text(std::string(kind.kind) + "List", kind.GroupVersion());
  std::optional<Page> page;  // a list not served whole
  if (!one && !whole) {
    auto p = Page::Of(req);
    if (!p.ok()) return Error(p.status());
    page = std::move(p).value();
  }
  std::vector<json> items;
  auto take = [&](json&& v) {
    if (!Selected(*selector, *fields, v)) return;
    if (whole) {
      text.Add(v);
    } else if (page) {
      page->Add(std::move(v));
    } else {
      items.push_back(std::move(v));
    }
  };
  Status read = Status::Ok();
  if (kind.kind == "Pod") {
    read = KubePods(c, route.name.value_or(""), take);
  } else if (api::IsNative(kind)) {
    read = NativeObjects(c, take);
  } else {
    Result<std::vector<json>> found = std::vector<json>();
    if (kind.kind == "Workload") {
      found = Workloads(route.ns, route.name.value_or(""), c.list_at);
    } else if (kind.kind == "Event") {
      found = EventViews(route.ns, route.name.value_or(""), c.list_at);
      if (found.ok() && kind.group == "events.k8s.io") {
        for (json& e : *found) e = api::EventsV1(e);
      }
    } else {
      auto made = KubeMadeFrom(c, route.ns.value_or(""), route.name.value_or(""));
      if (!made.ok()) return c.list_at ? ListReadError(made.status(), req) : Error(made.status());
      found = KubeViews(c, *made);
      if (Status s = KubeAddStatus(c, *made, &*found); !s.ok()) return Error(s);
    }
    if (found.ok()) {
      for (json& v : *found) take(std::move(v));
    } else {
      read = found.status();
    }
  }
  if (!read.ok()) return c.list_at ? ListReadError(read, req) : Error(read);
  if (one && items.empty()) return Error(NotFound(Named(kind, *route.name) + " not found"));
  const std::string version = one ? Str(items[0]["metadata"], "resourceVersion")
                                  : std::to_string(c.list_at ? *c.list_at : store_->Revision());
  json meta = {{"resourceVersion", version}};
  if (whole) {
    return Reply(200, "application/json", std::move(text).Finish(meta));
  }
  if (page) items = std::move(*page).Finish(&meta);
  if (api::WantsTable(req.accept)) {
    json table = api::IsNative(kind)
                     ? api::TesseraTable(std::string(kind.kind), items, version, clock_())
                     : api::KubeTable(kind, items, version, clock_());
    table["metadata"] = meta;
    return TableReply(req, std::move(table));
  }
  if (one) return Json(200, items[0]);
  return Json(200, {{"kind", std::string(kind.kind) + "List"},
                    {"apiVersion", kind.GroupVersion()},
                    {"metadata", std::move(meta)},
                    {"items", std::move(items)}});
}

// Each change of a stored object, as the changes of the views it makes. kubectl get -w asks for
// Tables here too: each event's object is then a Table of one row.
HttpResponse ApiServer::KubeWatch(const KubeCall& c,
                                  const std::optional<api::LabelSelector>& selector,
                                  const std::optional<api::FieldSelector>& fields) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  if (api::IsNative(kind)) {
    // The stored objects as they are (an agent's of Jobs: those bound to its node).
    if (fields) {
      return Error(InvalidArgument("fieldSelector: not served on watches yet; use labelSelector"));
    }
    const bool agent_jobs = c.who.role == Principal::Role::kAgent && kind.kind == "Job";
    return Watch(req, std::string(kind.stored), route.ns, selector, {},
                 {{"apiVersion", api::kApiVersion}, {"kind", kind.kind}},
                 agent_jobs ? std::optional<std::string>(c.who.node) : std::nullopt);
  }
  WatchRender render = [this, k = &kind, ns = route.ns, sel = selector, fs = fields,
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
  return Watch(req, std::string(kind.stored), c.stored_ns, std::nullopt, std::move(render),
               api::WantsTable(req.accept)
                   ? json()
                   : json{{"apiVersion", kind.GroupVersion()}, {"kind", kind.kind}});
}

// A Pod of a Job made from another kind is changed through that object.
std::optional<HttpResponse> ApiServer::KubeCheckPodWrite(const KubeCall& c) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  if (kind.kind == "Pod" && route.name && req.method != "POST") {
    auto made = KubeMadeFrom(c, *route.ns, *route.name);
    if (!made.ok()) return Error(made.status());
    std::vector<json> pods;
    Status read = KubePods(c, *route.name, [&](json&& pod) { pods.push_back(std::move(pod)); });
    if (!read.ok()) return Error(read);
    if (made->empty() && !pods.empty()) {
      const json& owner = Member(Member(pods[0], "metadata"), "ownerReferences")[0];
      return Reply(405, "application/json",
                   StatusJson(405, "MethodNotAllowed",
                              "pod " + *route.name + " is one of the pods of " +
                                  Str(owner, "kind") + " " + Str(owner, "name") + " (" +
                                  Str(owner, "apiVersion") + "): change or delete that instead"));
    }
  }
  return std::nullopt;
}

HttpResponse ApiServer::KubeDelete(const KubeCall& c) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  const Principal& who = c.who;
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
  if (!route.name) return KubeDeleteCollection(c);
  auto made = KubeMadeFrom(c, route.ns.value_or(""), *route.name);
  if (!made.ok()) return Error(made.status());
  if (made->empty()) return Error(NotFound(Named(kind, *route.name) + " not found"));
  std::vector<store::Write> writes;
  for (const Made& m : *made) {
    if (Status s = Authorize(who, c.stored_kind, c.stored_ns, m.key.name, Verb::kDelete); !s.ok()) {
      return Error(s);
    }
    writes.push_back({store::Write::Op::kDelete, m.key, "", m.version});
  }
  const json view = KubeViews(c, *made)[0];
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

// deletecollection: every object the selectors match (metadata.name/namespace for fields), in
// one write; the answer lists them.
HttpResponse ApiServer::KubeDeleteCollection(const KubeCall& c) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  const Principal& who = c.who;
  auto selector = SelectorOf(req);
  if (!selector.ok()) return Error(selector.status());
  auto fields = FieldSelectorOf(req, {});
  if (!fields.ok()) return Error(fields.status());
  auto made = KubeMadeFrom(c, route.ns.value_or(""), "");
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
    if (Status s = Authorize(who, c.stored_kind, c.stored_ns, m.key.name, Verb::kDelete); !s.ok()) {
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
