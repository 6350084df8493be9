// Nodes and their GPUs. Each GPU carries its own sharing mode, so one node can mix whole,
// time-sliced, fractionally shared and MIG-partitioned cards.
#ifndef TESSERA_CORE_NODE_H_
#define TESSERA_CORE_NODE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/mig.h"
#include "core/resources.h"
#include "core/status.h"

namespace tessera::core {

// kCordoned: the admin took this one card out of service (a per-GPU cordon); like an unhealthy
// card, nothing new is placed on it.
enum class GpuHealth : uint8_t { kHealthy, kUnhealthy, kCordoned };

enum class SharingMode : uint8_t {
  kExclusive,  // one pod holds the whole card
  kTimeSlice,  // `replicas` pods interleave on the card (no memory or fault isolation)
  kShared,     // fractional compute (milli) and memory (MiB), MPS / cGPU / HAMi style
  kMig,        // hardware partitions: `mig` lists the instances configured on the card
};

std::string_view SharingModeName(SharingMode m);

struct GpuSharing {
  SharingMode mode = SharingMode::kExclusive;
  // kTimeSlice: replicas are advertised as `nvidia.com/gpu.shared` (device plugin's
  // renameByDefault). When false they are advertised as plain `nvidia.com/gpu` units.
  bool rename = false;
  // kTimeSlice: a request for more than one replica fails (failRequestsGreaterThanOne).
  bool fail_requests_greater_than_one = false;
  // kTimeSlice: number of replicas the card is advertised as (>= 2).
  uint16_t replicas = 0;
  // kMig: the instances configured on the card; legal per CheckMigLayout.
  std::vector<MigInstance> mig;
  // kShared: the node runs the card's shares through an MPS server (hardware limits per
  // client) rather than the share interposer; placement is the same.
  bool mps = false;
};

// Fields the placement hot path reads come first, so a node's cards are read in few cache lines.
struct GpuDevice {
  uint16_t index = 0;          // node-local index (nvidia-smi order)
  int16_t numa_node = -1;      // -1: unknown
  int16_t nvlink_domain = -1;  // GPUs sharing a domain have NVLink/NVSwitch between them
  GpuHealth health = GpuHealth::kHealthy;
  int64_t memory_mib = 0;  // framebuffer size
  GpuSharing sharing;
  std::string model;  // e.g. "H100-80GB", "T4", "V100M32"
  std::string uuid;   // e.g. GPU-5c7f...; unique in the cluster
};

// Model names are short ("T4", "V100M32", "H100-80GB"): compared inline, without a call to
// memcmp, on the placement hot path (a pod pinned to models checks every card it looks at).
inline bool SameModel(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

enum class TaintEffect : uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };

std::string_view TaintEffectName(TaintEffect e);

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  friend bool operator==(const Taint&, const Taint&) = default;
};

using Labels = std::map<std::string, std::string, std::less<>>;

struct NodeSpec {
  std::string name;
  Labels labels;
  std::vector<Taint> taints;
  bool unschedulable = false;   // cordoned
  Resources allocatable;        // CPU and memory pods may use
  std::vector<GpuDevice> gpus;  // indexed by GpuDevice::index order
};

// Checks a node definition: name, quantities, GPU indices unique and dense enough, per-GPU
// sharing consistent with its model (MIG only on MIG-capable models, legal layout), replicas.
Status ValidateNodeSpec(const NodeSpec& node);

}  // namespace tessera::core

#endif  // TESSERA_CORE_NODE_H_
