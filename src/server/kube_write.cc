// The writes of the Kubernetes kinds' REST pipeline: create, replace, merge/JSON/strategic patch
// and server-side apply of a Kubernetes, Kueue or Volcano object, translated into the Tessera
// objects it makes (api/manifest.h) and written with the same checks as every other write.
#include <algorithm>
#include <cctype>

#include "api/json_read.h"
#include "api/json_text.h"
#include "api/manifest.h"
#include "api/patch.h"
#include "api/time.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"
#include "server/kube_call.h"

namespace tessera::server {

namespace {
using Made = KubeMade;
}  // namespace

HttpResponse ApiServer::KubeWrite(const KubeCall& c) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  if (!(req.method == "POST" && !route.name) && !(req.method == "PUT" && route.name) &&
      !(req.method == "PATCH" && route.name)) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "method " + req.method + " is not allowed on " + req.path));
  }
  if (api::IsNative(kind)) return NativeWrite(c);
  KubeWriting wr;
  std::optional<api::PatchType>& patch_type = wr.patch_type;
  if (req.method == "PATCH") {
    auto type = api::PatchTypeOf(req.content_type, /*apply_served=*/true);
    if (!type.ok()) {
      return Reply(415, "application/json",
                   StatusJson(415, "UnsupportedMediaType", type.status().message()));
    }
    patch_type = *type;
  }
  // Server-side apply: the manager's whole intent, merged with what others own.
  wr.apply = patch_type == api::PatchType::kApply;
  const bool apply = wr.apply;
  const auto named_manager = req.query.find("fieldManager");
  wr.manager = named_manager != req.query.end() ? named_manager->second
                                                : api::DefaultManager(req.user_agent);
  const std::string& manager = wr.manager;
  if (named_manager != req.query.end()) {
    if (Status s = api::ValidateManager(manager); !s.ok()) return Error(s);
  } else if (apply) {
    return Error(InvalidArgument("fieldManager: is required for apply patch"));
  }
  if (req.query.contains("force") && !apply) {
    return Error(InvalidArgument("force: may not be specified for non-apply patch"));
  }
  wr.force = QueryFlag(req, "force");
  wr.ns = route.ns.value_or("");
  wr.create = req.method == "POST";
  if (auto refused = KubeDocument(c, wr)) return *refused;
  if (auto refused = KubeCheckDocument(c, wr)) return *refused;
  std::vector<store::Write> writes;
  std::vector<api::ObjectId> ids;
  std::vector<std::vector<std::string>> per_object;
  size_t primary = 0;
  if (auto refused = KubeWritesOf(c, wr, &writes, &ids, &per_object, &primary)) return *refused;
  const std::vector<KubeMade>& before = wr.before;
  const bool create = wr.create;
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
  if (Status s = KubeAddStatus(c, {Made{stored, writes[primary].key, 0}}, &answer); !s.ok()) {
    return Error(s);
  }
  HttpResponse r = Json(create ? 201 : 200, answer[0]);
  AddWarningHeaders(warned, &r);
  return r;
}

// The document to write: the body (create, replace), the patched current view, or the applied
// configuration merged into the current document.
std::optional<HttpResponse> ApiServer::KubeDocument(const KubeCall& c, KubeWriting& wr) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  std::vector<KubeMade>& before = wr.before;
  json& doc = wr.doc;
  std::optional<std::vector<api::ManagedEntry>>& applied = wr.applied;
  bool& create = wr.create;
  const bool apply = wr.apply, force = wr.force;
  const std::string& manager = wr.manager;
  const std::string& ns = wr.ns;
  const std::optional<api::PatchType>& patch_type = wr.patch_type;
  if (create) {
    auto body = api::ParseJson(req.body);
    if (!body.ok()) return Error(body.status());
    doc = std::move(body).value();
  } else {
    auto made = KubeMadeFrom(c, ns, *route.name);
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
        current = KubeViews(c, before)[0];
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
  return std::nullopt;
}

// What the document may say: the server's fields are the server's, and its kind, namespace,
// name and version are those of the path and of what is there.
std::optional<HttpResponse> ApiServer::KubeCheckDocument(const KubeCall& c, KubeWriting& wr) {
  const HttpRequest& req = c.req;
  const KubeRoute& route = c.route;
  const api::KubeKind& kind = c.kind;
  const std::vector<KubeMade>& before = wr.before;
  json& doc = wr.doc;
  const bool create = wr.create;
  const std::string& ns = wr.ns;
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
          sent == Member(Member(KubeViews(c, before)[0], "spec"), "nodeName")) {
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
  return std::nullopt;
}

// The writes of the document: the objects it translates into, each authorized and with the
// fields the system keeps, made or replaced, and what it made before and makes no more.
std::optional<HttpResponse> ApiServer::KubeWritesOf(
    const KubeCall& c, KubeWriting& wr, std::vector<store::Write>* out_writes,
    std::vector<api::ObjectId>* out_ids, std::vector<std::vector<std::string>>* out_notes,
    size_t* out_primary) {
  const api::KubeKind& kind = c.kind;
  const Principal& who = c.who;
  const std::vector<KubeMade>& before = wr.before;
  json& doc = wr.doc;
  std::optional<std::vector<api::ManagedEntry>>& applied = wr.applied;
  const bool create = wr.create;
  const std::string& ns = wr.ns;
  const std::string& manager = wr.manager;
  const json& meta = Member(doc, "metadata");
  std::vector<std::string> notes;
  auto objs = api::TranslateDocument(doc, ns.empty() ? "default" : ns, &notes);
  if (!objs.ok()) return Error(objs.status());
  if (create && !objs->empty()) {
    auto existing = KubeMadeFrom(c, ns, Str(meta, "name"));
    if (!existing.ok()) return Error(existing.status());
    if (!existing->empty()) {
      return Error(AlreadyExists(Named(kind, Str(meta, "name")) + " already exists"));
    }
  }
  std::vector<std::vector<std::string>>& per_object = *out_notes;
  std::vector<json> items;
  api::AppendDocument(std::move(objs).value(), notes, &items, &per_object);
  std::vector<store::Write>& writes = *out_writes;
  std::vector<api::ObjectId>& ids = *out_ids;
  size_t& primary = *out_primary;
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
    StoredRead read(*store_, KeyOf(id), &plane_.objects());
    if (Status s = AuthorizeWrite(who, &obj, read); !s.ok()) return Error(s);
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
    if (Status s = KeepSystemFields(who, &obj, &w, read); !s.ok()) return Error(s);
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
  return std::nullopt;
}

}  // namespace tessera::server
