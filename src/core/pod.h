// What a pod asks for, in normalized form. The API layer translates the resource names users
// write (nvidia.com/gpu, aliyun.com/gpu-mem, nvidia.com/mig-1g.5gb, ...) into this.
#ifndef TESSERA_CORE_POD_H_
#define TESSERA_CORE_POD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/node.h"
#include "core/resources.h"

namespace tessera::core {

enum class GpuRequestKind : uint8_t {
  kNone,
  // `count` whole cards, each a distinct physical GPU. On a time-sliced GPU advertised without
  // rename, a unit is a replica instead (as the NVIDIA device plugin does).
  kWhole,
  // `count` shares, each on a distinct shared-mode GPU, each of `milli` compute (0: unbounded)
  // and `memory_mib` memory (0: proportional to `milli` on the chosen card).
  kShare,
  // `count` MIG instances of `mig_profile`.
  kMig,
  // `count` time-slice replicas (nvidia.com/gpu.shared).
  kReplica,
};

struct GpuRequest {
  GpuRequestKind kind = GpuRequestKind::kNone;
  int32_t count = 0;
  int32_t milli = 0;        // kShare: compute share per GPU in milli-GPUs (1..1000)
  int64_t memory_mib = 0;   // kShare: memory per GPU
  std::string mig_profile;  // kMig: profile name, e.g. "1g.5gb"
};

enum class SelectorOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct LabelRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<std::string> values;
};

// A node matches a term when it matches every requirement (AND).
struct NodeSelectorTerm {
  std::vector<LabelRequirement> requirements;
};

struct PreferredTerm {
  int32_t weight = 1;  // 1..100
  NodeSelectorTerm term;
};

enum class TolerationOp : uint8_t { kEqual, kExists };

struct Toleration {
  std::string key;  // empty with kExists: tolerates every taint
  TolerationOp op = TolerationOp::kEqual;
  std::string value;
  bool any_effect = true;  // false: only `effect`
  TaintEffect effect = TaintEffect::kNoSchedule;
};

// Every field but `name` is part of PlacementSignature: a field added here must be added there.
struct PodSpec {
  std::string name;
  Resources requests;
  GpuRequest gpu;
  // Allowed GPU models (any of them); empty: any model.
  std::vector<std::string> gpu_models;
  Labels node_selector;
  // Required node affinity: the node must match at least one term (OR). Empty: no constraint.
  std::vector<NodeSelectorTerm> required_terms;
  std::vector<PreferredTerm> preferred_terms;
  std::vector<Toleration> tolerations;
};

// Checks quantities and shapes: counts positive and bounded, shares in range, weights in 1..100.
Status ValidatePodSpec(const PodSpec& pod);

// GPU demand of a pod in milli-GPUs as the request itself states it (whole cards x1000, shares by
// milli); 0 for MIG and replicas, whose size depends on the card chosen.
int64_t NominalGpuMilli(const PodSpec& pod);

// Everything about a pod that placement reads (every field but the name), as bytes: pods with
// equal signatures get equal filter verdicts, device candidates and scores on a node in one state.
std::string PlacementSignature(const PodSpec& pod);

}  // namespace tessera::core

#endif  // TESSERA_CORE_POD_H_
