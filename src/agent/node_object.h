// The Node object an agent registers: its GPUs as discovered, labels in the GPU Feature
// Discovery style plus the user's own, taints, and the CPU and memory pods may use.
#ifndef TESSERA_AGENT_NODE_OBJECT_H_
#define TESSERA_AGENT_NODE_OBJECT_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "core/status.h"

namespace tessera::agent {

struct NodeIdentity {
  std::string name;
  std::map<std::string, std::string> labels;        // the user's, added to the discovered ones
  nlohmann::json taints = nlohmann::json::array();  // [{key, value, effect}]
  int64_t cpu_milli = 0;                            // allocatable
  int64_t memory_mib = 0;
  std::string address;  // where other nodes reach this one (status.address); empty: none said
  // This boot of the machine (status.bootId): the loop lifts a reboot mark when it changes.
  std::string boot_id;
};

// Labels: nvidia.com/gpu.present, gpu.product (of GPU 0), gpu.count, gpu.memory (MiB of GPU
// 0), mig.capable, gpu.driver (version), tessera.io/gpu.source (nvml | fake) and, for fake
// GPUs, tessera.io/simulated=true.
std::map<std::string, std::string> DiscoveredLabels(const NodeGpus& gpus);

// A tessera.io/v1 Node with `status` {allocatable, gpus[], driverVersion, heartbeat}.
nlohmann::json NodeObject(const NodeIdentity& id, const NodeGpus& gpus,
                          const std::string& heartbeat_time);

// "k=v,k2=v2" -> labels; "k=v:NoSchedule,k2:PreferNoSchedule" -> taints. Errors name the flag.
Result<std::map<std::string, std::string>> ParseLabels(const std::string& spec);
Result<nlohmann::json> ParseTaints(const std::string& spec);

// What this machine offers pods: CPUs the process may run on, MemTotal from /proc/meminfo,
// minus `reserved_cpu_milli` and `reserved_memory_mib` for the system.
void MachineCapacity(int64_t reserved_cpu_milli, int64_t reserved_memory_mib, NodeIdentity* id);
// The kernel's id of this boot (/proc/sys/kernel/random/boot_id); "" when it cannot be read.
std::string BootId();

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_NODE_OBJECT_H_
