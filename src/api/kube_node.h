// The core/v1 Node view of a Tessera Node, the GPU resources its cards offer as the device
// plugins name them, and a client's changes to that view (kubectl cordon, label, taint).
#ifndef TESSERA_API_KUBE_NODE_H_
#define TESSERA_API_KUBE_NODE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "core/node.h"
#include "core/status.h"

namespace tessera::api {

// The core/v1 Node a Tessera Node (stored form, with metadata.resourceVersion) stands for:
// labels (with kubernetes.io/hostname, os and arch), spec.unschedulable and taints, capacity
// and allocatable (healthy cards only) with the GPU resources the device plugins would
// advertise for the cards as `sharing` configures them (GpuResources), the Ready condition
// from the heartbeat (Unknown once older than `grace_ms`), nodeInfo, and the GPUs under the
// annotation tessera.io/gpus.
nlohmann::json KubeNode(const nlohmann::json& node, int64_t now_ms, int64_t grace_ms,
                        const std::vector<GpuSharingConfigSpec>& sharing);

// The extended resources `node`'s cards (with their sharing applied) offer, as the NVIDIA,
// Alibaba cGPU and HAMi device plugins name them: nvidia.com/gpu for exclusive cards and
// time-slice replicas, nvidia.com/gpu.shared for renamed replicas, nvidia.com/mig-<profile>
// per MIG instance, and for cards shared by fraction tessera.io/gpu-milli (1000 a card),
// aliyun.com/gpu-mem (GiB), aliyun.com/gpu-count, aliyun.com/gpu-core and nvidia.com/gpucores
// (100 a card), nvidia.com/gpumem (MiB). nvidia.com/gpu is always there; the others when a
// card offers them. Only healthy cards count when `healthy_only`.
std::map<std::string, int64_t> GpuResources(const core::NodeSpec& node, bool healthy_only);

// The Tessera Node `stored` with what a client changed in its core/v1 view: `view` as served
// (KubeNode) and `changed` as the client made it (a patched or replaced view). Labels,
// annotations, spec.unschedulable and spec.taints carry over (kubectl cordon, label, annotate,
// taint); labels and annotations the view adds are dropped unless changed; any other change is
// an error naming it.
Result<nlohmann::json> NodeWithKubeChanges(const nlohmann::json& stored, const nlohmann::json& view,
                                           const nlohmann::json& changed);

}  // namespace tessera::api

#endif  // TESSERA_API_KUBE_NODE_H_
