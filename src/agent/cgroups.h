// A cgroup v2 group per pod, under <root>/tessera/<agent>/<pod>: every process of the pod is in
// it (the monitor joins it before the task runs, and what it forks stays in it), so that a stop
// or a fence reaches each one through cgroup.kill (agent/process_tree.h), and, where the
// hierarchy has the cpu and memory controllers, cpu.max and memory.max limit the pod to its
// binding. Where cgroup v2 is not mounted or not writable, the reason is returned and the pod
// runs without a group (the agent says so at start).
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
// `agent` names this agent's groups (several agents may share a machine). A limit whose
// controller the hierarchy lacks is not written, and the description says so.
Result<CgroupLimits> PrepareCgroup(const std::string& root, const std::string& key,
                                   int64_t cpu_milli, int64_t memory_mib,
                                   const std::string& agent = "");

// The group of pod `key` of agent `agent` under `root`.
std::string CgroupDir(const std::string& root, const std::string& key,
                      const std::string& agent = "");

// The writable cgroup v2 hierarchy for pods' groups: `wanted` when it is one ("auto": the
// unified mount at /sys/fs/cgroup, else the hybrid one at /sys/fs/cgroup/unified); the reason
// there is none otherwise.
Result<std::string> FindCgroupRoot(const std::string& wanted);

// Removes a pod's group once its processes are gone (best effort).
void RemoveCgroup(const std::string& dir);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_CGROUPS_H_
