// /apis/tessera.io/v1/namespaces/{ns}/jobs/{name}/logs: node agents ship each pod's output (for
// the pods bound to their node only), and the admin or the namespace's token reads it, a run or
// all of them, or follows it while the pod runs.
#include <algorithm>

#include "api/json_read.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"
#include "server/log_stream.h"

namespace tessera::server {

void ApiServer::EndFinishedLogs(const json& job, const std::string& node) {
  const json& meta = Member(job, "metadata");
  for (const json& p : ListOf(Member(Member(job, "status"), "pods"))) {
    const std::string phase = Str(Member(p, "state"), "phase");
    if (Str(p, "node") != node || (phase != "Succeeded" && phase != "Failed")) continue;
    logs_.End(Str(meta, "namespace"), Str(meta, "name"), Str(meta, "uid"), Str(p, "name"));
  }
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

HttpResponse ApiServer::Logs(const HttpRequest& req, const std::string& ns, const std::string& job,
                             LogStore::Runs runs, const LogReadError& explain) {
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
  int64_t since_seconds = -1;
  if (Status s = QueryCount(req, "tailLines", "a number of lines", &options.tail_lines); !s.ok()) {
    return Error(s);
  }
  if (Status s = QueryCount(req, "sinceSeconds", "a number of seconds", &since_seconds); !s.ok()) {
    return Error(s);
  }
  if (Status s = QueryCount(req, "limitBytes", "a number of bytes", &options.limit_bytes);
      !s.ok()) {
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
  options.runs = runs;
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
    auto seconds = TimeoutSeconds(req, HttpResponse().stream_seconds, 999999);
    if (!seconds.ok()) return Error(seconds.status());
    LogStore::Position end;
    auto first = logs_.Read(ns, job, uid, pods[0], options, &end);
    if (!first.ok()) return Error(explain ? explain(first.status()) : first.status());
    HttpResponse out;
    out.content_type = "text/plain";
    LogStream::Options follow_options;
    follow_options.timestamps = options.timestamps;
    if (options.limit_bytes > 0) {
      follow_options.limit_bytes = options.limit_bytes - static_cast<int64_t>(first->size());
    }
    out.stream = std::make_shared<LogStream>(logs_, ns, job, uid, pods[0], *first, end,
                                             follow_options, clock_);
    out.stream_seconds = *seconds;
    return out;
  }
  std::string text;
  for (const std::string& p : pods) {
    LogStore::Position end;
    auto t = logs_.Read(ns, job, uid, p, options, &end);
    if (!t.ok() && pods.size() > 1 && t.status().code() == StatusCode::kNotFound) continue;
    if (!t.ok()) return Error(explain ? explain(t.status()) : t.status());
    if (pods.size() == 1) {
      text = std::move(t).value();
      break;
    }
    std::istringstream lines(*t);
    for (std::string line; std::getline(lines, line);) text += "[" + p + "] " + line + "\n";
  }
  return Reply(200, "text/plain", std::move(text));
}

}  // namespace tessera::server
