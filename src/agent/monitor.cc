#include "agent/monitor.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "agent/process_tree.h"

namespace tessera::agent {
namespace {

// Async-signal-safe decimal formatting into `out` (at least 24 bytes); returns the length.
int FormatInt(long long v, char* out) {
  char digits[24];
  int n = 0;
  const bool negative = v < 0;
  unsigned long long u = negative ? 0ULL - static_cast<unsigned long long>(v) : v;
  do {
    digits[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u > 0 && n < 22);
  int len = 0;
  if (negative) out[len++] = '-';
  while (n > 0) out[len++] = digits[--n];
  return len;
}

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, data, n);
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

template <size_t N>
[[noreturn]] void Fail(const char (&msg)[N], int code) {
  WriteAll(STDERR_FILENO, msg, N - 1);
  _exit(code);
}

// Stop signals are for the task: the monitor outlives it to record how it ended.
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

void SetDisposition(int sig, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigaction(sig, &action, nullptr);
}

// Parses a decimal integer (optionally negative); false when `s` is not one.
bool ParseInt(const char* s, long long* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoll(s, &end, 10);
  return errno == 0 && *end == '\0';
}

// Closes every descriptor from `first` on (async-signal-safe).
void CloseFrom(int first) {
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
  struct rlimit lim = {};
  const rlim_t end =
      getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < 65536 ? lim.rlim_cur : 65536;
  for (rlim_t fd = first; fd < end; ++fd) close(static_cast<int>(fd));
}

void SleepMs(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1'000'000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// Reaps the children that have ended; true when none is left.
bool ReapEnded() {
  for (;;) {
    const pid_t got = waitpid(-1, nullptr, WNOHANG);
    if (got < 0 && errno == ECHILD) return true;
    if (got <= 0) return false;
  }
}

// What the task left running when it ended goes with it: SIGTERM, up to kLeftoverGraceMs to
// end, then SIGKILL until none is left, every child reaped. The pod's end is reported once this
// monitor exits, so nothing of it runs on after.
constexpr long kLeftoverGraceMs = 2000;
void EndLeftovers() {
  if (SignalDescendants(getpid(), SIGTERM) > 0) {
    for (long waited = 0; waited < kLeftoverGraceMs && !ReapEnded(); waited += 20) SleepMs(20);
  }
  for (int round = 0; round < 500; ++round) {
    const int left = SignalDescendants(getpid(), SIGKILL);
    if (ReapEnded() && left == 0) return;
    SleepMs(10);
  }
}

}  // namespace

PreparedTask::PreparedTask(std::vector<std::string> argv, std::vector<std::string> env,
                           std::string cwd, int64_t uid, int64_t gid)
    : env_strings_(std::move(env)),
      args_(std::move(argv)),
      envp_(CStrings(env_strings_)),
      argv_(CStrings(args_)),
      cwd_(std::move(cwd)),
      uid_(uid),
      gid_(gid) {}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void PreparedTask::Become() const {
  if (gid_ >= 0) {
    const gid_t g = static_cast<gid_t>(gid_);
    if (setgroups(1, &g) != 0 || setgid(g) != 0) {
      Fail("tessera: cannot take the task's group (runAsGroup)\n", 126);
    }
  }
  // A user without a group keeps the agent's gid but none of its supplementary groups.
  if (gid_ < 0 && uid_ >= 0 && setgroups(0, nullptr) != 0) {
    Fail("tessera: cannot drop the agent's groups (runAsUser)\n", 126);
  }
  if (uid_ >= 0 && setuid(static_cast<uid_t>(uid_)) != 0) {
    Fail("tessera: cannot take the task's user (runAsUser)\n", 126);
  }
  if (!cwd_.empty() && chdir(cwd_.c_str()) != 0) {
    Fail("tessera: cannot enter the task's working directory\n", 126);
  }
  if (argv_[0] != nullptr) {
    execvpe(argv_[0], const_cast<char* const*>(argv_.data()),
            const_cast<char* const*>(envp_.data()));
  }
  Fail("tessera: cannot execute the task's command\n", 127);
}

bool JoinCgroup(const char* procs) {
  char line[32];
  int n = FormatInt(getpid(), line);
  line[n++] = '\n';
  const int fd = open(procs, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = write(fd, line, n) == n;
  close(fd);
  return ok;
}

void RunMonitor(const MonitorPlan& plan) {
  // The leader of the task's own process group: signals to the group reach all it starts.
  setsid();
  // A child subreaper: a process the task starts that leaves the group (setsid, a double fork)
  // is handed to this monitor when its parent ends, so it stays in the pod's tree, where stops
  // and fences reach it (process_tree.h), and is reaped here.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Join the pod's cgroup before anything runs; the task inherits it.
  if (plan.cgroup_procs != nullptr && !JoinCgroup(plan.cgroup_procs)) _exit(125);
  if (plan.log_fd >= 0) {
    dup2(plan.log_fd, STDOUT_FILENO);
    dup2(plan.log_fd, STDERR_FILENO);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0 && null != STDIN_FILENO) {
      dup2(null, STDIN_FILENO);
      close(null);
    }
  }
  // Nothing else stays open: a monitor forked from the agent would otherwise hold all the
  // agent's descriptors (in `tessera dev` the server's listening socket and data directory
  // lock) for as long as its task runs.
  int ready = plan.ready_fd;
  if (ready >= 0 && ready != 3 && dup2(ready, 3) == 3) ready = 3;
  CloseFrom(ready == 3 ? 4 : 3);
  for (int sig : kStopSignals) SetDisposition(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const pid_t task = fork();
  if (task == 0) {
    for (int sig : kStopSignals) SetDisposition(sig, SIG_DFL);
    SetDisposition(SIGPIPE, SIG_DFL);
    if (ready >= 0) close(ready);  // the task now takes stop signals
    plan.task->Become();
  }
  if (ready >= 0) close(ready);
  if (task < 0) _exit(125);
  int status = 0;
  for (;;) {
    int st = 0;
    const pid_t got = waitpid(-1, &st, 0);
    if (got == task) {
      status = st;
      break;
    }
    if (got < 0 && errno != EINTR) _exit(125);
    // Another child: an orphan of the task's, handed to this subreaper, reaped.
  }
  EndLeftovers();
  const bool signaled = WIFSIGNALED(status);
  const int value = signaled ? WTERMSIG(status) : WEXITSTATUS(status);
  if (plan.exit_record != nullptr) {
    const int fd = open(plan.exit_record, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const char* how = signaled ? "signal " : "exit ";
      WriteAll(fd, how, signaled ? 7 : 5);
      char line[32];
      int n = FormatInt(value, line);
      line[n++] = '\n';
      WriteAll(fd, line, static_cast<size_t>(n));
      fsync(fd);
      close(fd);
    }
  }
  if (signaled) {
    // End as the task did, without a core file of the monitor's own.
    struct rlimit no_core {};
    setrlimit(RLIMIT_CORE, &no_core);
    SetDisposition(value, SIG_DFL);
    kill(getpid(), value);
    _exit(128 + value);
  }
  _exit(value);
}

int MonitorMain(int argc, char** argv) {
  MonitorPlan plan;
  std::vector<std::string> env, args;
  std::string cwd;
  long long uid = -1, gid = -1, ready = -1;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--") {
      ++i;
      break;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = true;
    if (value == nullptr) {
      ok = false;
    } else if (flag == "--ready") {
      ok = ParseInt(value, &ready) && ready >= 0;
    } else if (flag == "--cgroup") {
      plan.cgroup_procs = value;
    } else if (flag == "--record") {
      plan.exit_record = value;
    } else if (flag == "--uid") {
      ok = ParseInt(value, &uid);
    } else if (flag == "--gid") {
      ok = ParseInt(value, &gid);
    } else if (flag == "--cwd") {
      cwd = value;
    } else {
      ok = false;
    }
    if (!ok) {
      const std::string msg = "tessera-monitor: bad argument " + flag + "\n";
      WriteAll(STDERR_FILENO, msg.data(), msg.size());
      return 125;
    }
    ++i;
  }
  for (; i < argc; ++i) args.emplace_back(argv[i]);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  if (args.empty()) {
    Fail("tessera-monitor: no command after --\n", 125);
  }
  const PreparedTask task(std::move(args), std::move(env), std::move(cwd), uid, gid);
  plan.ready_fd = static_cast<int>(ready);
  plan.task = &task;
  RunMonitor(plan);
}

}  // namespace tessera::agent
