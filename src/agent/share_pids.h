// The host pids of a fractional share's processes, for the share interposer's compute sampler:
// NVML's per-process samples carry host pids, and a process in a container sees only its own
// namespace's. The agent, on the host, finds each of them (the process whose pid namespace and
// pid there match, from /proc/<pid>/ns/pid and the NSpid line of /proc/<pid>/status) and writes
// it into the share's region (interpose/share_region.h).
#ifndef TESSERA_AGENT_SHARE_PIDS_H_
#define TESSERA_AGENT_SHARE_PIDS_H_

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::agent {

// The host pid of the process that is `pid` in the pid namespace whose inode is `pid_ns`, looked
// up under `proc` (/proc); 0 when there is none. A process in the caller's own namespace is its
// own pid.
int32_t HostPid(uint64_t pid_ns, int32_t pid, const std::string& proc = "/proc");

// Fills in the host pids of the live processes counted in the share region at `path`; how many
// stay unknown. NotFound when there is no region there (the share's processes have not started
// counting).
Result<int> MapSharePids(const std::string& path);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_SHARE_PIDS_H_
