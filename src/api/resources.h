// Translation of the resource names users already write into Tessera's normalized GPU request:
//   nvidia.com/gpu: N                     N whole cards (replicas on a time-sliced card
//                                         advertised without rename)
//   nvidia.com/gpu.shared: N              N time-slice replicas
//   nvidia.com/mig-<g>g.<m>gb: N          N MIG instances of that profile
//   tessera.io/gpu-milli: M               a share of M/1000 of one card
//   aliyun.com/gpu-mem: G                 a share of G GiB of one card (cGPU)
//   aliyun.com/gpu-core: P                with P% of its compute (cGPU)
//   nvidia.com/gpumem: MiB                HAMi: MiB per card, on nvidia.com/gpu cards
//   nvidia.com/gpucores: P                HAMi: P% of each card's compute
//   cpu, memory                           CPU and memory; ephemeral-storage is accepted and
//                                         not scheduled on
#ifndef TESSERA_API_RESOURCES_H_
#define TESSERA_API_RESOURCES_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/pod.h"
#include "core/status.h"

namespace tessera::api {

using ResourceList = std::map<std::string, std::string>;

// Fills `pod->requests` and `pod->gpu` from one container's limits and requests. Requests
// default to limits; for GPU resources, when both are set they must be equal (as Kubernetes
// requires for extended resources). `field` prefixes error paths, e.g.
// "spec.containers[0].resources".
Status ApplyContainerResources(const ResourceList& limits, const ResourceList& requests,
                               std::string_view field, core::PodSpec* pod);

// Parses a GPU model constraint "V100M16|V100M32" into its alternatives.
std::vector<std::string> ParseGpuModels(std::string_view spec);

}  // namespace tessera::api

#endif  // TESSERA_API_RESOURCES_H_
