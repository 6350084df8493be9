#include "core/node.h"

#include <set>

namespace tessera::core {

std::string_view SharingModeName(SharingMode m) {
  switch (m) {
    case SharingMode::kExclusive:
      return "exclusive";
    case SharingMode::kTimeSlice:
      return "timeslice";
    case SharingMode::kShared:
      return "shared";
    case SharingMode::kMig:
      return "mig";
  }
  return "?";
}

std::string_view TaintEffectName(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "?";
}

Status ValidateNodeSpec(const NodeSpec& node) {
  if (node.name.empty()) return InvalidArgument("node: name must not be empty");
  const std::string where = "node " + node.name + ": ";
  if (node.allocatable.cpu_milli < 0 || node.allocatable.memory_mib < 0) {
    return InvalidArgument(where + "allocatable cpu and memory must not be negative");
  }
  if (node.gpus.size() > static_cast<size_t>(kMaxGpusPerNode)) {
    return InvalidArgument(where + "at most " + std::to_string(kMaxGpusPerNode) +
                           " GPUs per node, got " + std::to_string(node.gpus.size()));
  }
  std::set<uint16_t> indices;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& g = node.gpus[i];
    const std::string gw = where + "gpus[" + std::to_string(i) + "]: ";
    if (!indices.insert(g.index).second) {
      return InvalidArgument(gw + "duplicate GPU index " + std::to_string(g.index));
    }
    if (g.memory_mib <= 0) return InvalidArgument(gw + "memory must be positive");
    if (g.model.empty()) return InvalidArgument(gw + "model must not be empty");
    const GpuSharing& s = g.sharing;
    switch (s.mode) {
      case SharingMode::kExclusive:
      case SharingMode::kShared:
        break;
      case SharingMode::kTimeSlice:
        if (s.replicas < 2 || s.replicas > 1024) {
          return InvalidArgument(gw + "timeslice replicas must be in [2, 1024], got " +
                                 std::to_string(s.replicas));
        }
        break;
      case SharingMode::kMig: {
        const MigGeometry* geo = FindMigGeometry(g.model);
        if (geo == nullptr) {
          return InvalidArgument(gw + "model " + g.model + " does not support MIG");
        }
        if (s.mig.empty()) return InvalidArgument(gw + "MIG mode needs at least one instance");
        Status st = CheckMigLayout(*geo, s.mig);
        if (!st.ok()) return InvalidArgument(gw + st.message());
        break;
      }
    }
  }
  for (const Taint& t : node.taints) {
    if (t.key.empty()) return InvalidArgument(where + "taint key must not be empty");
  }
  return Status::Ok();
}

}  // namespace tessera::core
