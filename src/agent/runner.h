// Runs tasks as process groups: command and args, environment, working directory, stdout and
// stderr to a log file; reports exits; stops with SIGTERM, then SIGKILL after a grace period.
// Each task runs under a small monitor process (agent/monitor.h), the group's leader, that waits
// for it and records how it ended in the state directory: a restarted agent adopts the groups its
// predecessor left (Adopt) and still learns their exit codes. Not thread-safe: one owner drives
// it (the agent loop).
#ifndef TESSERA_AGENT_RUNNER_H_
#define TESSERA_AGENT_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/monitor.h"
#include "core/status.h"

namespace tessera::agent {

struct ProcessSpec {
  std::string key;                // unique per run, e.g. "team-a/train/worker-0"
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  // The whole environment, with PATH (the system's) and HOME (the working directory) unless
  // given: nothing is inherited from the agent.
  std::map<std::string, std::string> env;
  std::string workdir;       // created when missing; HOME, and the cwd unless `cwd` is set
  std::string log_path;      // stdout and stderr, appended
  std::string cgroup_procs;  // a cgroup.procs file the process joins first; empty: none
  // The task's user and group (securityContext.runAsUser/runAsGroup); -1: the agent's. Setting
  // them needs the agent to be root; the task fails to start otherwise.
  int64_t uid = -1;
  int64_t gid = -1;
  std::string cwd;  // the task's working directory (workingDir); must exist
  // Directories created (and given to uid/gid) before the task starts: its emptyDir volumes.
  std::vector<std::string> dirs;
  // Directories created writable by every user (mode 1777) before the task starts: what a
  // container's user, whoever the image makes it, writes to (the share interposer's region).
  std::vector<std::string> open_dirs;
  // Files written (path -> content, readable by the task) before it starts: its hostfile.
  std::map<std::string, std::string> files;
  std::set<std::string> executables;  // of `files`, those made executable
  // The container's name when the task runs in one (argv[0] is then the runtime); the Runner
  // does not use it.
  std::string container;
};

// The task's whole environment as "NAME=value": PATH (the system's) and HOME (the working
// directory) unless the spec gives them; nothing of the agent's.
std::vector<std::string> TaskEnvironment(const ProcessSpec& spec);
// The task's working directory: `cwd`, else `workdir`.
std::string TaskDirectory(const ProcessSpec& spec);
// What a forked child needs to become the task of `spec` (agent/monitor.h), built before fork.
PreparedTask PrepareTask(const ProcessSpec& spec);

// Where the monitor executable (tessera-monitor) is: beside the running executable; "" when it
// is not there.
std::string MonitorExecutable();
// Where the share interposer (libtessera-share.so) is: beside the running executable; "" when
// it is not there.
std::string ShareInterposerLibrary();

// A process group the state directory records: its leader's pid and start time (clock ticks
// since boot), which together name one process whatever pids are reused later.
struct RecordedGroup {
  std::string key;
  pid_t pgid = 0;
  unsigned long long started = 0;
  std::string pid_file;
  std::string cgroup;  // the pod's cgroup v2 group; "" when it has none
};
// The groups recorded in `state_dir`, alive or not.
std::vector<RecordedGroup> RecordedGroups(const std::string& state_dir);
// A process's start time in clock ticks since boot (/proc/<pid>/stat); 0 if unknown.
unsigned long long StartTime(pid_t pid);
// Whether the recorded leader still runs (same pid and start time, not a zombie).
bool Alive(pid_t pid, unsigned long long started);

struct Exit {
  std::string key;
  int exit_code = 0;     // when exited normally
  int signal = 0;        // when killed by a signal
  bool stopped = false;  // we stopped it (Stop)
};

class Runner {
 public:
  // `state_dir` keeps a pid file and an exit record per process, so that a restarted agent can
  // adopt what an earlier one left running (see Adopt); empty: none kept. `monitor` is the
  // monitor executable each task is started under (posix_spawn); empty: the monitor is a
  // child forked from this process, which copies its address space for each task.
  explicit Runner(std::string state_dir = "", std::string monitor = MonitorExecutable())
      : state_dir_(std::move(state_dir)), monitor_(std::move(monitor)) {}
  ~Runner();  // kills what still runs
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Takes over the process groups an earlier runner on this state dir left running (its agent
  // was killed or restarted) and returns their keys: they are Running, Stop stops them and Poll
  // reports their exits, as for groups started here. Records of groups that are gone are
  // removed. Whether an adopted group should still run here is the caller's decision.
  std::vector<std::string> Adopt();

  // Forgets every group without stopping it, leaving its records for a successor to Adopt.
  void Detach();

  // `<state_dir>/<key with '/' as '_'><ext>`: where the records of `key` are kept ("" when no
  // state dir). The owner may keep its own records of a key there under other extensions.
  std::string StateFile(const std::string& key, const char* ext) const;

  // Returns once the task runs and takes stop signals (or failed to start).
  Status Start(const ProcessSpec& spec);
  // Starts several, as Start each (a status per spec, in order), their starts overlapping.
  std::vector<Status> StartAll(const std::vector<const ProcessSpec*>& specs);
  bool Running(const std::string& key) const { return procs_.contains(key); }
  pid_t Pid(const std::string& key) const;
  // The pod's cgroup v2 group; "" when it has none (or is not running).
  std::string Cgroup(const std::string& key) const;
  std::vector<std::string> Keys() const;

  // Sends SIGTERM to every process of the pod now and SIGKILL at `now_ms + grace_ms` (by
  // Poll): its process group, the monitor's descendants and its cgroup (process_tree.h).
  void Stop(const std::string& key, int64_t now_ms, int64_t grace_ms);

  // Reaps exited processes and escalates overdue stops. A pod's exit is reported once its
  // leader has ended and its cgroup (when it has one) holds no process: what is left is killed.
  std::vector<Exit> Poll(int64_t now_ms);

  // Descriptors that become readable when a group's leader ends (pidfds; children and adopted
  // groups alike), for a caller that waits with poll(2) and then calls Poll. Valid until the
  // next Start, Poll, Adopt or Detach. A kernel without pidfds gives none: callers then also
  // wait no longer than they want to learn of exits late.
  std::vector<int> ExitFds() const;
  // The earliest time a stop escalates to SIGKILL (Poll must run then); -1 when none is due.
  int64_t NextDeadline() const;

 private:
  struct Proc {
    pid_t pid = 0;
    int64_t kill_at_ms = -1;  // -1: not stopping
    bool adopted = false;     // not our child: watched through /proc, not waitpid
    unsigned long long started = 0;
    int exit_fd = -1;     // pidfd of the leader; -1: none
    bool killed = false;  // the stop escalated to SIGKILL
    std::string cgroup;   // the pod's cgroup v2 group; "" when none
    // The leader has ended (its exit is in `ended`) but the cgroup still held processes when
    // last looked at; looked at again from `recheck_ms`.
    bool leader_gone = false;
    int64_t recheck_ms = -1;
    Exit ended;
  };
  // The leader of `p` while it may still be signalled as a tree (0 once it is gone).
  pid_t LiveLeader(const Proc& p) const;
  // A monitor started, not yet waited for: `ready` reads end of file once the monitor leads its
  // group and the task takes stop signals.
  struct Launched {
    pid_t pid = 0;
    int ready = -1;
  };
  // Prepares what `spec` needs (directories, files, log) and starts its monitor.
  Result<Launched> Launch(const ProcessSpec& spec);
  // Removes the pid file and exit record of `key`.
  void RemoveRecords(const std::string& key) const;
  void Forget(const std::string& key);

  // Starts the monitor of `spec` as its own executable; its pid.
  Result<pid_t> SpawnMonitor(const ProcessSpec& spec, const std::string& exit_record, int log,
                             int ready);
  // Starts the monitor of `spec` in a forked child; its pid.
  Result<pid_t> ForkMonitor(const ProcessSpec& spec, const std::string& exit_record, int log,
                            int ready[2]);

  std::string state_dir_;
  std::string monitor_;
  std::map<std::string, Proc> procs_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_RUNNER_H_
