// The API server: the request dispatch (Handle, HandleOnce), discovery, /metrics, /usage, and
// the checks every write goes through (AuthorizeWrite, KeepSystemFields, the namespaces' limits,
// NotActedOn). The families of paths are in files of their own: tessera_api.cc, kube_api.cc and
// kube_write.cc, core_api.cc, token_api.cc, job_logs.cc, exec_api.cc, pod_subresources.cc,
// namespaces.cc, services.cc, access_review.cc, resource_metrics.cc, volcano_queues.cc.
#include "server/api_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "api/discovery.h"
#include "api/fields.h"
#include "api/json_read.h"
#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/kube_node.h"
#include "api/kube_table.h"
#include "api/manifest.h"
#include "api/object.h"
#include "api/openapi.h"
#include "api/patch.h"
#include "api/protobuf.h"
#include "api/quantity.h"
#include "api/queue_views.h"
#include "api/resource_metrics.h"
#include "api/status_schema.h"
#include "api/yaml.h"
#include "server/accountant.h"
#include "server/api_common.h"
#include "server/console.h"
#include "server/files.h"
#include "server/json_names.h"
#include "server/log_stream.h"
#include "server/watch.h"

namespace tessera::server {

namespace {

// Whether a path names a resource this server serves (or is no resource path at all): the
// Kubernetes kinds' views (ApiServer::Kube), Tessera's own group, core Nodes (Core), the reviews.
bool ServedPath(std::string_view path) {
  const std::vector<std::string_view> parts = PathSegments(path);
  if (parts.size() >= 2 && parts[0] == "apis") {
    if (parts[1] == api::kGroup || parts[1] == "authorization.k8s.io" ||
        parts[1] == "authentication.k8s.io") {
      return true;
    }
  } else if (parts.empty() || parts[0] != "api") {
    return true;
  }
  return ApiServer::NamesKubeKind(path) ||
         (parts.size() >= 3 && parts[0] == "api" && parts[2] == "nodes");
}

}  // namespace

namespace {

// The lines of a /metrics text a namespace may see: family headers, and samples that carry
// namespace="<ns>".
std::string NamespaceView(std::string_view text, const std::string& ns) {
  const std::string want = "namespace=\"" + ns + "\"";
  std::string out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl == std::string_view::npos ? text.size() : nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    bool keep = line.starts_with("#");
    const size_t open = line.find('{');
    if (!keep && open != std::string_view::npos) {
      for (size_t at = line.find(want, open); at != std::string_view::npos;
           at = line.find(want, at + 1)) {
        if (line[at - 1] == '{' || line[at - 1] == ',') keep = true;
      }
    }
    if (keep) {
      out += line;
      out += '\n';
    }
  }
  return out;
}

}  // namespace

Result<const std::optional<store::StoredObject>*> StoredRead::Object() {
  if (!object_) object_ = store_.Get(key_);
  if (!object_->ok()) return object_->status();
  return &object_->value();
}

Result<const json*> StoredRead::Parsed() {
  auto object = Object();
  if (!object.ok()) return object.status();
  if (!**object) return static_cast<const json*>(nullptr);
  if (cached_) return cached_.get();
  if (!parsed_ && cache_ != nullptr) {
    if (auto kept = cache_->Peek(key_); kept && kept->version == (**object)->version) {
      cached_ = kept->doc;
      return cached_.get();
    }
  }
  if (!parsed_) {
    parsed_ = json::parse((**object)->body, nullptr, false);
    if (parsed_->is_discarded()) {
      return Internal(store::Describe(key_) + ": the stored object is not valid JSON");
    }
  }
  return &*parsed_;
}

Status ApiServer::AuthorizeWrite(const Principal& who, json* obj, StoredRead& stored) {
  const WriteStrategy& strategy = StrategyOf(api::IdOf(*obj).kind->kind);
  if (who.role == Principal::Role::kNamespace && strategy.tenant != nullptr) {
    return (this->*strategy.tenant)(who, *obj);
  }
  if (who.role != Principal::Role::kAgent) return Status::Ok();
  if (strategy.agent == nullptr) {
    return PermissionDenied("an agent token writes only its node's objects");
  }
  return (this->*strategy.agent)(who, obj, stored);
}

ApiServer::ApiServer(ControlPlane& plane)
    : plane_(plane),
      store_(&plane.store()),
      tokens_(plane.tokens()),
      feed_(plane.feed()),
      events_(&plane.events()),
      logs_(plane.data_dir() + "/logs"),
      exec_(plane.exec()),
      metrics_(plane.metrics()),
      accounting_(&plane.accounting()),
      objects_(plane.objects()),
      leases_(plane.leases()),
      clock_([] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      }) {
  leases_.set_started(clock_());
}

ApiServer::~ApiServer() = default;

namespace {}  // namespace

Status ApiServer::KeepSystemFields(const Principal& who, json* obj, store::Write* w,
                                   StoredRead& read) {
  const bool may_set_status = who.role != Principal::Role::kNamespace && obj->contains("status");
  // Every object a client writes, however it was made (create, replace, patch, apply), is held
  // to the object size limit before anything else is done with it.
  TESSERA_RETURN_IF_ERROR(api::CheckObjectBounds(*obj, store::Describe(w->key)));
  auto existing = read.Object();
  if (!existing.ok()) return existing.status();
  auto parsed = read.Parsed();
  if (!parsed.ok()) return parsed.status();
  json& meta = (*obj)["metadata"];
  const json* stored = *parsed;
  const WriteStrategy& strategy = StrategyOf(w->key.kind);
  if (who.role != Principal::Role::kAgent) {
    if (strategy.user != nullptr) {
      TESSERA_RETURN_IF_ERROR((this->*strategy.user)(w->key, *obj, stored));
    }
    TESSERA_RETURN_IF_ERROR(CheckNamespaceLimits(*obj, w->key, stored));
  }
  if (stored) {
    const json& old = *stored;
    if (strategy.keep != nullptr) (this->*strategy.keep)(old, obj);
    if (!may_set_status) {
      obj->erase("status");
      if (old.contains("status")) (*obj)["status"] = old["status"];
    }
    const json& old_meta = old["metadata"];
    for (const char* k : {"creationTimestamp", "uid"}) {
      meta.erase(k);
      if (old_meta.contains(k)) meta[k] = old_meta[k];
    }
    // What was read must still be the object's when the write lands.
    if (!w->expected_version) w->expected_version = (**existing)->version;
  } else {
    if (!may_set_status) obj->erase("status");
    meta["creationTimestamp"] = FormatTime(clock_());
    meta["uid"] = NewUid();
  }
  w->body = StoredBody(*obj);
  return Status::Ok();
}

namespace {

// The pods a Job asks for: its tasks' replicas.
int64_t PodsOf(const json& job) {
  int64_t n = 0;
  for (const json& t : ListOf(Member(Member(job, "spec"), "tasks"))) {
    const json& replicas = Member(t, "replicas");
    n += replicas.is_number_integer() ? std::max<int64_t>(0, replicas.get<int64_t>()) : 1;
  }
  return n;
}

bool Finished(const json& job) {
  const std::string phase = Str(Member(job, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

// What the request under way has added to each namespace so far, beyond what is stored (the
// items of one apply count for the next); HandleOnce starts it afresh.
struct RequestCounts {
  std::map<std::string, std::pair<int64_t, int64_t>, std::less<>> added;  // ns -> objects, pods
};
thread_local RequestCounts t_counts;

// A Job's pods while it has not ended: what counts against its namespace's pods.
int64_t PendingPods(const json& job) { return Finished(job) ? 0 : PodsOf(job); }

}  // namespace

Status ApiServer::CheckNamespaceLimits(const json& obj, const store::ObjectKey& key,
                                       const json* stored) {
  static constexpr std::string_view kCounted[] = {"Job", "PodGroup", "LocalQueue",
                                                  "NamespaceQuota"};
  if (key.ns.empty() ||
      std::find(std::begin(kCounted), std::end(kCounted), key.kind) == std::end(kCounted)) {
    return Status::Ok();
  }
  auto& [added_objects, added_pods] = t_counts.added[key.ns];
  auto exceeded = [&](const std::string& quota, const char* what, int64_t requested, int64_t used,
                      int64_t limited) {
    const std::string r = std::string(what) + "=";
    return PermissionDenied("exceeded quota: " + quota + ", requested: " + r +
                            std::to_string(requested) + ", used: " + r + std::to_string(used) +
                            ", limited: " + r + std::to_string(limited));
  };
  // The tallies are kept by the object cache as changes land: no listing is walked here.
  ObjectCache::Tally jobs, quotas_here;
  int64_t objects = added_objects;
  for (std::string_view kind : kCounted) {
    auto t = objects_.TallyOf(kind, key.ns, kind == "Job" ? &PendingPods : nullptr);
    if (!t.ok()) return t.status();
    objects += t->objects;
    if (kind == "Job") jobs = *t;
    if (kind == "NamespaceQuota") quotas_here = *t;
  }
  if (stored == nullptr && namespace_limits_.objects > 0 &&
      objects + 1 > namespace_limits_.objects) {
    return exceeded("tessera-objects (the server's --max-objects-per-namespace)", "objects", 1,
                    objects, namespace_limits_.objects);
  }
  if (stored == nullptr) ++added_objects;
  if (key.kind != "Job") return Status::Ok();
  // The tightest of the server's limit and the namespace's ResourceQuotas' `pods`.
  std::optional<int64_t> limit;
  std::string quota;
  if (namespace_limits_.pods > 0) {
    limit = namespace_limits_.pods;
    quota = "tessera-pods (the server's --max-pods-per-namespace)";
  }
  if (quotas_here.objects > 0) {
    auto quotas = objects_.List("NamespaceQuota");
    if (!quotas.ok()) return quotas.status();
    for (const StoredJson& q : *quotas) {
      if (Str(Member(q.obj(), "metadata"), "namespace") != key.ns) continue;
      auto decoded = api::DecodeNamespaceQuota(q.obj());
      if (!decoded.ok() || !decoded->pods || (limit && *decoded->pods >= *limit)) continue;
      limit = decoded->pods;
      quota = Str(Member(q.obj(), "metadata"), "name");
    }
  }
  const int64_t requested = PodsOf(obj);
  const int64_t used = jobs.measured + added_pods - (stored != nullptr ? PendingPods(*stored) : 0);
  if (limit && used + requested > *limit) {
    return exceeded(quota, "pods", requested, used, *limit);
  }
  added_pods += requested - (stored != nullptr ? PendingPods(*stored) : 0);
  return Status::Ok();
}

Status ApiServer::CheckRootTasks(const json& job, const std::string& ns) {
  const json& tasks = Member(Member(job, "spec"), "tasks");
  if (!tasks.is_array()) return Status::Ok();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (Member(tasks[i], "runAsUser") != 0) continue;
    auto space = ReadJson(*store_, {"Namespace", "", ns});
    if (!space.ok()) return space.status();
    const json& labels = Member(Member(*space, "metadata"), "labels");
    if (Str(labels, std::string(kPodSecurityEnforce).c_str()) == "privileged") {
      return Status::Ok();
    }
    return PermissionDenied(
        "spec.tasks[" + std::to_string(i) +
        "].runAsUser: 0 (root) runs only in a namespace the "
        "admin marks privileged (label " +
        std::string(kPodSecurityEnforce) + "=privileged on Namespace " + ns +
        "); without runAsUser a task runs as an unprivileged user of its pod's own");
  }
  return Status::Ok();
}

store::Write ApiServer::EventWrite(std::string_view kind, const std::string& ns,
                                   const std::string& about, std::string_view type,
                                   std::string_view reason, const std::string& message) {
  const int64_t now = clock_();
  const std::string at = ns.empty() ? "tessera-system" : ns;
  const std::string name =
      about.substr(0, 200) + "." + std::to_string(now) + "-" + std::to_string(++event_seq_);
  const json e = api::EventObject(at, name, type, reason, api::SafeText(message, 4000),
                                  FormatTime(now), kind, about);
  return {store::Write::Op::kCreate, {"Event", at, name}, e.dump(), std::nullopt};
}

std::vector<std::string> ApiServer::NotActedOn(const std::vector<api::ObjectId>& ids,
                                               const std::vector<std::vector<std::string>>& notes,
                                               std::vector<store::Write>* writes) {
  std::vector<std::string> warnings;
  for (size_t i = 0; i < ids.size() && i < notes.size(); ++i) {
    if (notes[i].empty()) continue;
    std::string message;
    for (const std::string& n : notes[i]) {
      message += (message.empty() ? "" : "; ") + n;
      warnings.push_back(std::string(ids[i].kind->kind) + " " +
                         (ids[i].ns.empty() ? "" : ids[i].ns + "/") + ids[i].name + ": " + n);
    }
    writes->push_back(
        EventWrite(ids[i].kind->kind, ids[i].ns, ids[i].name, "Warning", "NotActedOn", message));
  }
  return warnings;
}

namespace {

// Set when a commit on this thread failed because a version it was pinned to had moved on:
// another write landed between the request's read and its commit, and the request is run again.
thread_local bool t_commit_conflicted = false;

// How many times a write request runs when other writes keep landing under it, as
// kube-apiserver's GuaranteedUpdate retries.
constexpr int kWriteAttempts = 5;

}  // namespace

Result<std::vector<int64_t>> ApiServer::Commit(std::span<const store::Write> writes) {
  auto r = plane_.Commit(writes);
  if (!r.ok() && r.status().code() == StatusCode::kConflict) t_commit_conflicted = true;
  return r;
}

Result<std::unique_ptr<ApiServer>> ApiServer::Open(const std::string& data_dir,
                                                   ControlPlane::StoreOpener open_store) {
  auto plane = ControlPlane::Open(data_dir, std::move(open_store));
  if (!plane.ok()) return plane.status();
  auto server = std::make_unique<ApiServer>(**plane);
  server->owned_ = std::move(plane).value();
  return server;
}

HttpResponse ApiServer::Usage(const HttpRequest& req, const Principal& who) {
  const int64_t now = clock_();
  // RFC 3339, or a duration before now.
  auto when = [&](const char* key, int64_t absent) -> Result<int64_t> {
    auto it = req.query.find(key);
    if (it == req.query.end() || it->second.empty()) return absent;
    if (const int64_t t = ParseTime(it->second); t >= 0) return t;
    auto ago = api::ParseDurationMs(it->second, key);
    if (!ago.ok()) {
      return InvalidArgument(std::string(key) + ": must be an RFC 3339 time or a duration " +
                             "before now such as 24h, got \"" + it->second + "\"");
    }
    return now - *ago;
  };
  auto since = when("since", 0);
  if (!since.ok()) return Error(since.status());
  auto until = when("until", now);
  if (!until.ok()) return Error(until.status());
  if (*until <= *since) return Error(InvalidArgument("until: must be after since"));
  core::UsageGroup by = core::UsageGroup::kNamespace;
  const std::string by_text = req.query.contains("by") ? req.query.at("by") : "namespace";
  if (by_text == "queue") {
    by = core::UsageGroup::kQueue;
  } else if (by_text == "job") {
    by = core::UsageGroup::kJob;
  } else if (by_text != "namespace") {
    return Error(InvalidArgument("by: must be namespace, queue or job, got \"" + by_text + "\""));
  }
  std::optional<std::string> ns;
  if (who.role == Principal::Role::kNamespace) ns = who.ns;
  // One group's figures over [from, to).
  auto rows_of = [&](int64_t from, int64_t to) -> Result<json> {
    auto rows = accounting_->Usage(by, from, to, ns);
    if (!rows.ok()) return rows.status();
    json items = json::array();
    for (const core::UsageRow& r : *rows) {
      json item = {{"gpuHours", r.gpu_hours()},
                   {"idleGpuHours", r.idle_gpu_hours()},
                   {"cost", r.cost_hundredths / 100.0},
                   {"wastedCost", r.wasted_cost_hundredths / 100.0},
                   {"priced", !r.unpriced}};
      if (by == core::UsageGroup::kJob) {
        const size_t slash = r.key.find('/');
        item["namespace"] = r.key.substr(0, slash);
        item["job"] = r.key.substr(slash + 1);
      } else {
        item[by_text] = r.key;
      }
      items.push_back(std::move(item));
    }
    return items;
  };
  auto items = rows_of(*since, *until);
  if (!items.ok()) return Error(items.status());
  json report = {{"kind", "UsageReport"},
                 {"apiVersion", api::kApiVersion},
                 {"by", by_text},
                 {"since", FormatTime(*since)},
                 {"until", FormatTime(*until)},
                 {"currency", accounting_->options().currency},
                 {"items", std::move(items).value()}};
  // step: the same figures per interval of that length, oldest first (the console's charts).
  if (auto it = req.query.find("step"); it != req.query.end()) {
    auto step = api::ParseDurationMs(it->second, "step");
    constexpr int64_t kMaxSteps = 1000;
    if (!step.ok() || *step < 60'000) {
      return Error(
          InvalidArgument("step: must be a duration of a minute or more, such as 1h, "
                          "got \"" +
                          it->second + "\""));
    }
    if ((*until - *since) / *step >= kMaxSteps) {
      return Error(InvalidArgument("step: " + it->second + " makes more than " +
                                   std::to_string(kMaxSteps) + " intervals from since to until"));
    }
    json series = json::array();
    for (int64_t from = *since; from < *until; from += *step) {
      const int64_t to = std::min(*until, from + *step);
      auto bucket = rows_of(from, to);
      if (!bucket.ok()) return Error(bucket.status());
      series.push_back(
          {{"start", FormatTime(from)}, {"end", FormatTime(to)}, {"items", std::move(*bucket)}});
    }
    report["series"] = std::move(series);
  }
  return Json(200, std::move(report));
}

namespace {

// The discovery document of /apis/{group} or /apis/{group}/{version} of a served Kubernetes
// group; null for any other path.
json Discovery(std::string_view path) {
  if (!path.starts_with("/apis/")) return json();
  path.remove_prefix(6);
  const size_t slash = path.find('/');
  if (slash == 0) return json();
  if (slash == std::string_view::npos) return api::KubeGroup(path);
  const std::string_view version = path.substr(slash + 1);
  if (version.find('/') != std::string_view::npos) return json();
  return api::KubeResourceList(path.substr(0, slash), version);
}

}  // namespace

ClientId ApiServer::Identify(const HttpRequest& req) {
  Result<Principal> who = tokens_.Authenticate(req.authorization);
  if (!who.ok()) return ClientId{};
  using Role = Principal::Role;
  ClientId id;
  id.key = who->token_id;
  id.level = who->role == Role::kAdmin   ? ClientId::Level::kExempt
             : who->role == Role::kAgent ? ClientId::Level::kAgent
                                         : ClientId::Level::kTenant;
  if (who->role == Role::kNamespace || who->role == Role::kExec) id.ns = who->ns;
  return id;
}

HttpResponse ApiServer::Handle(const HttpRequest& req) {
  for (int attempt = 1;; ++attempt) {
    t_commit_conflicted = false;
    HttpResponse r = HandleOnce(req);
    if (r.status != 409 || !t_commit_conflicted || attempt == kWriteAttempts) return r;
  }
}

HttpResponse ApiServer::HandleOnce(const HttpRequest& req) {
  t_counts.added.clear();
  if (req.path == "/healthz") return Reply(200, "text/plain", "ok");
  if (req.path == "/readyz") {
    return Reply(200, "text/plain", "ok (revision " + std::to_string(store_->Revision()) + ")");
  }
  // As Kubernetes' system:public-info-viewer: the version is public.
  if (req.path == "/version" && req.method == "GET") return Json(200, api::VersionInfo());
  // The console's page and scripts hold no data: they ask the API with the user's token.
  if (std::optional<HttpResponse> r = ServeConsole(req)) return std::move(*r);
  Result<Principal> who = tokens_.Authenticate(req.authorization);
  if (!who.ok()) return Error(who.status());
  // Answering as the token while the client asked as another user would mislead it.
  if (req.impersonates) {
    return Error(PermissionDenied(
        "impersonation (Impersonate-User, Impersonate-Group: kubectl --as) is not supported; "
        "use the token of that user"));
  }
  // kubectl's typed clients send built-in kinds as protobuf: read as the JSON they encode.
  if (req.content_type.starts_with(api::kProtobufContentType)) return Protobuf(req, *who);
  // Discovery, for every valid token (Kubernetes' system:discovery).
  if (req.method == "GET") {
    if (std::optional<HttpResponse> r = ServeDiscovery(req)) return std::move(*r);
  }
  // Exec sessions are not stored: they take no write turn; nor are usage reports.
  if (auto r = Exec(req, *who)) return std::move(r).value();
  if (auto r = ResourceMetrics(req, *who)) return std::move(r).value();
  // Requests run side by side, writes too: each reads, patches and checks on its own, and takes
  // the write lock only to commit (Commit), against the versions it read.
  if (std::optional<HttpResponse> r = Reviews(req, *who)) return std::move(*r);
  if (std::optional<HttpResponse> r = Kube(req, *who)) return std::move(*r);
  if (req.path == "/api/v1" || req.path.starts_with("/api/v1/")) return Core(req, *who);
  if (req.path == "/metrics" && req.method == "GET") return ServeMetrics(*who);
  if (req.path == GroupPath("/usage") && req.method == "GET") {
    if (who->role != Principal::Role::kAdmin && who->role != Principal::Role::kNamespace) {
      return Error(PermissionDenied("usage is read with the admin or a namespace token"));
    }
    return Usage(req, *who);
  }
  if (req.path == GroupPath("/tokens") || req.path.starts_with(GroupPath("/tokens/"))) {
    return Tokens(req, *who);
  }
  if (req.path == GroupPath("/gpus") && req.method == "GET") return Gpus(req, *who);
  if (req.path == GroupPath("/pendingworkloads") && req.method == "GET") {
    return PendingWorkloads(req, *who);
  }
  if (req.path == GroupPath("/quotas") && req.method == "GET") return Quotas(*who);
  if (req.path == GroupPath("/apply") && req.method == "POST") return ApplyDocuments(req, *who);
  return TesseraObjects(req, *who);
}

HttpResponse ApiServer::Protobuf(const HttpRequest& req, const Principal& who) {
  auto obj = api::KubeProtobufToJson(req.body);
  // A kind not served at all is Kubernetes' 404 (kubectl: "the server doesn't have a resource
  // type"), whatever its body.
  // core/v1 services answer writes whatever their body (server/services.cc).
  if (!obj.ok() && req.path.starts_with("/api/v1/")) {
    if (auto r = Services(req, who, std::string_view(req.path).substr(std::strlen("/api/v1")))) {
      return *r;
    }
  }
  if (!obj.ok() && !ServedPath(req.path)) {
    return Error(NotFound("the server could not find the requested resource (" + req.method + " " +
                          req.path + ")"));
  }
  if (!obj.ok() && obj.status().code() == StatusCode::kFailedPrecondition) {
    return Reply(415, "application/json",
                 StatusJson(415, "UnsupportedMediaType", obj.status().message()));
  }
  if (!obj.ok()) return Error(obj.status());
  HttpRequest decoded = req;
  decoded.content_type = "application/json";
  decoded.body = obj->dump();
  return HandleOnce(decoded);
}

std::optional<HttpResponse> ApiServer::ServeDiscovery(const HttpRequest& req) {
  if ((req.path == "/api" || req.path == "/apis") && api::WantsAggregatedDiscovery(req.accept)) {
    return Reply(200, std::string(api::kAggregatedDiscoveryType),
                 api::AggregatedDiscovery(req.path == "/api").dump());
  }
  if (req.path == "/api") return Json(200, api::CoreApiVersions());
  if (req.path == "/api/v1") return Json(200, api::CoreResourceList());
  if (req.path == "/apis") return Json(200, api::ApiGroupList());
  if (req.path == "/apis/" + std::string(api::kGroup)) return Json(200, api::TesseraGroup());
  if (req.path == "/apis/" + std::string(api::kMetricsGroup)) return Json(200, api::MetricsGroup());
  if (req.path ==
      "/apis/" + std::string(api::kMetricsGroup) + "/" + std::string(api::kMetricsVersion)) {
    return Json(200, api::MetricsResourceList());
  }
  if (req.path == api::kGroupPath) return Json(200, api::TesseraResourceList());
  if (json d = Discovery(req.path); !d.is_null()) return Json(200, d);
  if (req.path == "/openapi/v2") {
    if (api::WantsProtobuf(req.accept)) {
      return Reply(200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                   api::OpenApiV2Protobuf());
    }
    return Json(200, api::OpenApiV2());
  }
  if (req.path == "/openapi/v3") return Json(200, api::OpenApiV3Index());
  if (req.path.starts_with("/openapi/v3/")) {
    json doc = api::OpenApiV3(std::string_view(req.path).substr(12));
    if (!doc.is_null()) return Json(200, doc);
  }
  return std::nullopt;
}

HttpResponse ApiServer::ServeMetrics(const Principal& who) {
  using Role = Principal::Role;
  if (who.role != Role::kAdmin && who.role != Role::kMetrics && who.role != Role::kNamespace) {
    return Error(
        PermissionDenied("/metrics is read with the admin, a metrics or a namespace "
                         "token"));
  }
  metrics_.SetWatchLag(std::max<int64_t>(0, plane_.store().Revision() - feed_.head()));
  std::string text = RenderMetrics(objects_, leases_, metrics_, accounting_->idle(), clock_());
  if (who.role == Role::kNamespace) text = NamespaceView(text, who.ns);
  return Reply(200, "text/plain; version=0.0.4", std::move(text));
}

}  // namespace tessera::server
