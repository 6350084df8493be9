#include "agent/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace tessera::agent {

using nlohmann::json;

ProcessSpec ExecSpec(const ProcessSpec& pod, const std::vector<std::string>& command) {
  ProcessSpec spec;
  spec.key = pod.key;
  spec.env = pod.env;
  spec.workdir = pod.workdir;
  if (!pod.container.empty()) {
    // The runtime runs as the agent; the container keeps its own user, directory and limits.
    spec.argv = {pod.argv.empty() ? std::string() : pod.argv[0], "exec", pod.container};
    spec.argv.insert(spec.argv.end(), command.begin(), command.end());
    spec.container = pod.container;
    return spec;
  }
  spec.argv = command;
  spec.cwd = pod.cwd;
  spec.uid = pod.uid;
  spec.gid = pod.gid;
  spec.cgroup_procs = pod.cgroup_procs;
  return spec;
}

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A started command: its pid (the leader of its own process group), the read ends of its
// stdout and stderr, and the write end of its stdin (-1: it reads /dev/null).
struct Child {
  pid_t pid = -1;
  int out = -1, err = -1, in = -1;
};

Result<Child> Spawn(const ProcessSpec& spec, bool with_stdin) {
  if (spec.argv.empty() || spec.argv[0].empty()) return InvalidArgument("no command to run");
  const PreparedTask task = PrepareTask(spec);
  const char* cgroup = spec.cgroup_procs.empty() ? nullptr : spec.cgroup_procs.c_str();
  int out[2], err[2], in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0 || (with_stdin && pipe2(in, O_CLOEXEC) != 0)) {
    for (int fd : {out[0], out[1], err[0], err[1], in[0], in[1]}) {
      if (fd >= 0) close(fd);
    }
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1], in[0], in[1]}) {
      if (fd >= 0) close(fd);
    }
    return Internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setsid();  // its own process group: a stop reaches what it starts
    // Gone with the agent, as a command of a session nobody can read any more.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    if (cgroup != nullptr && !JoinCgroup(cgroup)) _exit(125);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    const int input = with_stdin ? in[0] : open("/dev/null", O_RDONLY);
    if (input >= 0) dup2(input, STDIN_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    task.Become();
  }
  close(out[1]);
  close(err[1]);
  if (in[0] >= 0) close(in[0]);
  return Child{pid, out[0], err[0], in[1]};
}

// Feeds session `id`'s input to `fd`, the command's stdin, until the client says there is no
// more, the command stops reading (its end of the pipe closed), or the session ends; then
// closes `fd`. Runs on a thread of its own: a write waits for the command to read.
void PumpInput(std::shared_ptr<ApiClient> api, std::string id, int fd, int wait_seconds) {
  // A write to a command that stopped reading fails (EPIPE) instead of signalling the agent.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  const std::string path =
      "/apis/tessera.io/v1/execs/" + id + "/input?timeoutSeconds=" + std::to_string(wait_seconds);
  bool open = true;
  for (int failures = 0; open && failures < 30;) {
    auto r = api->Call("GET", path, "", "");
    if (!r.ok()) {
      ++failures;  // the server is away: the session may still be there
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    failures = 0;
    if (r->status != 200) break;
    const std::string& body = r->body;
    if (body.empty()) continue;  // nothing came in time
    if (body[0] != 'D') break;   // no more (E), or the session ended (X)
    for (size_t at = 1; at < body.size();) {
      const ssize_t n = write(fd, body.data() + at, body.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open = false;
        break;
      }
      at += static_cast<size_t>(n);
    }
  }
  close(fd);
  // A SIGPIPE left pending for this thread goes with it.
}

// Tells the server how session `id` ended.
void PostEnd(ApiClient& api, const std::string& id, const json& end) {
  (void)api.Call("POST", "/apis/tessera.io/v1/execs/" + id + "/end", end.dump(),
                 "application/json");
}

// How a reaped command ended, as the session's end frame.
json EndOf(int status) {
  if (WIFSIGNALED(status)) return {{"signal", WTERMSIG(status)}};
  return {{"exitCode", WEXITSTATUS(status)}};
}

}  // namespace

// The claiming thread's state, shared with it: it may outlive the ExecAgent by one poll.
struct ExecAgent::Claimer {
  std::shared_ptr<ApiClient> api;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  std::function<void(json)> serve;  // null once stopped
};

ExecAgent::ExecAgent(std::shared_ptr<ApiClient> api, const ExecTargets& targets,
                     ExecOptions options)
    : api_(std::move(api)), targets_(targets), options_(std::move(options)) {}

ExecAgent::~ExecAgent() { Stop(); }

void ExecAgent::Start() {
  if (claimer_) return;
  stopping_ = false;
  claimer_ = std::make_shared<Claimer>();
  claimer_->api = api_;
  claimer_->serve = [this](json session) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++running_;
    }
    std::thread([this, session = std::move(session)] {
      Serve(session);
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
      changed_.notify_all();
    }).detach();
  };
  std::thread(ClaimLoop, claimer_,
              "/apis/tessera.io/v1/nodes/" + options_.node +
                  "/execs?timeoutSeconds=" + std::to_string(options_.claim_wait_seconds))
      .detach();
}

void ExecAgent::Stop() {
  stopping_ = true;
  if (claimer_) {
    std::lock_guard<std::mutex> lock(claimer_->mu);
    claimer_->stopped = true;
    claimer_->serve = nullptr;
    claimer_->cv.notify_all();
  }
  claimer_.reset();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return running_ == 0; });
}

void ExecAgent::ClaimLoop(std::shared_ptr<Claimer> c, std::string path) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (c->stopped) return;
    }
    auto r = c->api->Call("GET", path, "", "");
    if (!r.ok() || r->status != 200) {
      // The server is away or refuses: try again a little later.
      std::unique_lock<std::mutex> lock(c->mu);
      c->cv.wait_for(lock, std::chrono::seconds(1), [&] { return c->stopped; });
      continue;
    }
    // An empty body: the poll ended with nothing to do.
    json list = json::parse(r->body, nullptr, false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) continue;
    for (json& session : list["items"]) {
      std::unique_lock<std::mutex> lock(c->mu);
      if (c->serve) {
        c->serve(std::move(session));
        continue;
      }
      lock.unlock();
      PostEnd(*c->api, session.value("id", ""), {{"error", "the agent is stopping"}});
    }
  }
}

bool ExecAgent::Send(const std::string& id, const char* stream, const std::string& data) {
  const std::string path =
      "/apis/tessera.io/v1/execs/" + id + "/output?stream=" + std::string(stream);
  // The client reads slower than the command writes: wait for it (it may also leave).
  for (;;) {
    auto r = api_->Call("POST", path, data, "application/octet-stream");
    if (!r.ok()) return !stopping_;  // the server is away; the session may still be there
    if (r->status == 429 && !stopping_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    return r->status == 200;
  }
}

void ExecAgent::End(const std::string& id, const json& end) { PostEnd(*api_, id, end); }

void ExecAgent::Serve(const json& session) {
  const std::string id = session.value("id", "");
  const std::string key = session.value("namespace", "") + "/" + session.value("job", "") + "/" +
                          session.value("pod", "");
  std::vector<std::string> command;
  for (const json& c : session.value("command", json::array())) {
    if (c.is_string()) command.push_back(c.get<std::string>());
  }
  const std::optional<ProcessSpec> pod = targets_.Get(key);
  if (!pod) {
    End(id, {{"error",
              "pod " + session.value("pod", "") + " is not running on node " + options_.node}});
    return;
  }
  auto child = Spawn(ExecSpec(*pod, command), session.value("stdin", false));
  if (!child.ok()) {
    End(id, {{"error", child.status().message()}});
    return;
  }
  if (child->in >= 0) {
    std::thread(PumpInput, api_, id, child->in, options_.claim_wait_seconds).detach();
  }
  struct pollfd fds[2] = {{child->out, POLLIN, 0}, {child->err, POLLIN, 0}};
  const char* names[2] = {"stdout", "stderr"};
  int open_fds = 2;
  int status = 0;
  bool reaped = false;
  int64_t reaped_at = 0, last_sent = SteadyMs(), kill_at = -1;
  std::string why;  // set when the command is being stopped
  char buf[65536];
  while (open_fds > 0 || !reaped) {
    const int64_t now = SteadyMs();
    // Output of a command that ended may still come from what it left running: a second more.
    if (reaped && now - reaped_at > 1000) break;
    if (poll(fds, 2, 200) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        if (why.empty() && !Send(id, names[i], std::string(buf, static_cast<size_t>(n)))) {
          why = "the client left";
        }
        last_sent = SteadyMs();
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
    if (!reaped && waitpid(child->pid, &status, WNOHANG) == child->pid) {
      reaped = true;
      reaped_at = SteadyMs();
    }
    if (why.empty() && SteadyMs() - last_sent >= options_.keepalive_ms) {
      if (!Send(id, "stdout", "")) why = "the client left";
      last_sent = SteadyMs();
    }
    if (why.empty() && stopping_) why = "the agent is stopping";
    if (why.empty() && !targets_.Get(key)) why = "its pod stopped";
    if (!why.empty() && !reaped && kill_at < 0) {
      kill(-child->pid, SIGTERM);
      kill_at = SteadyMs() + options_.stop_grace_ms;
    }
    if (kill_at >= 0 && !reaped && SteadyMs() >= kill_at) kill(-child->pid, SIGKILL);
    if (!why.empty() && reaped) break;
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  if (!reaped) {
    kill(-child->pid, SIGKILL);
    while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (why == "the client left") return;
  json end = EndOf(status);
  if (!why.empty()) end = {{"error", "stopped: " + why}};
  End(id, end);
}

}  // namespace tessera::agent
