// Tessera's own kinds at /apis/tessera.io/v1, served by the REST stages of every kind
// (KubeServe) with their native hooks: the objects a read serves (NativeObjects) and a write of
// one object (NativeWrite); and /apply of a manifest of any kinds api/manifest.h translates (with
// Volcano's Commands), each object checked and authorized as every write is.
#include <algorithm>
#include <iterator>

#include "api/json_read.h"
#include "api/kinds.h"
#include "api/kube_table.h"
#include "api/manifest.h"
#include "api/patch.h"
#include "api/yaml.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"
#include "server/kube_call.h"
#include "server/watch.h"

namespace tessera::server {

namespace {

// A path of Tessera's own kinds: /apis/tessera.io/v1[/namespaces/{ns}]/{plural}[/{name}].
Result<KubeRoute> ParseRoute(std::string_view path) {
  const std::vector<std::string_view> parts = PathSegments(path);
  if (parts.size() < 4 || parts[0] != "apis" || parts[1] != api::kGroup || parts[2] != "v1") {
    return NotFound("no such path");
  }
  size_t i = 3;
  KubeRoute r;
  if (parts[i] == "namespaces" && parts.size() >= 6) {
    if (Status s = api::ValidateName(parts[4], true, "namespace"); !s.ok()) return s;
    r.ns = std::string(parts[4]);
    i = 5;
  }
  const api::KindInfo* info = api::FindKindByPlural(parts[i]);
  if (info == nullptr) {
    return NotFound("no resource type \"" + std::string(parts[i]) + "\" in " +
                    std::string(api::kApiVersion));
  }
  r.kind = &api::NativeKubeKind(*info);
  if (r.ns && !r.kind->namespaced) {
    return NotFound(std::string(r.kind->kind) + " is cluster-scoped; use " + GroupPath("/") +
                    std::string(r.kind->plural));
  }
  if (i + 1 < parts.size()) r.name = std::string(parts[i + 1]);
  if (i + 2 < parts.size()) return NotFound("no such path");
  if (r.name && r.kind->namespaced && !r.ns) {
    return NotFound("a namespaced " + std::string(r.kind->kind) + " is addressed under " +
                    GroupPath("/namespaces/{namespace}/"));
  }
  return r;
}

// Parses and checks one object from a request body; the path's namespace and name, when given,
// must agree with the object's.
Result<json> ParseObject(const json& obj, const KubeRoute* route) {
  if (Status s = CheckObject(obj); !s.ok()) return s;
  const api::ObjectId id = api::IdOf(obj);
  if (route != nullptr) {
    if (id.kind->kind != route->kind->kind) {
      return InvalidArgument("kind: " + std::string(id.kind->kind) + " does not match the path (" +
                             std::string(route->kind->plural) + ")");
    }
    if (route->ns && id.ns != *route->ns) {
      return InvalidArgument("metadata.namespace: \"" + id.ns +
                             "\" does not match the path's namespace \"" + *route->ns + "\"");
    }
    if (route->name && id.name != *route->name) {
      return InvalidArgument("metadata.name: \"" + id.name +
                             "\" does not match the path's name \"" + *route->name + "\"");
    }
  }
  return obj;
}

// The objects of an apply request, each with the warnings of the document it came from, and
// the Volcano Commands it carries out.
struct ApplyRequest {
  std::vector<json> items;
  std::vector<std::vector<std::string>> warnings;  // per item
  std::vector<api::VolcanoCommand> commands;
  std::vector<std::string> command_warnings;
};

// The objects of an apply request: YAML (Content-Type *yaml*) or JSON, one object or
// {"items": [...]}, in Tessera's kinds or any manifest api::TranslateDocument understands, and
// bus.volcano.sh Commands. Objects without a namespace land in the `namespace` query
// parameter's, else "default".
Result<ApplyRequest> ApplyItems(const HttpRequest& req) {
  auto ns_it = req.query.find("namespace");
  const std::string ns = ns_it == req.query.end() ? "default" : ns_it->second;
  if (Status s = api::ValidateName(ns, true, "namespace"); !s.ok()) return s;
  ApplyRequest out;
  json docs;
  bool list = false;
  const bool yaml = req.content_type.find("yaml") != std::string::npos;
  if (yaml) {
    auto parsed = api::ParseYamlDocuments(req.body);
    if (!parsed.ok()) return InvalidArgument("body: " + parsed.status().message());
    docs = std::move(parsed).value();
  } else {
    auto body = api::ParseJson(req.body);
    if (!body.ok()) return body.status();
    list = body->is_object() && body->contains("items") && !body->contains("kind");
    docs = list ? (*body)["items"] : json::array({*body});
    if (!docs.is_array()) return InvalidArgument("items: must be a list");
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    // Errors name the document as `tessera apply` and kubectl users count them.
    auto where = [&](const Status& s) {
      const std::string what = yaml   ? api::DocumentPlace("body", i, docs[i]) + ": "
                               : list ? "items[" + std::to_string(i) + "]: "
                                      : "";
      return Status(s.code(), what + s.message());
    };
    std::vector<std::string> notes;
    if (api::IsVolcanoCommand(docs[i])) {
      auto cmd = api::ParseVolcanoCommand(docs[i], ns, &notes);
      if (!cmd.ok()) return where(cmd.status());
      out.commands.push_back(std::move(cmd).value());
      for (std::string& n : notes) out.command_warnings.push_back("Command: " + std::move(n));
      continue;
    }
    auto objs = api::TranslateDocument(docs[i], ns, &notes);
    if (!objs.ok()) return where(objs.status());
    api::AppendDocument(std::move(objs).value(), notes, &out.items, &out.warnings);
  }
  return out;
}

}  // namespace

HttpResponse ApiServer::TesseraObjects(const HttpRequest& req, const Principal& who) {
  if (req.path.ends_with("/logs")) {
    auto route = ParseRoute(req.path.substr(0, req.path.size() - 5));
    if (route.ok() && route->kind->kind == "Job" && route->ns && route->name) {
      if (Status s = AuthorizeLogs(req, who, *route->ns, *route->name); !s.ok()) {
        return Error(s);
      }
      // All runs of each pod's container, or with ?previous the run before the current one.
      return Logs(req, *route->ns, *route->name,
                  QueryFlag(req, "previous") ? LogStore::Runs::kPrevious : LogStore::Runs::kAll);
    }
  }
  auto route = ParseRoute(req.path);
  if (!route.ok()) return Error(route.status());
  const api::KindInfo& stored_kind = *api::FindKind(route->kind->stored);
  const bool watching = req.method == "GET" && !route->name && Watching(req);
  const Verb verb = req.method == "GET"      ? (watching ? Verb::kWatch : Verb::kRead)
                    : req.method == "DELETE" ? Verb::kDelete
                                             : Verb::kWrite;
  if (Status s = Authorize(who, stored_kind, route->ns, route->name, verb); !s.ok()) {
    return Error(s);
  }
  KubeCall c{req, who, *route, *route->kind, stored_kind, route->ns, std::nullopt};
  return KubeServe(c);
}

// The stored objects of a native kind a read serves: the one named, or the list at the call's
// revision; Leases as renewed in memory. An agent sees the Jobs bound to its node only (of a
// list, those still running there).
Status ApiServer::NativeObjects(const KubeCall& c, const std::function<void(json&&)>& each) {
  const std::string kind(c.kind.kind);
  const bool agent_jobs = c.who.role == Principal::Role::kAgent && kind == "Job";
  if (c.route.name) {
    auto got = store_->Get({kind, c.route.ns.value_or(""), *c.route.name});
    if (!got.ok()) return got.status();
    if (!got->has_value()) return Status::Ok();
    json obj = Served(**got);
    if (kind == "Lease") leases_.Overlay(&obj);
    if (!agent_jobs || BoundTo(obj, c.who.node)) each(std::move(obj));
    return Status::Ok();
  }
  auto list = ListStored(kind, c.route.ns, c.list_at);
  if (!list.ok()) return list.status();
  for (store::StoredObject& o : *list) {
    json obj = Served(o);
    std::string().swap(o.body);  // its text goes once its document is made
    if (kind == "Lease") leases_.Overlay(&obj);
    if (agent_jobs) {
      const std::vector<std::string> nodes = FollowingNodes(obj);
      if (std::find(nodes.begin(), nodes.end(), c.who.node) == nodes.end()) continue;
    }
    each(std::move(obj));
  }
  return Status::Ok();
}

// A create (POST), replace (PUT) or patch (PATCH: the stored object patched, written as a
// replace of what was read) of one object of a native kind, checked and kept by the kind's
// write strategy (write_strategy.cc).
HttpResponse ApiServer::NativeWrite(const KubeCall& c) {
  const HttpRequest& req = c.req;
  const Principal& who = c.who;
  const std::string kind(c.kind.kind);
  const store::ObjectKey key{kind, c.route.ns.value_or(""), c.route.name.value_or("")};
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  if (req.method == "PATCH") {
    auto type = api::PatchTypeOf(req.content_type);
    if (!type.ok()) {
      return Reply(415, "application/json",
                   StatusJson(415, "UnsupportedMediaType", type.status().message()));
    }
    auto got = store_->Get(key);
    if (!got.ok()) return Error(got.status());
    if (!got->has_value()) return Error(NotFound(Named(c.kind, key.name) + " not found"));
    auto patched = api::ApplyPatch(Served(**got), *body, *type);
    if (!patched.ok()) return Error(patched.status());
    body = std::move(patched);
  }
  auto obj = ParseObject(*body, &c.route);
  if (!obj.ok()) return Error(obj.status());
  const api::ObjectId id = api::IdOf(*obj);
  StoredRead read(*store_, KeyOf(id), &plane_.objects());
  if (Status s = AuthorizeWrite(who, &*obj, read); !s.ok()) return Error(s);
  if (kind == "Lease" && req.method == "PUT" && who.role == Principal::Role::kAgent) {
    // A renewal (stamped by AuthorizeWrite) is held in memory while the stored Lease is recent.
    if (auto renewed = leases_.Renew(*obj, clock_())) return Json(200, *renewed);
  }
  const bool create = req.method == "POST";
  store::Write w{create ? store::Write::Op::kCreate : store::Write::Op::kPut, KeyOf(id), "",
                 create ? std::nullopt : RequestedVersion(*obj)};
  if (Status s = KeepSystemFields(who, &*obj, &w, read); !s.ok()) return Error(s);
  if (DryRun(req)) {
    json out = Served({w.key, store_->Revision(), w.body});
    return Json(create ? 201 : 200, out);
  }
  auto r = Commit(std::span<const store::Write>(&w, 1));
  if (!r.ok()) return Error(r.status());
  if (kind == "Job" && who.role == Principal::Role::kAgent) EndFinishedLogs(*obj, who.node);
  return Json(create ? 201 : 200, Served({w.key, (*r)[0], w.body}));
}

// /apply: every object of the manifest, and the Commands it carries out, in one write.
Result<std::vector<int64_t>> ApiServer::CommitApply(std::span<const store::Write> writes,
                                                    int* chunks) {
  *chunks = 1;
  auto whole = Commit(writes);
  if (whole.ok() || whole.status().code() != StatusCode::kTooLarge || !plane_.store().shared()) {
    return whole;
  }
  // Each write checked on its own version as in one transaction; a gang is one Job, so one write.
  constexpr size_t kApplyChunk = 100;
  std::vector<int64_t> versions;
  *chunks = 0;
  for (size_t from = 0; from < writes.size();) {
    size_t n = std::min(kApplyChunk, writes.size() - from);
    Result<std::vector<int64_t>> r = Commit(writes.subspan(from, n));
    // Too many bytes for one transaction: fewer writes in it.
    while (!r.ok() && r.status().code() == StatusCode::kTooLarge && n > 1) {
      n /= 2;
      r = Commit(writes.subspan(from, n));
    }
    if (!r.ok()) {
      return Status(r.status().code(),
                    "writes " + std::to_string(from) + " to " + std::to_string(writes.size() - 1) +
                        " of this apply were not written (the first " + std::to_string(from) +
                        " were, in transactions of their own as etcd holds at most 128 keys per "
                        "transaction): " +
                        r.status().message());
    }
    versions.insert(versions.end(), r->begin(), r->end());
    from += n;
    ++*chunks;
  }
  return versions;
}

HttpResponse ApiServer::ApplyDocuments(const HttpRequest& req, const Principal& who) {
  auto request = ApplyItems(req);
  if (!request.ok()) return Error(request.status());
  const std::vector<json>* items = &request->items;
  std::vector<store::Write> writes;
  std::vector<api::ObjectId> ids;
  for (size_t i = 0; i < items->size(); ++i) {
    auto obj = ParseObject((*items)[i], nullptr);
    if (!obj.ok()) {
      const json& item = (*items)[i];
      auto text = [](const json& o, const char* key) {
        return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>()
                                                                      : std::string();
      };
      const json meta = item.is_object() ? item.value("metadata", json()) : json();
      const std::string kind = text(item, "kind"), name = text(meta, "name"),
                        ns = text(meta, "namespace");
      std::string what = "items[" + std::to_string(i) + "]";
      if (!kind.empty() && !name.empty()) {
        what += " (" + kind + " " + (ns.empty() ? "" : ns + "/") + name + ")";
      }
      return Error(Status(obj.status().code(), what + ": " + obj.status().message()));
    }
    const api::ObjectId id = api::IdOf(*obj);
    if (Status s = Authorize(who, *id.kind, id.ns, id.name, Verb::kWrite); !s.ok()) {
      return Error(s);
    }
    StoredRead read(*store_, KeyOf(id), &plane_.objects());
    if (Status s = AuthorizeWrite(who, &*obj, read); !s.ok()) return Error(s);
    store::Write w{store::Write::Op::kPut, KeyOf(id), "", RequestedVersion(*obj)};
    if (Status s = KeepSystemFields(who, &*obj, &w, read); !s.ok()) return Error(s);
    writes.push_back(std::move(w));
    ids.push_back(id);
  }
  // Volcano Commands act on the queues as this request leaves them, in the same write.
  std::vector<store::Write> command_events;
  for (const api::VolcanoCommand& c : request->commands) {
    if (Status s = VolcanoCommandWrites(who, c, &writes, &ids, &command_events); !s.ok()) {
      return Error(s);
    }
  }
  // What was accepted but is not acted on: a Warning event on each object, in the same
  // transaction, and the warnings in the reply.
  std::vector<std::string> notes = NotActedOn(ids, request->warnings, &writes);
  notes.insert(notes.end(), request->command_warnings.begin(), request->command_warnings.end());
  writes.insert(writes.end(), command_events.begin(), command_events.end());
  int chunks = 1;
  auto versions = CommitApply(writes, &chunks);
  if (!versions.ok()) return Error(versions.status());
  if (chunks > 1) {
    notes.push_back("the store is etcd, whose transactions hold at most 128 keys: these " +
                    std::to_string(writes.size()) + " writes went in " + std::to_string(chunks) +
                    " transactions, each all or nothing, not the apply as a whole");
  }
  json out = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    json o = json::parse(writes[i].body);
    o["metadata"]["resourceVersion"] = std::to_string((*versions)[i]);
    out.push_back(std::move(o));
  }
  json reply = {{"kind", "List"}, {"apiVersion", api::kApiVersion}, {"items", out}};
  if (!notes.empty()) reply["warnings"] = notes;
  HttpResponse r = Json(200, reply);
  AddWarningHeaders(notes, &r);
  return r;
}

}  // namespace tessera::server
