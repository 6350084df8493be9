// CPU and memory limits for a pod through cgroup v2: a group per pod under
// <root>/tessera/<pod>, with cpu.max and memory.max from the pod's binding; the pod's process
// joins it before it runs. Where cgroup v2 is not mounted or not writable, the reason is
// returned and the pod runs without limits (the agent reports it).
#ifndef TESSERA_AGENT_CGROUPS_H_
#define TESSERA_AGENT_CGROUPS_H_

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tessera::agent {

struct CgroupLimits {
  std::string dir;          // the pod's group
  std::string procs_path;   // <dir>/cgroup.procs, for the process to join
  std::string description;  // "cpu.max=400000 100000, memory.max=17179869184"
};

// `key` is the pod's "<ns>/<job>/<pod>"; cpu_milli and memory_mib of 0 mean no limit ("max").
Result<CgroupLimits> PrepareCgroup(const std::string& root, const std::string& key,
                                   int64_t cpu_milli, int64_t memory_mib);

// The group of pod `key` under `root`.
std::string CgroupDir(const std::string& root, const std::string& key);

// Removes a pod's group once its processes are gone (best effort).
void RemoveCgroup(const std::string& dir);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_CGROUPS_H_
