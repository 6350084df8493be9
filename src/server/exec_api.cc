// `tessera exec` through the API (server/exec_hub.h): the client opens a session on a running
// pod and reads its output; the agent of the pod's node claims it by long poll and sends the
// output and the end.
#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>

#include "api/json_read.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/time.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/auth.h"
#include "server/json_names.h"
#include "server/waiting_stream.h"

namespace tessera::server {

namespace {

constexpr std::string_view kExecs = "/apis/tessera.io/v1/execs/";
constexpr size_t kMaxArgs = 4096;
constexpr int kExecStreamSeconds = 7 * 24 * 3600;  // a session lasts as long as its command
constexpr int kMaxClaimWaitSeconds = 300;

// Who may read a session: the token that opened it.
std::string OwnerOf(const Principal& who) {
  return std::string(RoleName(who.role)) + "/" + who.ns + "/" + who.token_id;
}

// A session's output to its client, frame by frame, then the end.
class ExecStream : public WaitingStream {
 public:
  ExecStream(ExecHub& hub, std::string id) : hub_(hub), id_(std::move(id)) {}

  void Next(std::function<void(std::optional<std::string>)> emit) override {
    if (done_) return emit(std::nullopt);
    bool done = false;
    std::optional<std::string> frames = hub_.Read(id_, &done, Again(emit));
    if (!frames) return;  // woken when there is more
    done_ = done;
    emit(std::move(frames));
  }
  void OnCancel() override {
    if (!done_) hub_.Abandon(id_);
  }

 private:
  ExecHub& hub_;
  const std::string id_;
  std::atomic<bool> done_ = false;
};

// A session as Kubernetes' stream protocol (v4/v5.channel.k8s.io) over a WebSocket: each piece
// of output one message, its first byte the channel (1 stdout, 2 stderr) and then its bytes as
// the command wrote them; then how the command ended on channel 3 as a v1 Status, which kubectl
// turns into its exit code. The client's messages on channel 0 are the command's input; v5's
// close signal (channel 255 naming channel 0) ends it. A terminal's size (channel 4) is not
// acted on: a command runs without a terminal.
class KubeExecStream : public WaitingStream {
 public:
  KubeExecStream(ExecHub& hub, std::string id, std::vector<std::string> command)
      : hub_(hub), id_(std::move(id)), command_(std::move(command)) {}

  void Next(std::function<void(std::optional<std::string>)> emit) override {
    if (!ready_.empty()) {
      std::string m = std::move(ready_.front());
      ready_.pop_front();
      return emit(std::move(m));
    }
    if (ended_) return emit(std::nullopt);
    bool done = false;
    auto frames = hub_.ReadFrames(id_, &done, Again(emit));
    if (!frames) return;  // woken when there is more
    ended_ = done;
    for (ExecFrame& f : *frames) {
      if (f.stream.empty()) {
        ready_.push_back("\x03" + EndStatus(f.end).dump());
      } else if (!f.data.empty()) {
        ready_.push_back(std::string(1, f.stream == "stdout" ? '\x01' : '\x02') + f.data);
      }
    }
    if (ready_.empty()) return emit(ended_ ? std::nullopt : std::optional<std::string>(""));
    std::string m = std::move(ready_.front());
    ready_.pop_front();
    emit(std::move(m));
  }
  void OnCancel() override {
    if (!ended_) hub_.Abandon(id_);
  }
  bool Receive(std::string_view message, std::function<void()> resume) override {
    if (message.empty()) return true;
    const unsigned char channel = static_cast<unsigned char>(message[0]);
    if (channel == 0) return hub_.Input(id_, message.substr(1), false, std::move(resume));
    if (channel == 255 && message.size() >= 2 && message[1] == 0) {
      return hub_.Input(id_, "", true, std::move(resume));
    }
    return true;  // a terminal's size (4), or a channel that is not the client's
  }

 private:
  // How the command ended as kube-apiserver reports it on the error channel.
  json EndStatus(const json& end) const {
    int code = -1;
    if (end.contains("exitCode") && end["exitCode"].is_number_integer()) {
      code = end["exitCode"].get<int>();
    } else if (end.contains("signal") && end["signal"].is_number_integer()) {
      code = 128 + end["signal"].get<int>();
    }
    if (code == 0) return {{"metadata", json::object()}, {"status", "Success"}};
    if (code < 0) {
      return {{"metadata", json::object()},
              {"status", "Failure"},
              {"message", end.contains("error") && end["error"].is_string()
                              ? end["error"].get<std::string>()
                              : std::string("the command ended without an exit code")}};
    }
    std::string argv;
    for (const std::string& a : command_) argv += (argv.empty() ? "" : " ") + a;
    return {
        {"metadata", json::object()},
        {"status", "Failure"},
        {"message", "command terminated with non-zero exit code: error executing command [" + argv +
                        "], exit code " + std::to_string(code)},
        {"reason", "NonZeroExitCode"},
        {"details",
         {{"causes", json::array({{{"reason", "ExitCode"}, {"message", std::to_string(code)}}})}}}};
  }

  ExecHub& hub_;
  const std::string id_;
  const std::vector<std::string> command_;
  std::deque<std::string> ready_;
  std::atomic<bool> ended_ = false;
};

// The agent's long poll for a session's input: "D" and the bytes, "E" once the client said
// there is no more, "X" when the session ended meanwhile; an empty body when nothing came in
// time.
class InputStream : public WaitingStream {
 public:
  InputStream(ExecHub& hub, std::string id, std::string node)
      : hub_(hub), id_(std::move(id)), node_(std::move(node)) {}

  void Next(std::function<void(std::optional<std::string>)> emit) override {
    if (done_) return emit(std::nullopt);
    bool eof = false;
    auto got = hub_.TakeInput(id_, node_, &eof, Again(emit));
    if (got.ok() && !got->has_value()) return;  // woken when there is some
    done_ = true;
    if (!got.ok()) return emit(std::string("X"));
    emit(eof ? std::string("E") : "D" + **got);
  }

 private:
  ExecHub& hub_;
  const std::string id_, node_;
  std::atomic<bool> done_ = false;
};

// The agent's long poll: the sessions opened for its node, as soon as there are any.
class ClaimStream : public WaitingStream {
 public:
  ClaimStream(ExecHub& hub, std::string node, std::function<int64_t()> clock)
      : hub_(hub), node_(std::move(node)), clock_(std::move(clock)) {}

  void Next(std::function<void(std::optional<std::string>)> emit) override {
    if (done_) return emit(std::nullopt);
    for (;;) {
      // A poll that has ended claims nothing (its agent would never see the sessions).
      if (Cancelled()) return;
      json items = hub_.Claim(node_, clock_());
      if (!items.empty()) {
        done_ = true;
        return emit(json{{"kind", "ExecSessionList"}, {"items", std::move(items)}}.dump());
      }
      const bool waiting = WaitOn(
          emit,
          [&](std::function<void()> wake) { return hub_.WaitForWork(node_, std::move(wake)); },
          [&hub = hub_](uint64_t id) { hub.StopWaiting(id); });
      if (waiting) return;
    }
  }
  // The poll ended (timed out, the agent left) as its sessions were claimed: the agent never
  // saw them, so its next poll gets them.
  void Undelivered(std::string chunk) override {
    const json list = json::parse(chunk, nullptr, false);
    std::vector<std::string> ids;
    for (const json& item : list.value("items", json::array())) {
      if (item.contains("id") && item["id"].is_string()) ids.push_back(item["id"]);
    }
    hub_.Unclaim(ids, node_);
  }

 private:
  ExecHub& hub_;
  const std::string node_;
  const std::function<int64_t()> clock_;
  std::atomic<bool> done_ = false;
  uint64_t waiter_ = 0;
};

// The hub's "the session has ended" is Kubernetes' 410 Gone for the agent.
HttpResponse HubError(const Status& s) {
  if (s.code() == StatusCode::kFailedPrecondition) {
    return Reply(410, "application/json", StatusJson(410, "Gone", s.message()));
  }
  return Error(s);
}

// How a command ended, as the agent reports it: exactly one of these.
Status CheckEnd(const json& end) {
  if (!end.is_object() || end.size() != 1) {
    return InvalidArgument("body: must be one of {\"exitCode\"}, {\"signal\"}, {\"error\"}");
  }
  if (end.contains("exitCode")) {
    const json& c = end["exitCode"];
    if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > 255) {
      return InvalidArgument("exitCode: must be an integer from 0 to 255");
    }
  } else if (end.contains("signal")) {
    const json& c = end["signal"];
    if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > 64) {
      return InvalidArgument("signal: must be a signal number from 1 to 64");
    }
  } else if (!end.contains("error") || !end["error"].is_string() ||
             end["error"].get<std::string>().size() > 4096) {
    return InvalidArgument("body: must be one of {\"exitCode\"}, {\"signal\"}, {\"error\"}");
  }
  return Status::Ok();
}

}  // namespace

HttpResponse ApiServer::PodExec(const HttpRequest& req, const Principal& who, const std::string& ns,
                                const std::string& pod) {
  if (req.method != "GET" && req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "pods/exec is opened with GET or POST"));
  }
  // Running a command is a write (Kubernetes' create on pods/exec).
  if (Status s = Authorize(who, *api::FindKind("Job"), ns, std::nullopt, Verb::kWrite); !s.ok()) {
    return Error(s);
  }
  if (req.commands.empty() || req.commands.size() > kMaxArgs || req.commands[0].empty()) {
    return Error(InvalidArgument("command: must name a program and its arguments"));
  }
  auto found = FindPodOf(ns, pod);
  if (!found.ok()) return Error(found.status());
  if (!found->has_value()) return Error(NotFound("pods \"" + pod + "\" not found"));
  const json& view = (**found).second;
  if (Status s = CheckContainerParam(req, view, pod); !s.ok()) return Error(s);
  if (Str(Member(view, "status"), "phase") != "Running") {
    return Error(FailedPrecondition("pod " + pod + " is not running"));
  }
  auto protocol = StreamProtocol(req, "pods/exec", "or run `tessera exec`");
  if (!protocol.ok()) return Error(protocol.status());
  auto id = RandomHex(16);
  if (!id.ok()) return Error(id.status());
  ExecRequest request{ns,
                      (**found).first,
                      api::TesseraPodName(view),
                      Str(Member(view, "spec"), "nodeName"),
                      req.commands,
                      OwnerOf(who),
                      QueryFlag(req, "stdin")};
  if (Status s = exec_.Open(*id, std::move(request), clock_()); !s.ok()) return Error(s);
  HttpResponse out;
  out.stream = std::make_shared<KubeExecStream>(exec_, *id, req.commands);
  out.stream_seconds = kExecStreamSeconds;
  out.websocket_protocol = *protocol;
  return out;
}

std::optional<HttpResponse> ApiServer::Exec(const HttpRequest& req, const Principal& who) {
  const std::vector<std::string_view> parts = PathSegments(req.path);
  const bool job_path = parts.size() == 8 && parts[0] == "apis" && parts[1] == api::kGroup &&
                        parts[2] == "v1" && parts[3] == "namespaces" && parts[5] == "jobs";
  if (job_path && parts[7] == "exec") {
    return ExecOpen(req, who, std::string(parts[4]), std::string(parts[6]));
  }
  if (job_path && parts[7] == "exectoken") {
    return ExecToken(req, who, std::string(parts[4]), std::string(parts[6]));
  }
  // GET /apis/tessera.io/v1/nodes/{node}/execs: the agent's long poll.
  if (parts.size() == 6 && parts[0] == "apis" && parts[1] == api::kGroup && parts[2] == "v1" &&
      parts[3] == "nodes" && parts[5] == "execs") {
    const std::string node(parts[4]);
    if (req.method != "GET") {
      return Reply(405, "application/json",
                   StatusJson(405, "MethodNotAllowed", "sessions are claimed with GET"));
    }
    if (who.role != Principal::Role::kAgent || who.node != node) {
      return Error(PermissionDenied("only the agent of node " + node + " claims its sessions"));
    }
    auto seconds = TimeoutSeconds(req, 30, kMaxClaimWaitSeconds);
    if (!seconds.ok()) return Error(seconds.status());
    HttpResponse out;
    out.stream = std::make_shared<ClaimStream>(exec_, node, clock_);
    out.stream_seconds = *seconds;
    return out;
  }
  if (!req.path.starts_with(kExecs)) return std::nullopt;
  return ExecSession(req, who);
}

Result<json> ApiServer::ReadJob(const std::string& ns, const std::string& job) {
  auto obj = ReadJson(*store_, {"Job", ns, job});
  if (obj.ok() && obj->is_null()) return NotFound("Job " + ns + "/" + job + " not found");
  return obj;
}

// POST /apis/tessera.io/v1/namespaces/{ns}/jobs/{job}/exec: a session on a running pod.
HttpResponse ApiServer::ExecOpen(const HttpRequest& req, const Principal& who,
                                 const std::string& ns, const std::string& job) {
  using Role = Principal::Role;
  if (req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "a command is run with POST"));
  }
  if (who.role != Role::kAdmin && !(who.role == Role::kNamespace && who.ns == ns) &&
      !(who.role == Role::kExec && who.ns == ns && who.job.starts_with(job + "/"))) {
    return Error(PermissionDenied(
        who.role == Role::kNamespace ? "this token is limited to namespace " + who.ns
        : who.role == Role::kExec ? "this token runs commands in the pods of Job " + who.ns + "/" +
                                        who.job.substr(0, who.job.find('/')) + " only"
                                  : "commands are run with the admin, the namespace's or "
                                    "the job's exec token"));
  }
  const json body = json::parse(req.body, nullptr, false);
  if (!body.is_object()) return Error(InvalidArgument("body: must be a JSON object"));
  for (const auto& [k, v] : body.items()) {
    if (k != "pod" && k != "command") {
      return Error(InvalidArgument(k + ": unknown field (an exec takes pod and command)"));
    }
  }
  const json& command = Member(body, "command");
  if (!command.is_array() || command.empty() || command.size() > kMaxArgs) {
    return Error(InvalidArgument("command: must list the program and its arguments (1 to " +
                                 std::to_string(kMaxArgs) + ")"));
  }
  std::vector<std::string> argv;
  for (const json& a : command) {
    if (!a.is_string()) return Error(InvalidArgument("command: must be strings"));
    argv.push_back(a.get<std::string>());
  }
  if (argv[0].empty()) return Error(InvalidArgument("command[0]: must name a program"));
  const json& pod_field = Member(body, "pod");
  if (!pod_field.is_null() && !pod_field.is_string()) {
    return Error(InvalidArgument("pod: must be a pod name"));
  }
  const std::string want = pod_field.is_string() ? pod_field.get<std::string>() : "";
  auto stored = ReadJob(ns, job);
  if (!stored.ok()) return Error(stored.status());
  const json& obj = *stored;
  // An exec token is for the Job it was made for, not one made again under its name.
  if (who.role == Role::kExec && who.job != job + "/" + Str(Member(obj, "metadata"), "uid")) {
    return Error(PermissionDenied("this token was made for an earlier Job " + ns + "/" + job));
  }
  std::string pod, node, names;
  for (const json& p : ListOf(Member(Member(obj, "status"), "pods"))) {
    if (!p.is_object()) continue;
    const std::string name = Str(p, "name"), phase = Str(Member(p, "state"), "phase");
    names += (names.empty() ? "" : ", ") + name;
    if (!want.empty() && name != want) continue;
    if (phase != "Running") {
      if (want.empty()) continue;
      return Error(FailedPrecondition("pod " + name + " is not running" +
                                      (phase.empty() ? " yet" : " (" + phase + ")")));
    }
    pod = name;
    node = Str(p, "node");
    break;
  }
  if (pod.empty()) {
    return Error(want.empty() ? FailedPrecondition("Job " + ns + "/" + job + " has no running pod")
                              : NotFound("pod " + want + " is not a pod of Job " + ns + "/" + job +
                                         (names.empty() ? "" : " (its pods: " + names + ")")));
  }
  auto id = RandomHex(16);
  if (!id.ok()) return Error(id.status());
  ExecRequest request{ns, job, pod, node, argv, OwnerOf(who)};
  if (Status s = exec_.Open(*id, std::move(request), clock_()); !s.ok()) return Error(s);
  return Json(201, {{"apiVersion", api::kApiVersion},
                    {"kind", "ExecSession"},
                    {"id", *id},
                    {"namespace", ns},
                    {"job", job},
                    {"pod", pod},
                    {"node", node}});
}

// POST /apis/tessera.io/v1/namespaces/{ns}/jobs/{job}/exectoken?pod=P: the agent of an MPI
// launcher's node gets a token that runs commands in that Job's pods only (its rsh agent's).
HttpResponse ApiServer::ExecToken(const HttpRequest& req, const Principal& who,
                                  const std::string& ns, const std::string& job) {
  using Role = Principal::Role;
  if (req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "an exec token is made with POST"));
  }
  if (who.role != Role::kAgent) {
    return Error(PermissionDenied("exec tokens are made for the node agents of MPI launchers"));
  }
  auto it = req.query.find("pod");
  const std::string pod = it == req.query.end() ? "" : it->second;
  const auto writing = plane_.HoldCommits();
  auto stored = ReadJob(ns, job);
  if (!stored.ok()) return Error(stored.status());
  const json& obj = *stored;
  const std::string launcher = Str(Member(Member(obj, "spec"), "mpi"), "launcher");
  bool bound = false;
  for (const json& p : ListOf(Member(Member(obj, "status"), "pods"))) {
    bound = bound || (Str(p, "name") == pod && Str(p, "node") == who.node);
  }
  if (launcher.empty() || !pod.starts_with(launcher + "-") || !bound) {
    return Error(PermissionDenied("pod " + pod + " is not the MPI launcher of Job " + ns + "/" +
                                  job + " on node " + who.node));
  }
  auto token = tokens_.Create(Role::kExec, ns, "", api::FormatTime(clock_()),
                              job + "/" + Str(Member(obj, "metadata"), "uid"));
  if (!token.ok()) return Error(token.status());
  feed_.CatchUp();
  return Json(201, {{"role", "exec"}, {"namespace", ns}, {"job", job}, {"token", *token}});
}

// /apis/tessera.io/v1/execs/{id}[/input|/output|/end]: the opener reads a session's output, the
// agent of its node reads its input and sends its output and end.
HttpResponse ApiServer::ExecSession(const HttpRequest& req, const Principal& who) {
  using Role = Principal::Role;
  const std::string_view rest = std::string_view(req.path).substr(kExecs.size());
  const size_t slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  const std::string_view what = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (id.empty()) return Error(NotFound("name the exec session"));
  // GET /apis/tessera.io/v1/execs/{id}: its opener reads it.
  if (what.empty()) {
    if (req.method != "GET") {
      return Reply(405, "application/json",
                   StatusJson(405, "MethodNotAllowed", "a session's output is read with GET"));
    }
    if (Status s = exec_.CheckOwner(id, OwnerOf(who)); !s.ok()) return Error(s);
    HttpResponse out;
    out.content_type = "application/x-ndjson";
    out.stream = std::make_shared<ExecStream>(exec_, id);
    out.stream_seconds = kExecStreamSeconds;
    return out;
  }
  // GET .../execs/{id}/input?timeoutSeconds=N: the agent's long poll for the command's input.
  if (what == "input") {
    if (req.method != "GET") {
      return Reply(405, "application/json",
                   StatusJson(405, "MethodNotAllowed", "a session's input is read with GET"));
    }
    if (who.role != Role::kAgent) return Error(PermissionDenied("only node agents read input"));
    bool eof = false;
    // Checked now, so that a session that is not the node's is a 404 and an ended one a 410.
    auto first = exec_.TakeInput(id, who.node, &eof, nullptr);
    if (!first.ok()) return HubError(first.status());
    if (first->has_value()) {
      return Reply(200, "application/octet-stream", eof ? std::string("E") : "D" + **first);
    }
    auto seconds = TimeoutSeconds(req, 30, kMaxClaimWaitSeconds);
    if (!seconds.ok()) return Error(seconds.status());
    HttpResponse out;
    out.content_type = "application/octet-stream";
    out.stream = std::make_shared<InputStream>(exec_, id, who.node);
    out.stream_seconds = *seconds;
    return out;
  }
  // POST .../execs/{id}/output?stream=stdout|stderr and .../execs/{id}/end: the agent's.
  if (what != "output" && what != "end") return Error(NotFound("no such exec resource"));
  if (req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "the agent sends with POST"));
  }
  if (who.role != Role::kAgent) return Error(PermissionDenied("only node agents send output"));
  if (what == "output") {
    auto it = req.query.find("stream");
    const std::string stream = it == req.query.end() ? "stdout" : it->second;
    if (Status s = exec_.Append(id, who.node, stream, req.body, clock_()); !s.ok()) {
      return HubError(s);
    }
    return Json(200, {{"kind", "Status"}, {"status", "Success"}});
  }
  const json end = json::parse(req.body, nullptr, false);
  if (Status s = CheckEnd(end); !s.ok()) return Error(s);
  if (Status s = exec_.Finish(id, who.node, end, clock_()); !s.ok()) return HubError(s);
  return Json(200, {{"kind", "Status"}, {"status", "Success"}});
}

}  // namespace tessera::server
