// Synthetic GPUs for nodes without any (--fake-gpus 8xH100-80GB,2xT4): a deterministic inventory
// and telemetry that tests can set.
#ifndef TESSERA_AGENT_FAKE_GPUS_H_
#define TESSERA_AGENT_FAKE_GPUS_H_

#include <string>
#include <string_view>

#include "agent/gpu_info.h"
#include "core/status.h"

namespace tessera::agent {

// "8xH100-80GB,2xT4": counts and products (H100-80GB, H200-141GB, A100-80GB, A100-40GB, A10, L4,
// T4, V100-32GB, V100-16GB). UUIDs are derived from `node` and the index, so they are stable.
// GPUs of an NVLink-capable product (H100, H200, A100 SXM) are NVLink peers of each other.
Result<NodeGpus> FakeGpus(std::string_view spec, std::string_view node);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_FAKE_GPUS_H_
