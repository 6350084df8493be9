// The device step: which exact devices on a node can satisfy a pod's GPU request. It proposes
// candidate device sets (one per meaningfully different choice) and explains, when there is
// none, why not, in the words of the unschedulable message.
#ifndef TESSERA_CORE_DEVICES_H_
#define TESSERA_CORE_DEVICES_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/cluster_state.h"
#include "core/framework.h"
#include "core/pod.h"

namespace tessera::core {

// Per-pod facts the device step needs, computed once per cycle.
struct DeviceRequest {
  const PodSpec* pod = nullptr;
  std::string model_reason;  // "no GPU of model V100M16|V100M32"
  std::string mig_missing;   // "no MIG 1g.5gb instance"
  std::string mig_busy;      // "no free MIG 1g.5gb instance"
};

DeviceRequest MakeDeviceRequest(const PodSpec& pod);

// Whether node `id` could never hold the request however much of it were free: a whole-GPU
// request for more cards than it has of the models asked (what ProposeCandidates checks first;
// for a node another filter rejected before its cards were looked at).
bool NeverHoldsWholeCards(const DeviceRequest& req, const ClusterState& state, NodeId id);

// Appends to `out` the candidates for the request on node `id`. Returns an empty view when at
// least one was appended, else the reason none exists (valid while `req` lives).
std::string_view ProposeCandidates(const DeviceRequest& req, const ClusterState& state, NodeId id,
                                   std::vector<Candidate>& out);

// Memory (MiB) a share takes on a card of `card_mib`: the asked memory, or else `milli` of it.
int64_t ShareMemoryMib(const GpuRequest& req, int64_t card_mib);

// Milli-GPUs a pick of `c` takes on its card (see ClusterState::GpuTakenMilli).
int64_t PickMilli(const ClusterState& state, const PodSpec& pod, const Candidate& c,
                  const DevicePick& pick);

// Turns a candidate into the Placement it stands for.
Placement Materialize(const ClusterState& state, const PodSpec& pod, const Candidate& c);

}  // namespace tessera::core

#endif  // TESSERA_CORE_DEVICES_H_
