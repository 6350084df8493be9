// Nodes grouped by identical state, so that a placement that scores every node costs in
// proportion to the number of distinct node states, not of nodes.
//
// Two nodes are in one state class when everything a node-local filter, the device step or a
// node-local score reads is equal: the record (cordon, allocatable, every card's index, model,
// memory, topology, health and sharing set-up; not the name or the card UUIDs), the label/taint
// pool (ClusterState::class_pool: the class but for the kubernetes.io/hostname label) and the
// usage (CPU and memory held, pods, and per card what is held). Such nodes pass the same filters
// with the same reasons, get the same candidates in the same order and the same raw scores; the
// scheduler breaks ties by node id, so the lowest id of a class stands for all of it.
//
// The classes follow a ClusterState through its change log (ClusterState::ChangedSince): a
// placement that changes one node moves that node alone.
#ifndef TESSERA_CORE_STATE_CLASSES_H_
#define TESSERA_CORE_STATE_CLASSES_H_

#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/cluster_state.h"

namespace tessera::core {

// True when nodes `a` and `b` of `state` are in one state class (see above).
bool SameNodeState(const ClusterState& state, NodeId a, NodeId b);
// A hash of what SameNodeState compares (equal states hash equally).
uint64_t NodeStateHash(const ClusterState& state, NodeId id);

class StateClasses {
 public:
  // Brings the classes up to date with `state`: the nodes changed since the last call when the
  // state's change log reaches back to it, else every node whose version differs from the one
  // last seen; everything anew when the cluster's shape changed.
  void Sync(const ClusterState& state);

  // A class with at least one node, with what a scan reads to pass over its nodes (the same
  // for every node of the class), in one contiguous array so that a scan over the classes
  // reads no node.
  struct Live {
    NodeId first;  // the lowest node id of the class
    int32_t size = 0;
    NodeClassId cls;       // the label/taint class of `first`
    uint64_t version = 0;  // the usage version of `first` (NodeUsage::version)
    int64_t gpu_free_milli = 0;
    uint64_t model_mask = 0;
    int16_t max_share_milli = 0;
    uint8_t unheld_cards = 0;
    uint8_t sharing_modes = 0;  // NodeRecord::sharing_modes
    uint32_t slot = 0;          // the class's slot (internal)
  };
  // The classes with at least one node, in no particular order.
  std::span<const Live> live() const { return live_; }

 private:
  struct Class {
    uint64_t hash = 0;
    std::set<uint32_t> members;
    size_t live_at = 0;  // position in live_
  };
  // Sets live_[at]'s first node (and its label class and version) from the class's members.
  void SetFirst(const ClusterState& state, size_t at);
  static constexpr uint32_t kNone = ~uint32_t{0};

  void Clear(size_t nodes);
  // Takes node `i` out of its class (dropping the class when it empties).
  void Leave(const ClusterState& state, uint32_t i);
  // Puts node `i` into the class of its state in `state`, making one when there is none.
  void Join(const ClusterState& state, uint32_t i);

  bool synced_ = false;
  uint64_t shape_version_ = 0;
  uint64_t usage_version_ = 0;
  std::vector<uint32_t> class_of_;  // per node
  std::vector<uint64_t> version_;   // per node: the usage version its class reflects
  std::vector<Class> classes_;
  std::vector<uint32_t> free_;  // classes_ slots not in use
  std::vector<Live> live_;
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  std::vector<NodeId> changed_;  // scratch
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_STATE_CLASSES_H_
