#include "agent/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::agent {

Runner::~Runner() {
  for (auto& [key, p] : procs_) {
    kill(-p.pid, SIGKILL);
    waitpid(p.pid, nullptr, 0);
    std::error_code ec;
    std::filesystem::remove(PidFile(key), ec);
  }
}

namespace {

// A process's start time in clock ticks since boot (/proc/<pid>/stat, field 22); 0 if unknown.
// With the pid it names one process, whatever pids are reused later.
unsigned long long StartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t close = stat.rfind(')');  // the command may contain spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i < 22 && rest >> field; ++i) {
  }
  unsigned long long start = 0;
  rest >> start;
  return start;
}

}  // namespace

std::string Runner::PidFile(const std::string& key) const {
  std::string name = key;
  for (char& c : name) c = c == '/' ? '_' : c;
  return state_dir_ + "/" + name + ".pid";
}

std::vector<std::string> Runner::KillLeftovers() {
  std::vector<std::string> out;
  if (state_dir_.empty()) return out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(state_dir_, ec)) {
    if (e.path().extension() != ".pid") continue;
    std::ifstream in(e.path());
    pid_t pgid = 0;
    unsigned long long started = 0;
    std::string key;
    in >> pgid >> started;
    std::getline(in >> std::ws, key);
    // Only the very process that was started (same pid and start time) is ours to kill, with
    // its group: a reused pid names somebody else.
    if (pgid > 1 && started != 0 && StartTime(pgid) == started) {
      if (getpgid(pgid) == pgid) kill(-pgid, SIGKILL);
      kill(pgid, SIGKILL);
      out.push_back(key);
    }
    std::filesystem::remove(e.path(), ec);
  }
  return out;
}

Status Runner::Start(const ProcessSpec& spec) {
  if (procs_.contains(spec.key)) return AlreadyExists(spec.key + " is running");
  if (spec.argv.empty() || spec.argv[0].empty()) return InvalidArgument("no command to run");
  std::error_code ec;
  if (!spec.workdir.empty()) std::filesystem::create_directories(spec.workdir, ec);
  if (ec) return Internal("working directory " + spec.workdir + ": " + ec.message());
  std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), ec);
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Internal("log " + spec.log_path + ": " + std::strerror(errno));
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  // A clean environment: nothing of the agent's (its credentials least of all), only a PATH and
  // HOME, then what the spec gives.
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", spec.workdir.empty() ? "/" : spec.workdir}};
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const char* workdir = spec.workdir.empty() ? nullptr : spec.workdir.c_str();
  const char* cgroup = spec.cgroup_procs.empty() ? nullptr : spec.cgroup_procs.c_str();

  const pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return Internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setsid();  // its own process group: signals reach all it starts
    if (cgroup != nullptr) {
      // Join the pod's cgroup before anything runs (async-signal-safe formatting of the pid).
      char digits[24];
      int n = 0;
      for (pid_t p = getpid(); p > 0 && n < 23; p /= 10)
        digits[n++] = static_cast<char>('0' + p % 10);
      char line[24];
      for (int i = 0; i < n; ++i) line[i] = digits[n - 1 - i];
      line[n] = '\n';
      const int fd = open(cgroup, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || write(fd, line, n + 1) != n + 1) _exit(125);
      close(fd);
    }
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (workdir && chdir(workdir) != 0) _exit(126);
    execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "tessera: cannot execute the task's command\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  close(log);
  procs_[spec.key] = {pid, -1};
  if (!state_dir_.empty()) {
    std::filesystem::create_directories(state_dir_, ec);
    std::ofstream(PidFile(spec.key)) << pid << " " << StartTime(pid) << "\n" << spec.key << "\n";
  }
  return Status::Ok();
}

pid_t Runner::Pid(const std::string& key) const {
  auto it = procs_.find(key);
  return it == procs_.end() ? 0 : it->second.pid;
}

std::vector<std::string> Runner::Keys() const {
  std::vector<std::string> out;
  for (const auto& [k, p] : procs_) out.push_back(k);
  return out;
}

void Runner::Stop(const std::string& key, int64_t now_ms, int64_t grace_ms) {
  auto it = procs_.find(key);
  if (it == procs_.end() || it->second.kill_at_ms >= 0) return;
  kill(-it->second.pid, SIGTERM);
  it->second.kill_at_ms = now_ms + grace_ms;
}

std::vector<Exit> Runner::Poll(int64_t now_ms) {
  std::vector<Exit> out;
  for (auto it = procs_.begin(); it != procs_.end();) {
    Proc& p = it->second;
    int status = 0;
    const pid_t r = waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) {
      Exit e;
      e.key = it->first;
      e.stopped = p.kill_at_ms >= 0;
      if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
      // Whatever the task left behind in its group goes with it.
      kill(-p.pid, SIGKILL);
      std::error_code ec;
      if (!state_dir_.empty()) std::filesystem::remove(PidFile(it->first), ec);
      out.push_back(std::move(e));
      it = procs_.erase(it);
      continue;
    }
    if (p.kill_at_ms >= 0 && now_ms >= p.kill_at_ms) kill(-p.pid, SIGKILL);
    ++it;
  }
  return out;
}

}  // namespace tessera::agent
