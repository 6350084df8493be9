// Container Device Interface (CDI) specs for the node's GPUs, so that a container runtime gives
// a container exactly the cards it names as "nvidia.com/gpu=<UUID>" (or "=<index>", or a MIG
// device's UUID), with the driver's device nodes and libraries.
#ifndef TESSERA_AGENT_CDI_H_
#define TESSERA_AGENT_CDI_H_

#include <nlohmann/json.hpp>
#include <string>

#include "agent/gpu_info.h"
#include "core/status.h"

namespace tessera::agent {

// The spec (CDI 0.5.0, as JSON) of kind nvidia.com/gpu for `gpus`, from what the host under
// `root` ("" for the host itself; tests give a directory) shows: each GPU's device node by its
// minor number (/proc/driver/nvidia/gpus/<bus id>/information), a MIG device's capability nodes
// (/proc/driver/nvidia-caps/mig-minors), the control and UVM nodes present under /dev, and the
// driver's libraries (libcuda, libnvidia-ml, libnvidia-ptxjitcompiler, libnvidia-nvvm) and
// nvidia-smi, mounted read-only. An error names a GPU whose minor number cannot be read.
Result<nlohmann::json> CdiSpec(const NodeGpus& gpus, const std::string& root);

// Makes sure a runtime can resolve the GPUs' CDI names: nothing when a spec of kind
// nvidia.com/gpu is already in /etc/cdi or /var/run/cdi; else `nvidia-ctk cdi generate` into
// /var/run/cdi/nvidia.yaml when nvidia-ctk is on `path_env`; else CdiSpec written to
// /var/run/cdi/tessera-nvidia.json. Returns what it did, in words, for the agent's log.
Result<std::string> EnsureCdiSpec(const NodeGpus& gpus, const std::string& root,
                                  const std::string& path_env);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_CDI_H_
