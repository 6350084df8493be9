// Tessera's own kinds at /apis/tessera.io/v1: get, list, watch, create, replace, patch and
// delete of one object, and /apply of a manifest of any kinds api/manifest.h translates (with
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
#include "server/watch.h"

namespace tessera::server {

using api::Member;
using api::Str;
using nlohmann::json;

// A parsed API path: /apis/tessera.io/v1[/namespaces/{ns}]/{plural}[/{name}].
struct TesseraRoute {
  const api::KindInfo* kind = nullptr;
  std::optional<std::string> ns;
  std::optional<std::string> name;
};

namespace {

Result<TesseraRoute> ParseRoute(std::string_view path) {
  const std::vector<std::string_view> parts = PathSegments(path);
  if (parts.size() < 4 || parts[0] != "apis" || parts[1] != api::kGroup || parts[2] != "v1") {
    return NotFound("no such path");
  }
  size_t i = 3;
  TesseraRoute r;
  if (parts[i] == "namespaces" && parts.size() >= 6) {
    if (Status s = api::ValidateName(parts[4], true, "namespace"); !s.ok()) return s;
    r.ns = std::string(parts[4]);
    i = 5;
  }
  r.kind = api::FindKindByPlural(parts[i]);
  if (r.kind == nullptr) {
    return NotFound("no resource type \"" + std::string(parts[i]) + "\" in " +
                    std::string(api::kApiVersion));
  }
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
Result<json> ParseObject(const json& obj, const TesseraRoute* route) {
  if (Status s = CheckObject(obj); !s.ok()) return s;
  const api::ObjectId id = api::IdOf(obj);
  if (route != nullptr) {
    if (id.kind != route->kind) {
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
  const bool watching = req.method == "GET" && !route->name && Watching(req);
  const Verb verb = req.method == "GET"      ? (watching ? Verb::kWatch : Verb::kRead)
                    : req.method == "DELETE" ? Verb::kDelete
                                             : Verb::kWrite;
  if (Status s = Authorize(who, *route->kind, route->ns, route->name, verb); !s.ok()) {
    return Error(s);
  }
  const std::string kind(route->kind->kind);
  // An agent sees the Jobs bound to its node only.
  const bool agent_jobs = who.role == Principal::Role::kAgent && kind == "Job";
  if (req.method == "GET" && !route->name) return TesseraList(req, who, *route, watching);
  const store::ObjectKey key{kind, route->ns.value_or(""), route->name.value_or("")};
  if (req.method == "GET") {
    auto got = store_->Get(key);
    if (!got.ok()) return Error(got.status());
    if (!got->has_value()) return Error(NotFound(store::Describe(key) + " not found"));
    json obj = Served(**got);
    if (kind == "Lease") leases_.Overlay(&obj);
    if (agent_jobs && !BoundTo(obj, who.node)) {
      return Error(NotFound(store::Describe(key) + " not found"));
    }
    if (api::WantsTable(req.accept)) {
      return TableReply(req,
                        api::TesseraTable(kind, {obj}, std::to_string((*got)->version), clock_()));
    }
    return Json(200, obj);
  }
  if (req.method == "DELETE" && route->name) {
    store::Write w{store::Write::Op::kDelete, key, "", {}};
    auto r = Commit(std::span<const store::Write>(&w, 1));
    if (!r.ok()) return Error(r.status());
    return Json(200, {{"kind", "Status"},
                      {"status", "Success"},
                      {"message", store::Describe(key) + " deleted"}});
  }
  if ((req.method == "POST" && !route->name) ||
      ((req.method == "PUT" || req.method == "PATCH") && route->name)) {
    return TesseraWrite(req, who, *route);
  }
  return Reply(405, "application/json",
               StatusJson(405, "MethodNotAllowed",
                          "method " + req.method + " is not allowed on " + req.path));
}

// A list or a watch of a Tessera kind (an agent's of Jobs: those bound to its node).
HttpResponse ApiServer::TesseraList(const HttpRequest& req, const Principal& who,
                                    const TesseraRoute& route, bool watching) {
  const std::string kind(route.kind->kind);
  const bool agent_jobs = who.role == Principal::Role::kAgent && kind == "Job";
  auto selector = SelectorOf(req);
  if (!selector.ok()) return Error(selector.status());
  auto fields = FieldSelectorOf(req);
  if (!fields.ok()) return Error(fields.status());
  if (watching && *fields) {
    return Error(InvalidArgument("fieldSelector: not served on watches yet; use labelSelector"));
  }
  if (watching) {
    return Watch(req, kind, route.ns, std::move(selector).value(), {},
                 {{"apiVersion", api::kApiVersion}, {"kind", kind}},
                 agent_jobs ? std::optional<std::string>(who.node) : std::nullopt);
  }
  auto at = ListRevision(req, store_->Revision());
  if (!at.ok()) return ListReadError(at.status(), req);
  auto list = ListStored(kind, route.ns, *at);
  if (!list.ok()) return ListReadError(list.status(), req);
  json items = json::array();
  for (const store::StoredObject& o : *list) {
    json obj = Served(o);
    if (kind == "Lease") leases_.Overlay(&obj);
    if (!Selected(*selector, *fields, obj)) continue;
    if (agent_jobs) {
      const std::vector<std::string> nodes = FollowingNodes(obj);
      if (std::find(nodes.begin(), nodes.end(), who.node) == nodes.end()) continue;
    }
    items.push_back(std::move(obj));
  }
  std::vector<json> page(std::make_move_iterator(items.begin()),
                         std::make_move_iterator(items.end()));
  json meta = {{"resourceVersion", std::to_string(at->value_or(store_->Revision()))}};
  if (Status s = Paginate(req, &page, &meta); !s.ok()) return Error(s);
  if (api::WantsTable(req.accept)) {
    json table = api::TesseraTable(kind, page, meta["resourceVersion"], clock_());
    table["metadata"] = std::move(meta);
    return TableReply(req, std::move(table));
  }
  return Json(200, {{"kind", kind + "List"},
                    {"apiVersion", api::kApiVersion},
                    {"metadata", std::move(meta)},
                    {"items", std::move(page)}});
}

// A create (POST), replace (PUT) or patch (PATCH: the stored object patched, written as a
// replace of what was read) of one object of a Tessera kind.
HttpResponse ApiServer::TesseraWrite(const HttpRequest& req, const Principal& who,
                                     const TesseraRoute& route) {
  const std::string kind(route.kind->kind);
  const store::ObjectKey key{kind, route.ns.value_or(""), route.name.value_or("")};
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  if (req.method == "PATCH") {
    // The stored object with the patch applied, written as a replace of what was read.
    auto type = api::PatchTypeOf(req.content_type);
    if (!type.ok()) {
      return Reply(415, "application/json",
                   StatusJson(415, "UnsupportedMediaType", type.status().message()));
    }
    auto got = store_->Get(key);
    if (!got.ok()) return Error(got.status());
    if (!got->has_value()) return Error(NotFound(store::Describe(key) + " not found"));
    auto patched = api::ApplyPatch(Served(**got), *body, *type);
    if (!patched.ok()) return Error(patched.status());
    body = std::move(patched);
  }
  auto obj = ParseObject(*body, &route);
  if (!obj.ok()) return Error(obj.status());
  const api::ObjectId id = api::IdOf(*obj);
  if (Status s = AuthorizeWrite(who, &*obj); !s.ok()) return Error(s);
  if (kind == "Lease" && req.method == "PUT" && who.role == Principal::Role::kAgent) {
    // A renewal (stamped by AuthorizeWrite) is held in memory while the stored Lease is recent.
    if (auto renewed = leases_.Renew(*obj, clock_())) return Json(200, *renewed);
  }
  const bool create = req.method == "POST";
  store::Write w{create ? store::Write::Op::kCreate : store::Write::Op::kPut, KeyOf(id), "",
                 create ? std::nullopt : RequestedVersion(*obj)};
  if (Status s = KeepSystemFields(who, &*obj, &w); !s.ok()) return Error(s);
  auto r = Commit(std::span<const store::Write>(&w, 1));
  if (!r.ok()) return Error(r.status());
  if (kind == "Job" && who.role == Principal::Role::kAgent) EndFinishedLogs(*obj, who.node);
  return Json(create ? 201 : 200, Served({w.key, (*r)[0], w.body}));
}

// /apply: every object of the manifest, and the Commands it carries out, in one write.
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
    if (Status s = AuthorizeWrite(who, &*obj); !s.ok()) return Error(s);
    store::Write w{store::Write::Op::kPut, KeyOf(id), "", RequestedVersion(*obj)};
    if (Status s = KeepSystemFields(who, &*obj, &w); !s.ok()) return Error(s);
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
  auto versions = Commit(writes);
  if (!versions.ok()) return Error(versions.status());
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
