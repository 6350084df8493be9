#include "server/api_common.h"

#include <algorithm>
#include <mutex>
#include <random>
#include <set>

#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kinds.h"
#include "api/kube_table.h"
#include "api/object.h"
#include "api/status_schema.h"
#include "server/json_names.h"
#include "server/websocket.h"

namespace tessera::server {

namespace {

int HttpCode(StatusCode c) {
  switch (c) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 412;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kTooLarge:
      return 413;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

std::string_view Reason(StatusCode c) {
  switch (c) {
    case StatusCode::kInvalidArgument:
      return "BadRequest";  // 400, as Kubernetes names it (its 422 is "Invalid")
    case StatusCode::kUnauthenticated:
      return "Unauthorized";
    case StatusCode::kPermissionDenied:
      return "Forbidden";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kFailedPrecondition:
      return "PreconditionFailed";
    case StatusCode::kResourceExhausted:
      return "TooManyRequests";
    case StatusCode::kTooLarge:
      return "RequestEntityTooLarge";
    case StatusCode::kUnavailable:
      return "ServiceUnavailable";
    default:
      return "InternalError";
  }
}

}  // namespace

HttpResponse Reply(int code, std::string content_type, std::string body) {
  HttpResponse r;
  r.status = code;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

HttpResponse Error(const Status& s) {
  const int code = HttpCode(s.code());
  return Reply(code, "application/json", StatusJson(code, Reason(s.code()), s.message()));
}

HttpResponse Json(int code, const json& body) {
  return Reply(code, "application/json", body.dump());
}

std::string IncludeObject(const HttpRequest& req) {
  auto it = req.query.find("includeObject");
  return it == req.query.end() ? "Metadata" : it->second;
}

HttpResponse TableReply(const HttpRequest& req, json table) {
  api::IncludeObjects(IncludeObject(req), &table);
  return Json(200, table);
}

std::string NewUid() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = 0, b = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    a = rng();
    b = rng();
  }
  return api::UuidText(a, b);
}

std::string StoredBody(json obj) {
  obj["metadata"].erase("resourceVersion");
  return obj.dump();
}

json Served(const store::StoredObject& o) {
  json obj = json::parse(o.body);
  obj["metadata"]["resourceVersion"] = std::to_string(o.version);
  return obj;
}

std::optional<int64_t> RequestedVersion(const json& obj) {
  const json& meta = obj.at("metadata");
  const auto rv = meta.find("resourceVersion");
  if (rv == meta.end()) return std::nullopt;
  return std::stoll(rv->get<std::string>());
}

std::vector<std::string_view> PathSegments(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0) parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

Result<std::optional<api::LabelSelector>> SelectorOf(const HttpRequest& req) {
  auto it = req.query.find("labelSelector");
  if (it == req.query.end()) return std::optional<api::LabelSelector>();
  auto sel = api::LabelSelector::Parse(it->second);
  if (!sel.ok()) return sel.status();
  return std::optional<api::LabelSelector>(std::move(sel).value());
}

Result<std::optional<api::FieldSelector>> FieldSelectorOf(const HttpRequest& req,
                                                          std::vector<std::string_view> extra) {
  auto it = req.query.find("fieldSelector");
  if (it == req.query.end() || it->second.empty()) return std::optional<api::FieldSelector>();
  extra.insert(extra.begin(), {"metadata.name", "metadata.namespace"});
  auto sel = api::FieldSelector::Parse(it->second, extra);
  if (!sel.ok()) return sel.status();
  return std::optional<api::FieldSelector>(std::move(sel).value());
}

bool Selected(const std::optional<api::LabelSelector>& labels,
              const std::optional<api::FieldSelector>& fields, const json& obj) {
  if (labels) {
    static const json kNone;
    const auto meta = obj.find("metadata");
    const bool has = meta != obj.end() && meta->is_object() && meta->contains("labels");
    if (!labels->Matches(has ? meta->at("labels") : kNone)) return false;
  }
  return !fields || fields->Matches(obj);
}

bool QueryFlag(const HttpRequest& req, const std::string& name) {
  auto it = req.query.find(name);
  if (it == req.query.end()) return false;
  const std::string& v = it->second;
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "True" || v == "TRUE";
}

Status QueryCount(const HttpRequest& req, const char* param, const char* what, int64_t* out) {
  auto it = req.query.find(param);
  if (it == req.query.end()) return Status::Ok();
  const std::string& v = it->second;
  if (v.empty() || v.size() > 12 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgument(std::string(param) + ": must be " + what);
  }
  *out = std::stoll(v);
  return Status::Ok();
}

Result<int> TimeoutSeconds(const HttpRequest& req, int fallback, int max) {
  auto it = req.query.find("timeoutSeconds");
  if (it == req.query.end()) return fallback;
  const std::string& v = it->second;
  if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), ::isdigit)) {
    return InvalidArgument("timeoutSeconds: must be a number of seconds");
  }
  return static_cast<int>(std::clamp<int64_t>(std::stoll(v), 1, max));
}

bool Watching(const HttpRequest& req) { return QueryFlag(req, "watch"); }

namespace {

std::pair<std::string, std::string> NsName(const json& obj) {
  // Strings only: these are of objects from outside, checked later.
  const json& meta = api::Member(obj, "metadata");
  return {api::Str(meta, "namespace"), api::Str(meta, "name")};
}

std::string Hex(std::string_view text) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::optional<std::string> Unhex(std::string_view text) {
  if (text.size() % 2 != 0 || text.size() > 2048) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2) {
    int v = 0;
    for (char c : text.substr(i, 2)) {
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + d;
    }
    out += static_cast<char>(v);
  }
  return out;
}

}  // namespace

namespace {

// A continue token: "<revision>\0<namespace>\0<name>", hex-encoded; a token of an earlier
// server ("<namespace>\0<name>") has no revision and continues the latest state.
struct ContinueToken {
  std::optional<int64_t> revision;
  std::string ns, name;
};

Result<ContinueToken> ParseContinue(std::string_view text) {
  const std::optional<std::string> key = Unhex(text);
  const Status bad = InvalidArgument("continue: not a token this server gave");
  if (!key) return bad;
  const size_t first = key->find('\0');
  if (first == std::string::npos) return bad;
  const size_t second = key->find('\0', first + 1);
  if (second == std::string::npos)
    return ContinueToken{std::nullopt, key->substr(0, first), key->substr(first + 1)};
  const std::string rev = key->substr(0, first);
  if (rev.empty() || rev.size() > 18 || !std::all_of(rev.begin(), rev.end(), ::isdigit)) {
    return bad;
  }
  return ContinueToken{std::stoll(rev), key->substr(first + 1, second - first - 1),
                       key->substr(second + 1)};
}

}  // namespace

std::string GroupPath(std::string_view rest) {
  return std::string(api::kGroupPath) + std::string(rest);
}

Result<std::optional<int64_t>> ListRevision(const HttpRequest& req, int64_t latest) {
  auto param = [&](const char* name) {
    auto it = req.query.find(name);
    return it == req.query.end() ? std::string() : it->second;
  };
  const std::string rv = param("resourceVersion"), match = param("resourceVersionMatch"),
                    cont = param("continue"), limit = param("limit");
  if (!match.empty()) {
    if (rv.empty()) {
      return InvalidArgument(
          "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
          "resourceVersion is provided");
    }
    if (!cont.empty()) {
      return InvalidArgument(
          "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
          "provided");
    }
    if (match != "Exact" && match != "NotOlderThan") {
      return InvalidArgument("resourceVersionMatch: Unsupported value: \"" + match +
                             "\": supported values: \"Exact\", \"NotOlderThan\", \"\"");
    }
    if (match == "Exact" && rv == "0") {
      return InvalidArgument(
          "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for "
          "resourceVersion \"0\"");
    }
  }
  if (!rv.empty() && (rv.size() > 18 || !std::all_of(rv.begin(), rv.end(), ::isdigit))) {
    return InvalidArgument("resourceVersion: Invalid value: \"" + rv +
                           "\": must be a resource version this server gave");
  }
  if (!cont.empty()) {
    if (!rv.empty() && rv != "0") {
      return InvalidArgument(
          "continue: Forbidden: specifying resource version is not allowed when using continue");
    }
    // A token that is not one of ours is refused by Page::Of (400, as kube-apiserver does).
    auto token = ParseContinue(cont);
    return token.ok() ? token->revision : std::nullopt;
  }
  const bool has_limit = !limit.empty() && limit != "0";
  if (match == "Exact" || (match.empty() && has_limit && !rv.empty() && rv != "0")) {
    return std::optional<int64_t>(std::stoll(rv));
  }
  if (has_limit) return std::optional<int64_t>(latest);
  return std::optional<int64_t>();
}

HttpResponse ListReadError(const Status& s, const HttpRequest& req) {
  if (s.code() == StatusCode::kFailedPrecondition) {
    const bool paging = req.query.contains("continue") && !req.query.at("continue").empty();
    return Reply(410, "application/json",
                 StatusJson(410, "Expired",
                            paging ? "The provided continue parameter is too old to display a "
                                     "consistent list result. You can start a new list without "
                                     "the continue parameter."
                                   : "The resourceVersion for the provided list is too old."));
  }
  if (s.code() == StatusCode::kInvalidArgument) {
    return Reply(
        422, "application/json",
        StatusJson(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: " + s.message()));
  }
  return Error(s);
}

Result<Page> Page::Of(const HttpRequest& req) {
  Page page;
  if (auto it = req.query.find("limit"); it != req.query.end() && !it->second.empty()) {
    const std::string& v = it->second;
    if (v.size() > 9 || !std::all_of(v.begin(), v.end(), ::isdigit)) {
      return InvalidArgument("limit: must be a whole number");
    }
    page.limit_ = std::stoll(v);
  }
  if (auto it = req.query.find("continue"); it != req.query.end() && !it->second.empty()) {
    auto token = ParseContinue(it->second);
    if (!token.ok()) return token.status();
    page.after_ = Key{token->ns, token->name};
  }
  return page;
}

void Page::Add(json&& item) {
  Key key = NsName(item);
  if (after_ && !(key > *after_)) return;
  ++seen_;
  if (limit_ > 0 && static_cast<int64_t>(kept_.size()) == limit_) {
    if (!(key < kept_.front().first)) return;  // after every kept one
    std::pop_heap(kept_.begin(), kept_.end(), Later());
    kept_.pop_back();
  }
  kept_.emplace_back(std::move(key), std::move(item));
  std::push_heap(kept_.begin(), kept_.end(), Later());
}

std::vector<json> Page::Finish(json* list_meta) && {
  std::sort_heap(kept_.begin(), kept_.end(), Later());
  std::vector<json> items;
  items.reserve(kept_.size());
  for (auto& [key, item] : kept_) items.push_back(std::move(item));
  const int64_t remaining = seen_ - static_cast<int64_t>(items.size());
  if (remaining > 0) {
    const auto& [ns, name] = kept_.back().first;
    const std::string revision = api::Str(*list_meta, "resourceVersion");
    (*list_meta)["continue"] =
        Hex(revision + std::string(1, '\0') + ns + std::string(1, '\0') + name);
    (*list_meta)["remainingItemCount"] = remaining;
  }
  return items;
}

// The keys in the order a document of the list dumps them (nlohmann's objects are sorted):
// apiVersion, items, kind, metadata.
ListText::ListText(std::string_view list_kind, std::string_view api_version)
    : list_kind_(list_kind),
      text_("{\"apiVersion\":" + json(api_version).dump() + ",\"items\":["),
      head_(text_.size()) {}

void ListText::Add(const json& item) {
  Item it{NsName(item), 0, 0};
  if (!items_.empty()) {
    if (it.key < items_.back().key) ordered_ = false;
    text_ += ',';
  }
  it.offset = text_.size();
  text_ += item.dump();
  it.size = text_.size() - it.offset;
  items_.push_back(std::move(it));
}

std::string ListText::Finish(const json& meta) && {
  const std::string tail =
      "],\"kind\":" + json(list_kind_).dump() + ",\"metadata\":" + meta.dump() + "}";
  if (ordered_) return std::move(text_) + tail;
  std::stable_sort(items_.begin(), items_.end(),
                   [](const Item& a, const Item& b) { return a.key < b.key; });
  std::string out;
  out.reserve(text_.size() + tail.size());
  out.append(text_, 0, head_);
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i > 0) out += ',';
    out.append(text_, items_[i].offset, items_[i].size);
  }
  return out + tail;
}

Status Authorize(const Principal& p, const api::KindInfo& kind,
                 const std::optional<std::string>& ns, const std::optional<std::string>& name,
                 Verb verb) {
  using Role = Principal::Role;
  const std::string_view k = kind.kind;
  switch (p.role) {
    case Role::kAdmin:
      return Status::Ok();
    case Role::kNamespace: {
      if (!kind.namespaced || !ns || *ns != p.ns) {
        return PermissionDenied("this token is limited to namespace " + p.ns);
      }
      if (k == "Job" || k == "PodGroup" || k == "LocalQueue") return Status::Ok();
      if ((k == "Event" || k == "NamespaceQuota") &&
          (verb == Verb::kRead || verb == Verb::kWatch)) {
        return Status::Ok();
      }
      return PermissionDenied("a namespace token may read but not change " + std::string(k) +
                              "s; they are the admin's");
    }
    case Role::kAgent:
      if ((k == "Node" || k == "Lease") && verb != Verb::kDelete && verb != Verb::kWatch &&
          (verb == Verb::kWrite || name == p.node)) {
        return Status::Ok();  // a create's or apply's name is checked per object
      }
      // Its Jobs: lists and watches show it those bound to its node only.
      if (k == "Job" && verb != Verb::kDelete) return Status::Ok();
      if (k == "Event" && verb == Verb::kWrite) return Status::Ok();
      return PermissionDenied("an agent token acts for node " + p.node +
                              " only: its Node and Lease, the Jobs bound to it and their pods' "
                              "status");
    case Role::kJoin:
      return PermissionDenied("a join token only exchanges itself for a node's agent token");
    case Role::kMetrics:
      return PermissionDenied("a metrics token only reads /metrics");
    case Role::kExec:
      return PermissionDenied("an exec token only runs commands in the pods of Job " + p.ns + "/" +
                              p.job.substr(0, p.job.find('/')));
  }
  return PermissionDenied("unknown role");
}

Result<json> ReadJson(store::Store& store, const store::ObjectKey& key) {
  auto got = store.Get(key);
  if (!got.ok()) return got.status();
  return got->has_value() ? json::parse((*got)->body, nullptr, false) : json();
}

store::ObjectKey KeyOf(const api::ObjectId& id) {
  return {std::string(id.kind->kind), id.ns, id.name};
}

std::string WarningHeader(std::string_view text) {
  std::string out = "299 - \"";
  for (char c : text.substr(0, 1024)) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out + "\"";
}

void AddWarningHeaders(const std::vector<std::string>& warnings, HttpResponse* r) {
  std::set<std::string_view> seen;
  std::vector<std::string_view> texts;
  size_t total = 0;
  for (const std::string& w : warnings) {
    if (w.empty() || !seen.insert(w).second) continue;
    texts.push_back(w);
    total += w.size();
  }
  // Over the total, every text is cut to kWarningItemBytes and they are added until the total
  // is reached again, as kube-apiserver's warning recorder does; the header count is bounded
  // too, with the last header saying how many were left out.
  const bool cut = total > kWarningTotalBytes;
  size_t written = 0, shown = 0;
  for (std::string_view text : texts) {
    if (cut && written >= kWarningTotalBytes) break;
    if (shown + 1 == kMaxWarningHeaders && texts.size() > kMaxWarningHeaders) break;
    if (cut) text = text.substr(0, kWarningItemBytes);
    r->headers.emplace_back("Warning", WarningHeader(text));
    written += text.size();
    ++shown;
  }
  if (shown < texts.size()) {
    r->headers.emplace_back("Warning",
                            WarningHeader(std::to_string(texts.size() - shown) +
                                          " more warnings are not shown (too many to list)"));
  }
}

Status CheckObject(const json& obj) {
  if (Status s = api::ValidateEnvelope(obj); !s.ok()) return s;
  if (Status s = api::ValidateSpec(obj); !s.ok()) return s;
  const api::ObjectId id = api::IdOf(obj);
  if (const auto st = obj.find("status"); st != obj.end()) {
    if (Status s = api::ValidateStatus(id.kind->kind, *st); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<std::string> StreamProtocol(const HttpRequest& req, std::string_view subresource,
                                   std::string_view instead) {
  const std::string protocol = websocket::ChooseProtocol(
      req.websocket_protocols, {"v5.channel.k8s.io", "v4.channel.k8s.io"});
  if (req.websocket_key.empty() || protocol.empty()) {
    return InvalidArgument(std::string(subresource) +
                           " is served over a WebSocket with the v5.channel.k8s.io or "
                           "v4.channel.k8s.io protocol (kubectl 1.29 and later), not SPDY; " +
                           std::string(instead));
  }
  return protocol;
}

Status CheckContainerParam(const HttpRequest& req, const json& pod_view, const std::string& pod) {
  const std::string name = api::Str(Member(Member(pod_view, "spec"), "containers")[0], "name");
  auto c = req.query.find("container");
  if (c == req.query.end() || c->second.empty() || c->second == name) return Status::Ok();
  return InvalidArgument("container: pod " + pod + " has one container, \"" + name + "\"");
}

bool DryRun(const HttpRequest& req) {
  auto it = req.query.find("dryRun");
  if (it != req.query.end() && it->second == "All") return true;
  // A delete may ask in its DeleteOptions body instead (kubectl delete --dry-run=server does).
  if (req.method != "DELETE" || req.body.empty()) return false;
  auto options = api::ParseJson(req.body);
  if (!options.ok() || !options->is_object()) return false;
  const json& dry = Member(*options, "dryRun");
  return dry.is_array() && std::find(dry.begin(), dry.end(), "All") != dry.end();
}

}  // namespace tessera::server
