#include "agent/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace tessera::agent {
namespace {

struct Linux64Dirent {
  unsigned long long d_ino;
  long long d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// A decimal pid from `s`; 0 when `s` is not one.
pid_t ParsePid(const char* s) {
  long long v = 0;
  if (*s == '\0') return 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9' || v > 100'000'000) return 0;
    v = v * 10 + (*s - '0');
  }
  return static_cast<pid_t>(v);
}

// The parent pid and state of `pid` from /proc/<pid>/stat; false when it is gone.
bool ReadParent(pid_t pid, pid_t* ppid, char* state) {
  char path[64] = "/proc/";
  char digits[24];
  int n = 0;
  for (long long v = pid; v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  int len = 6;
  while (n > 0) path[len++] = digits[--n];
  const char tail[] = "/stat";
  for (char c : tail) path[len++] = c;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return false;
  buf[got] = '\0';
  // "pid (comm) S ppid ...": the command may hold spaces and parentheses; the last ')' ends it.
  const char* close_paren = nullptr;
  for (const char* p = buf; *p != '\0'; ++p) {
    if (*p == ')') close_paren = p;
  }
  if (close_paren == nullptr || close_paren[1] != ' ' || close_paren[2] == '\0') return false;
  *state = close_paren[2];
  long long v = 0;
  const char* p = close_paren + 3;
  while (*p == ' ') ++p;
  for (; *p >= '0' && *p <= '9'; ++p) v = v * 10 + (*p - '0');
  *ppid = static_cast<pid_t>(v);
  return true;
}

// Every process on the machine as (pid, parent, state), into `out` (room for `cap`); returns
// how many. Raw getdents64 over /proc: no allocation.
struct Entry {
  pid_t pid;
  pid_t ppid;
  char state;
  bool marked;  // a descendant of the process asked about
};
size_t ListProcesses(Entry* out, size_t cap) {
  const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  size_t n = 0;
  alignas(8) char buf[8192];
  for (;;) {
    const long got = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (got <= 0) break;
    for (long off = 0; off < got;) {
      const auto* d = reinterpret_cast<const Linux64Dirent*>(buf + off);
      off += d->d_reclen;
      const pid_t pid = ParsePid(d->d_name);
      if (pid <= 0 || n == cap) continue;
      Entry e{pid, 0, 0, false};
      if (ReadParent(pid, &e.ppid, &e.state)) out[n++] = e;
    }
  }
  close(dir);
  return n;
}

constexpr size_t kMaxProcesses = 1 << 17;

// Room for the process table, mapped (not allocated) so that a forked monitor may use it.
class Table {
 public:
  Table() {
    void* p = mmap(nullptr, kMaxProcesses * sizeof(Entry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    entries_ = p == MAP_FAILED ? nullptr : static_cast<Entry*>(p);
  }
  ~Table() {
    if (entries_ != nullptr) munmap(entries_, kMaxProcesses * sizeof(Entry));
  }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  Entry* entries() { return entries_; }

 private:
  Entry* entries_ = nullptr;
};

std::vector<pid_t> CgroupProcs(const std::string& dir) {
  std::vector<pid_t> out;
  std::ifstream in(dir + "/cgroup.procs");
  for (long long pid = 0; in >> pid;) {
    if (pid > 0) out.push_back(static_cast<pid_t>(pid));
  }
  return out;
}

}  // namespace

int SignalDescendants(pid_t root, int sig) {
  Table table;
  Entry* all = table.entries();
  if (all == nullptr || root <= 0) return 0;
  const size_t n = ListProcesses(all, kMaxProcesses);
  std::sort(all, all + n, [](const Entry& a, const Entry& b) { return a.pid < b.pid; });
  // A process is marked once its parent is `root` or marked; passes repeat until nothing new is
  // marked (the depth of the tree). The parent is found by binary search over the table sorted by
  // pid.
  auto find = [&](pid_t pid) -> Entry* {
    Entry* e =
        std::lower_bound(all, all + n, pid, [](const Entry& a, pid_t p) { return a.pid < p; });
    return e != all + n && e->pid == pid ? e : nullptr;
  };
  for (size_t i = 0; i < n; ++i) all[i].marked = all[i].ppid == root && all[i].pid != root;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < n; ++i) {
      if (all[i].marked || all[i].pid == root) continue;
      const Entry* parent = find(all[i].ppid);
      if (parent != nullptr && parent->marked) {
        all[i].marked = true;
        grew = true;
      }
    }
  }
  int signalled = 0;
  for (size_t i = 0; i < n; ++i) {
    if (all[i].marked && kill(all[i].pid, sig) == 0) ++signalled;
  }
  return signalled;
}

void SignalPod(pid_t leader, const std::string& cgroup_dir, int sig) {
  if (leader > 0) {
    SignalDescendants(leader, sig);
    kill(-leader, sig);
  }
  if (cgroup_dir.empty()) return;
  if (sig == SIGKILL) {
    std::ofstream kill_file(cgroup_dir + "/cgroup.kill");
    kill_file << "1\n";
    kill_file.flush();
    if (kill_file) return;  // the kernel kills every process in the group, and those it forks
  }
  for (pid_t pid : CgroupProcs(cgroup_dir)) kill(pid, sig);
}

bool CgroupPopulated(const std::string& dir) {
  if (dir.empty()) return false;
  // A real cgroup v2 group says so in cgroup.events; anything else (a directory standing in for
  // one, or one removed) holds nothing.
  std::ifstream events(dir + "/cgroup.events");
  for (std::string key, value; events >> key >> value;) {
    if (key == "populated") return value == "1";
  }
  return false;
}

void StandInForInit() {
  if (getpid() != 1) return;
  sigset_t all, before;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &before);
  const pid_t child = fork();
  if (child <= 0) {  // the agent (or no fork: the agent stays PID 1)
    sigprocmask(SIG_SETMASK, &before, nullptr);
    return;
  }
  for (;;) {
    siginfo_t info{};
    timespec tick{1, 0};
    const int sig = sigtimedwait(&all, &info, &tick);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT || sig == SIGUSR1 ||
        sig == SIGUSR2) {
      kill(child, sig);
      continue;
    }
    // SIGCHLD, or a second gone by: reap everything that has ended.
    for (;;) {
      int status = 0;
      const pid_t got = waitpid(-1, &status, WNOHANG);
      if (got <= 0) break;
      if (got != child) continue;
      if (WIFSIGNALED(status)) _exit(128 + WTERMSIG(status));
      _exit(WEXITSTATUS(status));
    }
  }
}

}  // namespace tessera::agent
