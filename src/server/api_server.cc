// Longer than 800 lines for now: the request dispatch (HandleOnce), tokens, logs, usage and the
// write checks share ApiServer's private state (store, feed, cache, leases, accountant). They
// leave this file as that state moves into a control-plane layer of its own and the native and
// Kubernetes paths become one pipeline with a strategy per kind.
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
#include "server/files.h"
#include "server/log_stream.h"
#include "server/watch.h"

namespace tessera::server {

using api::ListOf;
using api::Member;
using api::Str;

using nlohmann::json;

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

// A path of Tessera's group: /apis/tessera.io/v1 followed by `rest`.
std::string GroupPath(std::string_view rest) {
  return std::string(api::kGroupPath) + std::string(rest);
}

// What an agent may change in a bound Job's status: the state of the pods bound to its node,
// and the Job's outcome (phase Succeeded or Failed, message, reason, finishedAt). Everything else
// must be as stored.
Status CheckAgentStatus(const Principal& p, const json& stored, const json& wanted) {
  const json& old_status = Member(stored, "status");
  const json& new_status = Member(wanted, "status");
  auto deny = [&](const std::string& field) {
    return PermissionDenied("status." + field + ": an agent reports only the state of pods on " +
                            p.node + " and the job's outcome");
  };
  std::set<std::string> keys;
  if (old_status.is_object()) {
    for (const auto& [key, v] : old_status.items()) keys.insert(key);
  }
  if (new_status.is_object()) {
    for (const auto& [key, v] : new_status.items()) keys.insert(key);
  }
  for (const std::string& key : keys) {
    if (key == "message" || key == "finishedAt") continue;
    if (key == "reason") {
      // Why it failed (BackoffLimitExceeded): written with a Failed outcome only.
      if (Member(old_status, "reason") != Member(new_status, "reason") &&
          Member(new_status, "phase") != "Failed") {
        return deny(key);
      }
      continue;
    }
    const json& a = Member(old_status, key.c_str());
    const json& b = Member(new_status, key.c_str());
    if (key == "phase") {
      if (a != b && b != "Succeeded" && b != "Failed") return deny("phase");
      continue;
    }
    if (key != "pods") {
      if (a != b) return deny(key);
      continue;
    }
    if (!a.is_array() || !b.is_array() || a.size() != b.size()) return deny("pods");
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      if (!a[i].is_object() || !b[i].is_object() || Str(a[i], "node") != p.node) {
        return deny("pods[" + std::to_string(i) + "]");
      }
      json x = a[i], y = b[i];
      x.erase("state");
      y.erase("state");
      if (x != y) return deny("pods[" + std::to_string(i) + "]");
    }
  }
  return Status::Ok();
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

HttpResponse ApiServer::Tokens(const HttpRequest& req, const Principal& who) {
  using Role = Principal::Role;
  const bool admin = who.role == Role::kAdmin;
  if (req.method == "GET" && req.path == GroupPath("/tokens")) {
    if (!admin) return Error(PermissionDenied("only the admin token lists tokens"));
    auto list = tokens_.List();
    if (!list.ok()) return Error(list.status());
    json items = json::array();
    for (const TokenInfo& t : *list) {
      json item = {{"id", t.id}, {"role", RoleName(t.role)}};
      if (!t.ns.empty()) item["namespace"] = t.ns;
      if (!t.node.empty()) item["node"] = t.node;
      if (!t.created.empty()) item["created"] = t.created;
      items.push_back(std::move(item));
    }
    return Json(200, {{"kind", "TokenList"}, {"apiVersion", api::kApiVersion}, {"items", items}});
  }
  if (req.method == "DELETE" && req.path.starts_with(GroupPath("/tokens/"))) {
    if (!admin) return Error(PermissionDenied("only the admin token revokes tokens"));
    const std::string id = req.path.substr(GroupPath("/tokens/").size());
    if (Status s = tokens_.Revoke(id); !s.ok()) return Error(s);
    feed_.CatchUp();
    return Json(
        200, {{"kind", "Status"}, {"status", "Success"}, {"message", "token " + id + " revoked"}});
  }
  if (req.method != "POST" || req.path != GroupPath("/tokens")) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "tokens are created with POST, listed with GET and revoked with "
                            "DELETE " +
                                GroupPath("/tokens/{id}")));
  }
  if (!admin && who.role != Role::kJoin) {
    return Error(PermissionDenied("only the admin token creates tokens"));
  }
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  api::Fields f(*body, "");
  std::string ns, node;
  int role = 0;
  if (Status s = f.String("namespace", &ns); !s.ok()) return Error(s);
  if (Status s = f.String("node", &node); !s.ok()) return Error(s);
  if (Status s = f.Enum("role", {"namespace", "agent", "metrics"}, &role); !s.ok()) {
    return Error(s);
  }
  if (Status s = f.Finish(); !s.ok()) return Error(s);
  if (role != 0 && !ns.empty()) {
    return Error(InvalidArgument("namespace: only a namespace token has one"));
  }
  if (role != 1 && !node.empty())
    return Error(InvalidArgument("node: only an agent token has one"));
  const std::string created = FormatTime(clock_());
  json reply;
  Result<std::string> token = Internal("no token");
  if (who.role == Role::kJoin && (role != 1 || node.empty())) {
    return Error(PermissionDenied("a join token only creates an agent token for a node"));
  }
  if (role == 1 && node.empty()) {
    token = tokens_.Create(Role::kJoin, "", "", created);
    reply = {{"role", "join"}};
  } else if (role == 1) {
    if (Status s = api::ValidateName(node, false, "node"); !s.ok()) return Error(s);
    if (who.role == Role::kJoin) {
      // A join token mints the first agent token of a node, and nothing else.
      auto has = tokens_.NodeHasAgent(node);
      if (!has.ok()) return Error(has.status());
      if (*has) {
        return Error(Conflict("node " + node +
                              " already has an agent token; the admin revokes "
                              "it (tessera token revoke) before the node joins again"));
      }
    }
    token = tokens_.Create(Role::kAgent, "", node, created);
    reply = {{"role", "agent"}, {"node", node}};
  } else if (role == 2) {
    token = tokens_.Create(Role::kMetrics, "", "", created);
    reply = {{"role", "metrics"}};
  } else {
    if (Status s = api::ValidateName(ns, true, "namespace"); !s.ok()) return Error(s);
    token = tokens_.Create(Role::kNamespace, ns, "", created);
    reply = {{"role", "namespace"}, {"namespace", ns}};
  }
  if (!token.ok()) return Error(token.status());
  feed_.CatchUp();
  reply["id"] = token->substr(0, token->find('.'));
  reply["token"] = *token;
  return Json(201, reply);
}

void ApiServer::EndFinishedLogs(const json& job, const std::string& node) {
  const json& meta = Member(job, "metadata");
  for (const json& p : ListOf(Member(Member(job, "status"), "pods"))) {
    const std::string phase = Str(Member(p, "state"), "phase");
    if (Str(p, "node") != node || (phase != "Succeeded" && phase != "Failed")) continue;
    logs_.End(Str(meta, "namespace"), Str(meta, "name"), Str(meta, "uid"), Str(p, "name"));
  }
}

json ApiServer::WithLease(json node) {
  auto lease = ReadJson(*store_, {"Lease", "", Str(Member(node, "metadata"), "name")});
  const bool stored = lease.ok() && lease->is_object();
  const int64_t beat = leases_.LastBeat(node, stored ? &*lease : nullptr);
  if (beat >= 0) node["status"]["heartbeat"] = FormatTime(beat);
  return node;
}

Status ApiServer::AuthorizeWrite(const Principal& who, json* obj) {
  using Role = Principal::Role;
  const api::ObjectId id = api::IdOf(*obj);
  const std::string_view kind = id.kind->kind;
  if (who.role == Role::kNamespace && kind == "LocalQueue") {
    // It may point only at a Queue the admin opened to this namespace.
    auto lq = api::DecodeLocalQueue(*obj);
    if (!lq.ok()) return lq.status();
    auto queue = ReadJson(*store_, {"Queue", "", lq->queue});
    if (!queue.ok()) return queue.status();
    if (!api::QueueAllowsNamespace(*queue, who.ns)) {
      return PermissionDenied("spec.clusterQueue: queue " + lq->queue +
                              " is not open to namespace " + who.ns +
                              " (the admin lists it in the Queue's spec.allowedNamespaces)");
    }
    return Status::Ok();
  }
  if (who.role != Role::kAgent) return Status::Ok();
  if (kind == "Node") {
    if (id.name != who.node) {
      return PermissionDenied("an agent token registers and updates node " + who.node + " only");
    }
    // Registered: what the admin set stays as it is on this path as on the Kubernetes one.
    auto stored = ReadJson(*store_, KeyOf(id));
    if (!stored.ok()) return stored.status();
    if (!stored->is_null()) TESSERA_RETURN_IF_ERROR(api::CheckAgentNodeChange(*stored, *obj));
    // A heartbeat is timed by the server's clock, not the node's: the node's fence and the
    // server's grace period then measure from the same instant whatever the clocks' skew.
    json& status = (*obj)["status"];
    if (status.is_object() && status.contains("heartbeat"))
      status["heartbeat"] = FormatTime(clock_());
    return Status::Ok();
  }
  if (kind == "Lease") {
    if (id.name != who.node) {
      return PermissionDenied("an agent token renews the lease of node " + who.node + " only");
    }
    // Renewed by the server's clock, as a heartbeat is.
    json& spec = (*obj)["spec"];
    if (!spec.is_object()) spec = json::object();
    spec["holderIdentity"] = who.node;
    spec["renewTime"] = FormatTime(clock_());
    return Status::Ok();
  }
  if (kind == "Event") {
    const json& about = Member(Member(*obj, "spec"), "involvedObject");
    if (id.ns != "tessera-system" || Str(about, "kind") != "Node" ||
        Str(about, "name") != who.node) {
      return PermissionDenied("an agent reports events about node " + who.node +
                              " only, in namespace tessera-system");
    }
    return Status::Ok();
  }
  if (kind != "Job") return PermissionDenied("an agent token writes only its node's objects");
  auto stored = ReadJson(*store_, KeyOf(id));
  if (!stored.ok()) return stored.status();
  const json& old = *stored;
  if (!BoundTo(old, who.node)) {
    return PermissionDenied("Job " + id.ns + "/" + id.name + " has no pod bound to node " +
                            who.node);
  }
  if (Status s = CheckAgentStatus(who, old, *obj); !s.ok()) return s;
  // Status only: the spec and metadata stay as stored (the version read is still checked).
  const json version = Member(Member(*obj, "metadata"), "resourceVersion");
  (*obj)["spec"] = Member(old, "spec");
  (*obj)["metadata"] = Member(old, "metadata");
  if (!version.is_null()) (*obj)["metadata"]["resourceVersion"] = version;
  return Status::Ok();
}

Status ApiServer::AuthorizeLogs(const HttpRequest& req, const Principal& who, const std::string& ns,
                                const std::string& job) {
  using Role = Principal::Role;
  if (who.role == Role::kAdmin) return Status::Ok();
  if (req.method != "POST") {
    if (who.role == Role::kNamespace && who.ns == ns) return Status::Ok();
    return PermissionDenied(who.role == Role::kNamespace
                                ? "this token is limited to namespace " + who.ns
                                : "logs are read with the admin or the namespace's token");
  }
  if (who.role != Role::kAgent) return PermissionDenied("only node agents ship logs");
  const auto pod = req.query.find("pod");
  if (pod == req.query.end() || pod->second.empty()) {
    return InvalidArgument("pod: name the pod whose output this is");
  }
  auto stored = ReadJson(*store_, {"Job", ns, job});
  if (!stored.ok()) return stored.status();
  for (const json& p : ListOf(Member(Member(*stored, "status"), "pods"))) {
    if (Str(p, "name") == pod->second && Str(p, "node") == who.node) return Status::Ok();
  }
  return PermissionDenied("an agent ships output only for pods bound to node " + who.node);
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

namespace {

// Kubernetes refuses changes to a running Job's pod template; Tessera does the same while a Job
// has pods placed: its tasks, queue, priority class, pod group, minMember and an array's
// completions, completionMode and backoffLimitPerIndex stay as they are, and no scheduling gate
// is added.
Status CheckJobImmutable(const json& old, const json& now) {
  if (Str(Member(old, "status"), "phase") != "Admitted") return Status::Ok();
  const json& a = Member(old, "spec");
  const json& b = Member(now, "spec");
  auto refuse = [](const std::string& path) {
    return InvalidArgument(path +
                           ": field is immutable while the job has pods placed (as Kubernetes "
                           "refuses changes to a running Job's pod template); suspend the job "
                           "(spec.suspend: true) first, or delete and re-create it");
  };
  const json& ta = Member(a, "tasks");
  const json& tb = Member(b, "tasks");
  if (!ta.is_array() || !tb.is_array() || ta.size() != tb.size()) {
    if (ta != tb) return refuse("spec.tasks");
  } else {
    for (size_t i = 0; i < ta.size(); ++i) {
      if (ta[i] == tb[i]) continue;
      std::set<std::string> keys;
      for (const auto& [k, v] : ta[i].items()) keys.insert(k);
      for (const auto& [k, v] : tb[i].items()) keys.insert(k);
      for (const std::string& k : keys) {
        if (Member(ta[i], k.c_str()) != Member(tb[i], k.c_str())) {
          return refuse("spec.tasks[" + std::to_string(i) + "]." + k);
        }
      }
    }
  }
  for (const char* k : {"queue", "priorityClassName", "podGroup", "minMember", "completions",
                        "completionMode", "backoffLimitPerIndex"}) {
    if (Member(a, k) != Member(b, k)) return refuse(std::string("spec.") + k);
  }
  if (!Member(b, "schedulingGates").empty() &&
      Member(a, "schedulingGates") != Member(b, "schedulingGates")) {
    return refuse("spec.schedulingGates");
  }
  return Status::Ok();
}

}  // namespace

Status ApiServer::KeepSystemFields(const Principal& who, json* obj, store::Write* w) {
  const bool may_set_status = who.role != Principal::Role::kNamespace && obj->contains("status");
  // Every object a client writes, however it was made (create, replace, patch, apply), is held
  // to the object size limit before anything else is done with it.
  TESSERA_RETURN_IF_ERROR(api::CheckObjectBounds(*obj, store::Describe(w->key)));
  auto existing = store_->Get(w->key);
  if (!existing.ok()) return existing.status();
  json& meta = (*obj)["metadata"];
  const std::optional<json> stored =
      existing->has_value() ? std::optional<json>(json::parse((*existing)->body)) : std::nullopt;
  if (who.role != Principal::Role::kAgent) {
    if (stored && w->key.kind == "Job") TESSERA_RETURN_IF_ERROR(CheckJobImmutable(*stored, *obj));
    TESSERA_RETURN_IF_ERROR(CheckVolcanoQueueOpen(*obj, stored ? &*stored : nullptr));
    if (w->key.kind == "Job") TESSERA_RETURN_IF_ERROR(CheckRootTasks(*obj, w->key.ns));
    TESSERA_RETURN_IF_ERROR(CheckNamespaceLimits(*obj, w->key, stored ? &*stored : nullptr));
  }
  if (stored) {
    const json& old = *stored;
    // A Volcano Queue's state is its Commands' (OpenQueue, CloseQueue): a write of the queue
    // from its manifest, which names no stopPolicy, keeps it as Volcano keeps a queue's status.
    const json& annotations = Member(Member(*obj, "metadata"), "annotations");
    if (w->key.kind == "Queue" && Str(annotations, "tessera.io/volcano-queue") == "true" &&
        !Member(Member(*obj, "spec"), "stopPolicy").is_string() && api::VolcanoQueueClosed(old)) {
      (*obj)["spec"]["stopPolicy"] = old["spec"]["stopPolicy"];
    }
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
    if (!w->expected_version) w->expected_version = (*existing)->version;
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
  auto rows = accounting_->Usage(by, *since, *until, ns);
  if (!rows.ok()) return Error(rows.status());
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
  return Json(200, {{"kind", "UsageReport"},
                    {"apiVersion", api::kApiVersion},
                    {"by", by_text},
                    {"since", FormatTime(*since)},
                    {"until", FormatTime(*until)},
                    {"currency", accounting_->options().currency},
                    {"items", std::move(items)}});
}

HttpResponse ApiServer::Logs(const HttpRequest& req, const std::string& ns, const std::string& job,
                             LogStore::Runs runs) {
  const auto pod_it = req.query.find("pod");
  std::string pod = pod_it == req.query.end() ? "" : pod_it->second;
  if (req.method != "GET" && req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "logs are read with GET, shipped with POST"));
  }
  auto job_obj = store_->Get({"Job", ns, job});
  if (!job_obj.ok()) return Error(job_obj.status());
  if (!job_obj->has_value()) return Error(NotFound("Job " + ns + "/" + job + " not found"));
  // A log belongs to one Job: the one of this name now, by its uid.
  const std::string uid = Str(Member(json::parse((*job_obj)->body), "metadata"), "uid");
  if (req.method == "POST") {
    if (pod.empty()) return Error(InvalidArgument("pod: name the pod whose output this is"));
    // Output of a Job that was deleted (and perhaps created again under its name) is dropped.
    if (auto sent = req.query.find("uid"); sent != req.query.end() && sent->second != uid) {
      return Error(NotFound("Job " + ns + "/" + job + " of uid " + sent->second + " is gone"));
    }
    // `start`: the agent's token for a new run of the pod's container, sent with its first
    // output (or alone, when the run begins).
    const auto start = req.query.find("start");
    if (Status s = logs_.Append(ns, job, uid, pod, req.body, clock_(),
                                start == req.query.end() ? "" : start->second);
        !s.ok()) {
      return Error(s);
    }
    return Json(200, {{"kind", "Status"}, {"status", "Success"}});
  }
  // Kubernetes' PodLogOptions: tailLines, sinceSeconds or sinceTime, timestamps, limitBytes.
  LogStore::ReadOptions options;
  auto count = [&](const char* param, const char* what, int64_t* out) -> Status {
    auto it = req.query.find(param);
    if (it == req.query.end()) return Status::Ok();
    if (it->second.empty() || it->second.size() > 12 ||
        !std::all_of(it->second.begin(), it->second.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return InvalidArgument(std::string(param) + ": must be " + what);
    }
    *out = std::stoll(it->second);
    return Status::Ok();
  };
  int64_t since_seconds = -1;
  if (Status s = count("tailLines", "a number of lines", &options.tail_lines); !s.ok()) {
    return Error(s);
  }
  if (Status s = count("sinceSeconds", "a number of seconds", &since_seconds); !s.ok()) {
    return Error(s);
  }
  if (Status s = count("limitBytes", "a number of bytes", &options.limit_bytes); !s.ok()) {
    return Error(s);
  }
  if (since_seconds == 0 || options.limit_bytes == 0) {
    return Error(InvalidArgument(std::string(since_seconds == 0 ? "sinceSeconds" : "limitBytes") +
                                 ": must be greater than 0"));
  }
  if (since_seconds > 0) options.since_ms = clock_() - since_seconds * 1000;
  if (auto it = req.query.find("sinceTime"); it != req.query.end()) {
    if (since_seconds > 0) {
      return Error(InvalidArgument("sinceTime: at most one of sinceTime or sinceSeconds"));
    }
    options.since_ms = ParseTime(it->second);
    if (options.since_ms < 0) {
      return Error(InvalidArgument("sinceTime: must be an RFC 3339 time"));
    }
  }
  options.timestamps = QueryFlag(req, "timestamps");
  options.runs = QueryFlag(req, "previous") ? LogStore::Runs::kPrevious : runs;
  // A previous run is over: there is nothing to follow.
  const bool follow = options.runs != LogStore::Runs::kPrevious && req.query.contains("follow") &&
                      (req.query.at("follow") == "1" || req.query.at("follow") == "true");
  std::vector<std::string> pods = logs_.Pods(ns, job, uid);
  if (!pod.empty()) {
    if (Status s = api::ValidateName(pod, true, "pod"); !s.ok()) return Error(s);
    pods = {pod};
  }
  if (follow) {
    if (pods.size() > 1) {
      std::string names;
      for (const std::string& p : pods) names += (names.empty() ? "" : ", ") + p;
      return Error(InvalidArgument("pod: following needs one pod (this job has " + names + ")"));
    }
    if (pods.empty()) return Error(InvalidArgument("pod: no output yet; name the pod to follow"));
    LogStore::Position end;
    auto first = logs_.Read(ns, job, uid, pods[0], options, &end);
    if (!first.ok()) return Error(first.status());
    HttpResponse out;
    out.content_type = "text/plain";
    LogStream::Options follow_options;
    follow_options.timestamps = options.timestamps;
    if (options.limit_bytes > 0) {
      follow_options.limit_bytes = options.limit_bytes - static_cast<int64_t>(first->size());
    }
    out.stream = std::make_shared<LogStream>(logs_, ns, job, uid, pods[0], *first, end,
                                             follow_options, clock_);
    if (auto it = req.query.find("timeoutSeconds"); it != req.query.end()) {
      out.stream_seconds = std::max(1, std::atoi(it->second.c_str()));
    }
    return out;
  }
  std::string text;
  for (const std::string& p : pods) {
    LogStore::Position end;
    auto t = logs_.Read(ns, job, uid, p, options, &end);
    if (!t.ok() && pods.size() > 1 && t.status().code() == StatusCode::kNotFound) continue;
    if (!t.ok()) return Error(t.status());
    if (pods.size() == 1) {
      text = std::move(t).value();
      break;
    }
    std::istringstream lines(*t);
    for (std::string line; std::getline(lines, line);) text += "[" + p + "] " + line + "\n";
  }
  return Reply(200, "text/plain", std::move(text));
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
  if (Status s = KeepSystemFields(who, &*next, &w); !s.ok()) return Error(s);
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
  std::string text = RenderMetrics(objects_, leases_, metrics_, accounting_->idle(), clock_());
  if (who.role == Role::kNamespace) text = NamespaceView(text, who.ns);
  return Reply(200, "text/plain; version=0.0.4", std::move(text));
}

}  // namespace tessera::server
