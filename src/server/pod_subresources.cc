// The pods' subresources: log (GET pods/{name}/log), attach (pods/{name}/attach over a
// WebSocket) and the eviction API (policy/v1 Eviction, POST pods/{name}/eviction), as kubectl
// logs, attach and drain use them.
//
// A pod here is one of its Job's pods, so evicting it acts on the Job:
// - a running Job goes back to its queue whole (a gang is never left half-placed), keeping an
//   array's progress, and its pods get new uids, as the replacement pods of Kubernetes' Job
//   controller do (kubectl drain waits for the evicted pod's uid to change);
// - a finished Job never runs again: the pod is removed from its views (404 from then on) and
//   the Job keeps its outcome;
// - a pod not placed anywhere has nothing to give back.
// Disruption budgets do not exist here: an eviction is never refused with 429.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api/job_array.h"
#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kube_kinds.h"
#include "api/queue_views.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"
#include "server/log_stream.h"

namespace tessera::server {

namespace {

// 201 Created with a Success Status, as kube-apiserver answers an eviction.
HttpResponse Evicted(const std::string& pod, const std::string& message) {
  return Json(201, {{"kind", "Status"},
                    {"apiVersion", "v1"},
                    {"metadata", json::object()},
                    {"status", "Success"},
                    {"code", 201},
                    {"message", message},
                    {"details", {{"name", pod}, {"kind", "pods"}}}});
}

// A pod and the stored Job whose view it is. The pod is "<job>-<task>-<i>" (or the Job itself,
// or "<pod>.pod", for one made from a Pod), so its Job's name is a prefix of its name ending
// before a dash: a few reads, not a walk over every Job of the namespace.
struct FoundPod {
  store::StoredObject job;
  json obj;  // the Job, parsed (served: with its resourceVersion)
  json view;
};
Result<std::optional<FoundPod>> FindPod(store::Store& store, const std::string& ns,
                                        const std::string& pod) {
  // A Pod whose name a Job held when it was made lives as "<pod>.pod" (kube_api.cc).
  std::vector<std::string> candidates = {pod, pod + ".pod"};
  for (size_t dash = pod.rfind('-'); dash != std::string::npos && dash > 0;
       dash = pod.rfind('-', dash - 1)) {
    candidates.push_back(pod.substr(0, dash));
  }
  for (const std::string& name : candidates) {
    auto got = store.Get({"Job", ns, name});
    if (!got.ok()) return got.status();
    if (!got->has_value()) continue;
    json obj = Served(**got);
    for (json& v : api::JobPods(obj)) {
      if (Str(v["metadata"], "name") == pod) {
        return std::optional<FoundPod>(FoundPod{std::move(**got), std::move(obj), std::move(v)});
      }
    }
  }
  return std::optional<FoundPod>();
}

// A pod's output as kubectl attach reads it: each piece on the stream protocol's stdout
// channel (1), then, once the pod has ended, success on the error channel (3), which ends
// kubectl attach.
class AttachStream : public ResponseStream, public std::enable_shared_from_this<AttachStream> {
 public:
  explicit AttachStream(std::shared_ptr<LogStream> log) : log_(std::move(log)) {}

  void Next(std::function<void(std::optional<std::string>)> emit) override {
    if (ended_) return emit(std::nullopt);
    std::weak_ptr<AttachStream> weak = shared_from_this();
    log_->Next([weak, emit](std::optional<std::string> chunk) {
      auto self = weak.lock();
      if (!self) return;
      if (chunk) return emit(chunk->empty() ? std::string() : "\x01" + *chunk);
      self->ended_ = true;
      emit("\x03" + json{{"metadata", json::object()}, {"status", "Success"}}.dump());
    });
  }
  void Cancel() override { log_->Cancel(); }

 private:
  std::shared_ptr<LogStream> log_;
  std::atomic<bool> ended_ = false;
};

}  // namespace

HttpResponse ApiServer::PodAttach(const HttpRequest& req, const Principal& who,
                                  const std::string& ns, const std::string& pod) {
  if (req.method != "GET" && req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "pods/attach is opened with GET or POST"));
  }
  // Attaching is a write, as Kubernetes' create on pods/attach.
  if (Status s = Authorize(who, *api::FindKind("Job"), ns, std::nullopt, Verb::kWrite); !s.ok()) {
    return Error(s);
  }
  auto found = FindPod(*store_, ns, pod);
  if (!found.ok()) return Error(found.status());
  if (!found->has_value()) return Error(NotFound("pods \"" + pod + "\" not found"));
  const json& view = (*found)->view;
  if (Status s = CheckContainerParam(req, view, pod); !s.ok()) return Error(s);
  if (QueryFlag(req, "stdin")) {
    return Error(InvalidArgument(
        "stdin: a pod's task reads no input (containers' stdin is not acted on); attach without "
        "-i shows its output, and kubectl exec -i runs a command that reads input"));
  }
  const std::string phase = Str(Member(view, "status"), "phase");
  if (phase == "Succeeded" || phase == "Failed") {
    return Error(
        InvalidArgument("cannot attach a container in a completed pod; current phase is " + phase));
  }
  if (phase != "Running") return Error(FailedPrecondition("pod " + pod + " is not running"));
  auto protocol = StreamProtocol(req, "pods/attach", "kubectl logs -f follows the output too");
  if (!protocol.ok()) return Error(protocol.status());
  const std::string job = (*found)->job.key.name;
  const std::string uid = Str(Member((*found)->obj, "metadata"), "uid");
  const std::string task_pod = api::TesseraPodName(view);
  // From now on, in the container's current run: the output already written is the log's.
  LogStore::Position end;
  LogStore::ReadOptions from_now;
  from_now.tail_lines = 0;
  from_now.runs = LogStore::Runs::kCurrent;
  auto tail = logs_.Read(ns, job, uid, task_pod, from_now, &end);
  if (!tail.ok()) return Error(tail.status());
  HttpResponse out;
  out.stream = std::make_shared<AttachStream>(
      std::make_shared<LogStream>(logs_, ns, job, uid, task_pod, "", end));
  out.stream_seconds = 7 * 24 * 3600;
  out.websocket_protocol = *protocol;
  return out;
}

Result<std::optional<std::pair<std::string, json>>> ApiServer::FindPodOf(const std::string& ns,
                                                                         const std::string& pod) {
  auto found = FindPod(*store_, ns, pod);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<std::pair<std::string, json>>();
  return std::optional<std::pair<std::string, json>>(
      std::make_pair((*found)->job.key.name, std::move((*found)->view)));
}

HttpResponse ApiServer::PodLog(const HttpRequest& req, const Principal& who, const std::string& ns,
                               const std::string& pod) {
  if (req.method != "GET") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "a pod's log is read with GET"));
  }
  auto found = FindPod(*store_, ns, pod);
  if (!found.ok()) return Error(found.status());
  if (!found->has_value()) return Error(NotFound("pods \"" + pod + "\" not found"));
  const json& view = (*found)->view;
  const json& container = Member(Member(view, "spec"), "containers")[0];
  if (Status s = CheckContainerParam(req, view, pod); !s.ok()) return Error(s);
  const std::string job = (*found)->job.key.name;
  HttpRequest inner = req;
  inner.query["pod"] = api::TesseraPodName(view);
  if (Status s = AuthorizeLogs(inner, who, ns, job); !s.ok()) return Error(s);
  // As kube-apiserver and the kubelet answer: a pod with no node, or whose container has not
  // started, has no log to read or follow yet (unless it wrote some before: a Job placed
  // again keeps the output of its earlier run).
  const json& status = Member(view, "status");
  const std::string phase = Str(status, "phase");
  const std::string uid = Str(Member((*found)->obj, "metadata"), "uid");
  const std::vector<std::string> written = logs_.Pods(ns, job, uid);
  if (std::find(written.begin(), written.end(), inner.query["pod"]) == written.end()) {
    if (Str(Member(view, "spec"), "nodeName").empty()) {
      return Error(InvalidArgument("pod " + pod + " does not have a host assigned"));
    }
    if (phase == "Pending") {
      const json& statuses = ListOf(Member(status, "containerStatuses"));
      const json waiting = statuses.empty()
                               ? json()
                               : Member(Member(Member(statuses[0], "state"), "waiting"), "reason");
      return Error(InvalidArgument(
          "container \"" + Str(container, "name") + "\" in pod \"" + pod +
          "\" is waiting to start: " +
          (waiting.is_string() ? waiting.get<std::string>() : std::string("ContainerCreating"))));
    }
  }
  // A pod that has ended has all its output: following it returns at once, as kubectl logs -f
  // does for a completed pod (Logs follows no previous run either).
  const bool previous = QueryFlag(req, "previous");
  if (phase == "Succeeded" || phase == "Failed") inner.query.erase("follow");
  // As the kubelet: the container's current run, or the one before it, which a container that
  // has not restarted does not have.
  auto explain = [&](const Status& s) {
    if (!previous || s.code() != StatusCode::kNotFound) return s;
    return InvalidArgument("previous terminated container \"" + Str(container, "name") +
                           "\" in pod \"" + pod + "\" not found (" + s.message() + ")");
  };
  return Logs(inner, ns, job, previous ? LogStore::Runs::kPrevious : LogStore::Runs::kCurrent,
              explain);
}

HttpResponse ApiServer::Evict(const HttpRequest& req, const std::string& ns,
                              const std::string& pod) {
  if (req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "an eviction is created with POST"));
  }
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  if (!body->is_object()) return Error(InvalidArgument("body: must be a policy/v1 Eviction"));
  const std::string kind = Str(*body, "kind"), version = Str(*body, "apiVersion");
  if ((!kind.empty() && kind != "Eviction") ||
      (!version.empty() && version != "policy/v1" && version != "policy/v1beta1")) {
    return Error(
        InvalidArgument("body: must be a policy/v1 Eviction, not " + version + " " + kind));
  }
  const std::string named = Str(Member(*body, "metadata"), "name");
  if (!named.empty() && named != pod) {
    return Error(InvalidArgument("name in URL does not match name in Eviction object"));
  }
  bool dry_run = DryRun(req);
  for (const json& d : ListOf(Member(Member(*body, "deleteOptions"), "dryRun"))) {
    dry_run = dry_run || d == "All";
  }

  auto found = FindPod(*store_, ns, pod);
  if (!found.ok()) return Error(found.status());
  if (!found->has_value()) return Error(NotFound("pods \"" + pod + "\" not found"));
  auto& [job, obj, pod_view] = **found;
  json& status = obj["status"];
  const std::string phase = Str(status, "phase");
  const std::string task_pod = api::TesseraPodName(pod_view);
  const std::string job_name = Str(obj["metadata"], "name");
  const int64_t now = clock_();
  std::string message;
  if (phase == "Succeeded" || phase == "Failed") {
    // Finished work never runs again: the pod goes, the Job keeps its outcome.
    bool found = false;
    for (json& p : status["pods"]) {
      if (p.is_object() && Str(p, "name") == task_pod) {
        p["removed"] = true;
        found = true;
      }
    }
    message = "pod " + pod + " removed; job " + job_name + " had " +
              (phase == "Succeeded" ? "succeeded" : "failed") + " and does not run again";
    if (!found) return Evicted(pod, message);
  } else if (phase == "Admitted" && !Str(Member(pod_view, "spec"), "nodeName").empty()) {
    message = "evicted: pod " + pod + " was evicted (policy/v1 Eviction); job " + job_name +
              " goes back to its queue whole";
    json next = {{"phase", "Pending"},
                 {"message", message},
                 {"conditions",
                  {api::WorkloadCondition("Evicted", true, "Evicted", message, now),
                   api::WorkloadCondition("QuotaReserved", false, "Pending", message, now),
                   api::WorkloadCondition("Admitted", false, "NoReservation", message, now)}}};
    api::KeepProgress(status, &next);
    status = std::move(next);
  } else {
    return Evicted(pod, "pod " + pod + " is not placed: nothing to evict");
  }
  if (!dry_run) {
    const store::Write w{
        store::Write::Op::kPut, {"Job", ns, job_name}, StoredBody(obj), job.version};
    auto r = Commit(std::span<const store::Write>(&w, 1));
    if (!r.ok()) return Error(r.status());
  }
  return Evicted(pod, message);
}

}  // namespace tessera::server
