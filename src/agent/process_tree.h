// Every process of a pod, however it left its process group: the descendants of the pod's
// monitor (a child subreaper, so a `setsid` or double-forked process stays its descendant while
// it lives) and, where the pod has a cgroup v2 group, every process in that group. Signals reach
// all of them; SIGKILL through the group's cgroup.kill where the kernel has it.
//
// Async-signal-safe apart from the cgroup paths (no allocation: raw system calls over /proc),
// so that a monitor forked without exec may use SignalDescendants.
#ifndef TESSERA_AGENT_PROCESS_TREE_H_
#define TESSERA_AGENT_PROCESS_TREE_H_

#include <sys/types.h>

#include <string>

namespace tessera::agent {

// Sends `sig` to every descendant of `root` (not to `root`); returns how many were signalled.
// Walks /proc's parent links, so a descendant started while it runs may be missed: callers that
// must leave none repeat it until it returns 0.
int SignalDescendants(pid_t root, int sig);

// Sends `sig` to every process of a pod: `leader`'s process group, its descendants and, when
// `cgroup_dir` is not empty, every process in that cgroup (SIGKILL by writing cgroup.kill).
void SignalPod(pid_t leader, const std::string& cgroup_dir, int sig);

// Whether the cgroup at `dir` still holds a process (cgroup.events' populated, or a non-empty
// cgroup.procs); false when `dir` is empty or gone.
bool CgroupPopulated(const std::string& dir);

// When this process is PID 1 (the agent as a container's entrypoint), every orphan in its PID
// namespace is handed to it, and one never reaped stays a zombie. Then it forks: the child
// returns and goes on (as the agent), while the parent stays behind as init, reaping whatever
// is handed to it and passing stop signals to the child, and exits as the child does. Returns
// at once when this is not PID 1. Call before any thread starts.
void StandInForInit();

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_PROCESS_TREE_H_
