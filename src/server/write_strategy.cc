// The write strategies of Tessera's kinds (ApiServer::WriteStrategy), after kube-apiserver's
// registry strategies: what a write of one kind checks and keeps beyond what every write does.
// AuthorizeWrite runs a kind's tenant and agent hooks, KeepSystemFields its user and keep hooks.
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "api/json_read.h"
#include "api/kinds.h"
#include "api/object.h"
#include "api/queue_views.h"
#include "api/time.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"
#include "server/watch.h"

namespace tessera::server {

namespace {

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

const ApiServer::WriteStrategy& ApiServer::StrategyOf(std::string_view kind) {
  static const std::map<std::string_view, WriteStrategy> kStrategies = {
      {"Job", {.agent = &ApiServer::AgentWritesJob, .user = &ApiServer::UserWritesJob}},
      {"PodGroup", {.user = &ApiServer::UserWritesPodGroup}},
      {"LocalQueue", {.tenant = &ApiServer::TenantWritesLocalQueue}},
      {"Queue", {.keep = &ApiServer::KeepVolcanoQueueState}},
      {"Node", {.agent = &ApiServer::AgentWritesNode}},
      {"Lease", {.agent = &ApiServer::AgentWritesLease}},
      {"Event", {.agent = &ApiServer::AgentWritesEvent}},
  };
  static const WriteStrategy kNone;
  const auto it = kStrategies.find(kind);
  return it == kStrategies.end() ? kNone : it->second;
}

// A namespace's LocalQueue may point only at a Queue the admin opened to that namespace.
Status ApiServer::TenantWritesLocalQueue(const Principal& who, const json& obj) {
  // It may point only at a Queue the admin opened to this namespace.
  auto lq = api::DecodeLocalQueue(obj);
  if (!lq.ok()) return lq.status();
  auto queue = ReadJson(*store_, {"Queue", "", lq->queue});
  if (!queue.ok()) return queue.status();
  if (!api::QueueAllowsNamespace(*queue, who.ns)) {
    return PermissionDenied("spec.clusterQueue: queue " + lq->queue + " is not open to namespace " +
                            who.ns + " (the admin lists it in the Queue's spec.allowedNamespaces)");
  }
  return Status::Ok();
}

// An agent registers and updates its own node; the heartbeat is stamped by the server.
Status ApiServer::AgentWritesNode(const Principal& who, json* obj, StoredRead&) {
  const api::ObjectId id = api::IdOf(*obj);
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

// An agent renews its own node's Lease, stamped by the server.
Status ApiServer::AgentWritesLease(const Principal& who, json* obj, StoredRead&) {
  const api::ObjectId id = api::IdOf(*obj);
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

// An agent reports events about its own node, in tessera-system.
Status ApiServer::AgentWritesEvent(const Principal& who, json* obj, StoredRead&) {
  const api::ObjectId id = api::IdOf(*obj);
  const json& about = Member(Member(*obj, "spec"), "involvedObject");
  if (id.ns != "tessera-system" || Str(about, "kind") != "Node" || Str(about, "name") != who.node) {
    return PermissionDenied("an agent reports events about node " + who.node +
                            " only, in namespace tessera-system");
  }
  return Status::Ok();
}

// An agent reports the status of a Job bound to its node: its pods there and the outcome.
Status ApiServer::AgentWritesJob(const Principal& who, json* obj, StoredRead& stored) {
  const api::ObjectId id = api::IdOf(*obj);
  auto got = stored.Object();
  if (!got.ok()) return got.status();
  auto parsed = stored.Parsed();
  static const json kNone;
  const json& old = parsed.ok() && *parsed != nullptr ? **parsed : kNone;
  if (!BoundTo(old, who.node)) {
    return PermissionDenied("Job " + id.ns + "/" + id.name + " has no pod bound to node " +
                            who.node);
  }
  // A report based on a version no longer current conflicts (409: the agent reads the Job again
  // and reports at once) before what it says is compared with the stored status, where another
  // node's newer pod state would read as a forbidden change.
  const json& sent = Member(Member(*obj, "metadata"), "resourceVersion");
  if (sent.is_string() && sent.get<std::string>() != std::to_string((**got)->version)) {
    return Conflict("Job " + id.ns + "/" + id.name + ": version " + sent.get<std::string>() +
                    " is stale, the object is at version " + std::to_string((**got)->version));
  }
  if (Status s = CheckAgentStatus(who, old, *obj); !s.ok()) return s;
  // Status only: the spec and metadata stay as stored (the version read is still checked).
  const json version = Member(Member(*obj, "metadata"), "resourceVersion");
  (*obj)["spec"] = Member(old, "spec");
  (*obj)["metadata"] = Member(old, "metadata");
  if (!version.is_null()) (*obj)["metadata"]["resourceVersion"] = version;
  return Status::Ok();
}

// A user's Job: what is immutable while it has pods placed, the Volcano queue it is sent to must
// be Open, and a task may run as root only in a privileged namespace.
Status ApiServer::UserWritesJob(const store::ObjectKey& key, const json& obj, const json* stored) {
  if (stored != nullptr) TESSERA_RETURN_IF_ERROR(CheckJobImmutable(*stored, obj));
  TESSERA_RETURN_IF_ERROR(CheckVolcanoQueueOpen(obj, stored));
  return CheckRootTasks(obj, key.ns);
}

// A user's PodGroup: the Volcano queue it is sent to must be Open.
Status ApiServer::UserWritesPodGroup(const store::ObjectKey&, const json& obj, const json* stored) {
  return CheckVolcanoQueueOpen(obj, stored);
}

// A Volcano Queue's state is its Commands' (OpenQueue, CloseQueue): a write of the queue from its
// manifest, which names no stopPolicy, keeps it as Volcano keeps a queue's status.
void ApiServer::KeepVolcanoQueueState(const json& stored, json* obj) {
  const json& annotations = Member(Member(*obj, "metadata"), "annotations");
  if (Str(annotations, "tessera.io/volcano-queue") == "true" &&
      !Member(Member(*obj, "spec"), "stopPolicy").is_string() && api::VolcanoQueueClosed(stored)) {
    (*obj)["spec"]["stopPolicy"] = stored["spec"]["stopPolicy"];
  }
}

}  // namespace tessera::server
