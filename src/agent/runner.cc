#include "agent/runner.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/process_tree.h"

namespace tessera::agent {

Runner::~Runner() {
  for (auto& [key, p] : procs_) {
    SignalPod(LiveLeader(p), p.cgroup, SIGKILL);
    kill(-p.pid, SIGKILL);
    if (!p.adopted) waitpid(p.pid, nullptr, 0);
    if (p.exit_fd >= 0) close(p.exit_fd);
    RemoveRecords(key);
  }
}

namespace {

// A pidfd for `pid` (readable once the process ends, whether or not it is our child); -1 when
// the kernel has none.
int OpenExitFd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;
}

// Fields 3 (state) and 22 (start time) of /proc/<pid>/stat; start 0 if unknown.
void ReadStat(pid_t pid, char* state, unsigned long long* start) {
  *state = 0;
  *start = 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t close = stat.rfind(')');  // the command may contain spaces and parentheses
  if (close == std::string::npos || close + 2 > stat.size()) return;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  rest >> *state;
  for (int i = 4; i < 22 && rest >> field; ++i) {
  }
  rest >> *start;
}

}  // namespace

std::vector<std::string> TaskEnvironment(const ProcessSpec& spec) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", spec.workdir.empty() ? "/" : spec.workdir}};
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string TaskDirectory(const ProcessSpec& spec) {
  return spec.cwd.empty() ? spec.workdir : spec.cwd;
}

PreparedTask PrepareTask(const ProcessSpec& spec) {
  return PreparedTask(spec.argv, TaskEnvironment(spec), TaskDirectory(spec), spec.uid, spec.gid);
}

namespace {

// `name` beside the running executable, when it is there with `mode` (access(2)); else "".
std::string BesideExecutable(const char* name, int mode) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path path = self.parent_path() / name;
  return access(path.c_str(), mode) == 0 ? path.string() : "";
}

}  // namespace

std::string MonitorExecutable() { return BesideExecutable("tessera-monitor", X_OK); }

std::string ShareInterposerLibrary() { return BesideExecutable("libtessera-share.so", R_OK); }

namespace {

// How a task ended, from its exit record ("exit N" or "signal N"); false when there is none.
bool ReadExitRecord(const std::string& path, Exit* e) {
  std::ifstream in(path);
  std::string how;
  int value = 0;
  if (!(in >> how >> value)) return false;
  if (how == "exit") {
    e->exit_code = value;
    e->signal = 0;
  } else if (how == "signal") {
    e->signal = value;
    e->exit_code = 0;
  } else {
    return false;
  }
  return true;
}

}  // namespace

unsigned long long StartTime(pid_t pid) {
  char state = 0;
  unsigned long long start = 0;
  ReadStat(pid, &state, &start);
  return start;
}

bool Alive(pid_t pid, unsigned long long started) {
  if (pid <= 1 || started == 0) return false;
  char state = 0;
  unsigned long long start = 0;
  ReadStat(pid, &state, &start);
  return start == started && state != 'Z' && state != 'X';
}

std::vector<RecordedGroup> RecordedGroups(const std::string& state_dir) {
  std::vector<RecordedGroup> out;
  if (state_dir.empty()) return out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(state_dir, ec)) {
    if (e.path().extension() != ".pid") continue;
    std::ifstream in(e.path());
    RecordedGroup g;
    in >> g.pgid >> g.started;
    std::getline(in >> std::ws, g.key);
    std::getline(in, g.cgroup);
    g.pid_file = e.path().string();
    out.push_back(std::move(g));
  }
  std::sort(out.begin(), out.end(),
            [](const RecordedGroup& a, const RecordedGroup& b) { return a.key < b.key; });
  return out;
}

std::string Runner::StateFile(const std::string& key, const char* ext) const {
  if (state_dir_.empty()) return "";
  std::string name = key;
  for (char& c : name) c = c == '/' ? '_' : c;
  return state_dir_ + "/" + name + ext;
}

std::vector<std::string> Runner::Adopt() {
  std::vector<std::string> out;
  for (const RecordedGroup& g : RecordedGroups(state_dir_)) {
    if (g.key.empty() || procs_.contains(g.key)) continue;
    if (!Alive(g.pgid, g.started)) {
      // Gone while no agent watched: nothing to adopt, and no one left to report it to. The
      // pid file is removed by the path found, whatever key it holds.
      std::error_code ec;
      std::filesystem::remove(g.pid_file, ec);
      std::filesystem::remove(StateFile(g.key, ".exit"), ec);
      continue;
    }
    Proc& p = procs_[g.key];
    p = {g.pgid, -1, true, g.started, OpenExitFd(g.pgid)};
    p.cgroup = g.cgroup;
    out.push_back(g.key);
  }
  return out;
}

void Runner::Detach() {
  for (auto& [key, p] : procs_) {
    if (p.exit_fd >= 0) close(p.exit_fd);
  }
  procs_.clear();
}

void Runner::RemoveRecords(const std::string& key) const {
  if (state_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(StateFile(key, ".pid"), ec);
  std::filesystem::remove(StateFile(key, ".exit"), ec);
}

void Runner::Forget(const std::string& key) {
  RemoveRecords(key);
  auto it = procs_.find(key);
  if (it == procs_.end()) return;
  if (it->second.exit_fd >= 0) close(it->second.exit_fd);
  procs_.erase(it);
}

Status Runner::Start(const ProcessSpec& spec) { return StartAll({&spec})[0]; }

std::vector<Status> Runner::StartAll(const std::vector<const ProcessSpec*>& specs) {
  // Every monitor is started before any is waited for: their starts (an exec each, then the
  // task's) overlap rather than follow one another.
  std::vector<Result<Launched>> launched;
  std::set<std::string> keys;
  for (const ProcessSpec* spec : specs) {
    if (!keys.insert(spec->key).second) {
      launched.push_back(AlreadyExists(spec->key + " is running"));
    } else {
      launched.push_back(Launch(*spec));
    }
  }
  std::vector<Status> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!launched[i].ok()) {
      out.push_back(launched[i].status());
      continue;
    }
    const pid_t pid = launched[i]->pid;
    char byte;
    while (read(launched[i]->ready, &byte, 1) < 0 && errno == EINTR) {
    }
    close(launched[i]->ready);
    const unsigned long long started = StartTime(pid);
    const std::string cgroup =
        specs[i]->cgroup_procs.empty()
            ? ""
            : std::filesystem::path(specs[i]->cgroup_procs).parent_path().string();
    Proc& p = procs_[specs[i]->key];
    p = {pid, -1, false, started, OpenExitFd(pid)};
    p.cgroup = cgroup;
    if (!state_dir_.empty()) {
      std::ofstream(StateFile(specs[i]->key, ".pid")) << pid << " " << started << "\n"
                                                      << specs[i]->key << "\n"
                                                      << cgroup << "\n";
    }
    out.push_back(Status::Ok());
  }
  return out;
}

Result<Runner::Launched> Runner::Launch(const ProcessSpec& spec) {
  if (procs_.contains(spec.key)) return AlreadyExists(spec.key + " is running");
  if (spec.argv.empty() || spec.argv[0].empty()) return InvalidArgument("no command to run");
  if ((spec.uid >= 0 || spec.gid >= 0) && geteuid() != 0) {
    return FailedPrecondition(
        "securityContext.runAsUser/runAsGroup: the agent must run as root to start a task "
        "under another user");
  }
  std::error_code ec;
  std::vector<std::string> made = spec.dirs;
  if (!spec.workdir.empty()) made.insert(made.begin(), spec.workdir);
  for (const std::string& dir : made) {
    const bool fresh = std::filesystem::create_directories(dir, ec);
    if (ec) return Internal("directory " + dir + ": " + ec.message());
    if ((spec.uid >= 0 || spec.gid >= 0) &&
        chown(dir.c_str(), static_cast<uid_t>(spec.uid), static_cast<gid_t>(spec.gid)) != 0) {
      return Internal("directory " + dir + ": " + std::strerror(errno));
    }
    // Made for the task, it is the task's own: no other task's user reads it. (A directory that
    // was there, named by a spec, keeps its mode.)
    if (fresh) std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  for (const std::string& dir : spec.open_dirs) {
    std::filesystem::create_directories(dir, ec);
    if (!ec) {
      std::filesystem::permissions(
          dir, std::filesystem::perms::all | std::filesystem::perms::sticky_bit, ec);
    }
    if (ec) return Internal("directory " + dir + ": " + ec.message());
  }
  for (const auto& [path, content] : spec.files) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::ofstream out(path, std::ios::trunc);
    out << content;
    if (!out.flush()) return Internal("file " + path + ": cannot be written");
    if (spec.executables.contains(path)) {
      std::filesystem::permissions(
          path,
          std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
              std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
              std::filesystem::perms::others_exec,
          ec);
    }
  }
  if (!spec.cwd.empty() && !std::filesystem::is_directory(spec.cwd, ec)) {
    return FailedPrecondition("workingDir " + spec.cwd + " is not a directory on this node");
  }
  std::filesystem::create_directories(std::filesystem::path(spec.log_path).parent_path(), ec);
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Internal("log " + spec.log_path + ": " + std::strerror(errno));
  if (!state_dir_.empty()) std::filesystem::create_directories(state_dir_, ec);
  const std::string exit_record = StateFile(spec.key, ".exit");
  if (!exit_record.empty()) std::filesystem::remove(exit_record, ec);
  // The monitor and the task close their ends of `ready` once the monitor leads the group and
  // the task takes stop signals: StartAll returns only then, so that a Stop right after it
  // reaches the task.
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    close(log);
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  Result<pid_t> monitor = monitor_.empty() ? ForkMonitor(spec, exit_record, log, ready)
                                           : SpawnMonitor(spec, exit_record, log, ready[1]);
  if (!monitor.ok()) {
    close(log);
    close(ready[0]);
    close(ready[1]);
    return monitor.status();
  }
  close(log);
  close(ready[1]);
  return Launched{*monitor, ready[0]};
}

Result<pid_t> Runner::SpawnMonitor(const ProcessSpec& spec, const std::string& exit_record, int log,
                                   int ready) {
  constexpr int kReadyFd = 3;
  std::vector<std::string> args = {monitor_, "--ready", std::to_string(kReadyFd)};
  auto flag = [&args](const char* name, const std::string& value) {
    args.push_back(name);
    args.push_back(value);
  };
  if (!spec.cgroup_procs.empty()) flag("--cgroup", spec.cgroup_procs);
  if (!exit_record.empty()) flag("--record", exit_record);
  if (spec.uid >= 0) flag("--uid", std::to_string(spec.uid));
  if (spec.gid >= 0) flag("--gid", std::to_string(spec.gid));
  if (const std::string cwd = TaskDirectory(spec); !cwd.empty()) flag("--cwd", cwd);
  args.push_back("--");
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  std::vector<char*> argv = CStrings(args);
  // The task's environment is the monitor's: a command line is readable by every user.
  std::vector<std::string> env = TaskEnvironment(spec);
  std::vector<char*> envp = CStrings(env);

  // The monitor gets the log as stdout and stderr, /dev/null as stdin, `ready` as descriptor 3
  // and nothing else of this process; default signal handling and no blocked signals.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, ready, kReadyFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, kReadyFd + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, monitor_.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Internal("starting " + monitor_ + ": " + std::strerror(rc));
  return pid;
}

Result<pid_t> Runner::ForkMonitor(const ProcessSpec& spec, const std::string& exit_record, int log,
                                  int ready[2]) {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  const PreparedTask task = PrepareTask(spec);
  MonitorPlan plan;
  plan.cgroup_procs = spec.cgroup_procs.empty() ? nullptr : spec.cgroup_procs.c_str();
  plan.exit_record = exit_record.empty() ? nullptr : exit_record.c_str();
  plan.log_fd = log;
  plan.ready_fd = ready[1];
  plan.task = &task;
  const pid_t pid = fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(ready[0]);
    RunMonitor(plan);
  }
  return pid;
}

pid_t Runner::Pid(const std::string& key) const {
  auto it = procs_.find(key);
  return it == procs_.end() ? 0 : it->second.pid;
}

std::string Runner::Cgroup(const std::string& key) const {
  auto it = procs_.find(key);
  return it == procs_.end() ? "" : it->second.cgroup;
}

std::vector<std::string> Runner::Keys() const {
  std::vector<std::string> out;
  for (const auto& [k, p] : procs_) out.push_back(k);
  return out;
}

void Runner::Stop(const std::string& key, int64_t now_ms, int64_t grace_ms) {
  auto it = procs_.find(key);
  if (it == procs_.end() || it->second.kill_at_ms >= 0) return;
  SignalPod(LiveLeader(it->second), it->second.cgroup, SIGTERM);
  kill(-it->second.pid, SIGTERM);
  it->second.kill_at_ms = now_ms + grace_ms;
}

std::vector<int> Runner::ExitFds() const {
  std::vector<int> out;
  for (const auto& [key, p] : procs_) {
    // A leader that has ended stays readable: what is left of its pod is looked at by time.
    if (p.exit_fd >= 0 && !p.leader_gone) out.push_back(p.exit_fd);
  }
  return out;
}

int64_t Runner::NextDeadline() const {
  int64_t next = -1;
  for (const auto& [key, p] : procs_) {
    if (p.kill_at_ms >= 0 && !p.killed && (next < 0 || p.kill_at_ms < next)) next = p.kill_at_ms;
    if (p.leader_gone && (next < 0 || p.recheck_ms < next)) next = p.recheck_ms;
  }
  return next;
}

pid_t Runner::LiveLeader(const Proc& p) const {
  if (p.leader_gone) return 0;
  // A child of ours keeps its pid until it is waited for; an adopted leader is checked.
  return !p.adopted || Alive(p.pid, p.started) ? p.pid : 0;
}

std::vector<Exit> Runner::Poll(int64_t now_ms) {
  std::vector<Exit> out;
  for (auto it = procs_.begin(); it != procs_.end();) {
    Proc& p = it->second;
    if (p.leader_gone) {
      // Its exit waits for the cgroup to empty.
      if (CgroupPopulated(p.cgroup)) {
        SignalPod(0, p.cgroup, SIGKILL);
        p.recheck_ms = now_ms + 50;
        ++it;
        continue;
      }
      Exit e = std::move(p.ended);
      ++it;
      Forget(e.key);
      out.push_back(std::move(e));
      continue;
    }
    Exit e;
    e.key = it->first;
    e.stopped = p.kill_at_ms >= 0;
    bool ended = false;
    if (p.adopted) {
      // Not our child: it ended when its leader is gone; how, its monitor recorded.
      ended = !Alive(p.pid, p.started);
      if (ended) e.signal = SIGKILL;  // no record: killed with its monitor
    } else {
      int status = 0;
      ended = waitpid(p.pid, &status, WNOHANG) == p.pid;
      if (ended && WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
      if (ended && WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    }
    if (ended) {
      if (!state_dir_.empty()) ReadExitRecord(StateFile(e.key, ".exit"), &e);
      // Whatever the task left behind in its group and its cgroup goes with it (the monitor
      // ended what was left in its tree).
      kill(-p.pid, SIGKILL);
      if (CgroupPopulated(p.cgroup)) {
        SignalPod(0, p.cgroup, SIGKILL);
        p.leader_gone = true;
        p.recheck_ms = now_ms + 50;
        p.ended = std::move(e);
        ++it;
        continue;
      }
      ++it;
      Forget(e.key);
      out.push_back(std::move(e));
      continue;
    }
    if (p.kill_at_ms >= 0 && now_ms >= p.kill_at_ms && !p.killed) {
      SignalPod(LiveLeader(p), p.cgroup, SIGKILL);
      kill(-p.pid, SIGKILL);
      p.killed = true;
    }
    ++it;
  }
  return out;
}

}  // namespace tessera::agent
