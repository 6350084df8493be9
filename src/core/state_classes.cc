#include "core/state_classes.h"

namespace tessera::core {

namespace {

bool SameCard(const GpuDevice& a, const GpuDevice& b) {
  return a.index == b.index && a.health == b.health && a.sharing.mode == b.sharing.mode &&
         a.sharing.rename == b.sharing.rename &&
         a.sharing.fail_requests_greater_than_one == b.sharing.fail_requests_greater_than_one &&
         a.sharing.replicas == b.sharing.replicas && a.sharing.mps == b.sharing.mps &&
         a.sharing.mig == b.sharing.mig;
}

bool SameUsage(const GpuUsage& a, const GpuUsage& b) {
  return a.memory_mib == b.memory_mib && a.milli == b.milli && a.replicas == b.replicas &&
         a.mig_used == b.mig_used && a.holders == b.holders && a.free_milli == b.free_milli &&
         a.mode == b.mode && a.healthy == b.healthy && a.model == b.model &&
         a.capacity_mib == b.capacity_mib && a.numa_node == b.numa_node &&
         a.nvlink_domain == b.nvlink_domain;
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

bool SameNodeState(const ClusterState& state, NodeId a, NodeId b) {
  const NodeRecord& ra = state.node(a);
  const NodeRecord& rb = state.node(b);
  const NodeUsage& ua = state.usage(a);
  const NodeUsage& ub = state.usage(b);
  if (ra.unschedulable != rb.unschedulable || !(ra.allocatable == rb.allocatable) ||
      state.class_pool(ra.cls) != state.class_pool(rb.cls) || ra.gpus.size() != rb.gpus.size() ||
      !(ua.used == ub.used) || ua.pods != ub.pods) {
    return false;
  }
  for (size_t g = 0; g < ra.gpus.size(); ++g) {
    // The model and memory are compared through the usage's copies (model index, capacity).
    if (!SameUsage(ua.gpus[g], ub.gpus[g]) || !SameCard(ra.gpus[g], rb.gpus[g])) return false;
  }
  return true;
}

uint64_t NodeStateHash(const ClusterState& state, NodeId id) {
  const NodeRecord& r = state.node(id);
  const NodeUsage& u = state.usage(id);
  uint64_t h = Mix(0, r.unschedulable);
  h = Mix(h, static_cast<uint64_t>(r.allocatable.cpu_milli));
  h = Mix(h, static_cast<uint64_t>(r.allocatable.memory_mib));
  h = Mix(h, state.class_pool(r.cls));
  h = Mix(h, static_cast<uint64_t>(u.used.cpu_milli));
  h = Mix(h, static_cast<uint64_t>(u.used.memory_mib));
  h = Mix(h, static_cast<uint64_t>(u.pods));
  for (const GpuUsage& g : u.gpus) {
    h = Mix(h, static_cast<uint64_t>(g.memory_mib));
    h = Mix(h, (static_cast<uint64_t>(static_cast<uint32_t>(g.milli)) << 32) |
                   (static_cast<uint64_t>(g.replicas) << 16) | g.mig_used);
    h = Mix(h, (static_cast<uint64_t>(g.model) << 32) | (static_cast<uint64_t>(g.mode) << 8) |
                   (g.healthy ? 1u : 0u));
    h = Mix(h, static_cast<uint64_t>(g.capacity_mib));
  }
  return h;
}

void StateClasses::Clear(size_t nodes) {
  class_of_.assign(nodes, kNone);
  version_.assign(nodes, 0);
  classes_.clear();
  free_.clear();
  live_.clear();
  by_hash_.clear();
}

void StateClasses::SetFirst(const ClusterState& state, size_t at) {
  Live& live = live_[at];
  live.first = NodeId(*classes_[live.slot].members.begin());
  live.cls = state.node(live.first).cls;
  live.version = state.usage(live.first).version;
}

void StateClasses::Leave(const ClusterState& state, uint32_t i) {
  const uint32_t c = class_of_[i];
  if (c == kNone) return;
  class_of_[i] = kNone;
  Class& cls = classes_[c];
  cls.members.erase(i);
  const size_t at = cls.live_at;
  if (!cls.members.empty()) {
    --live_[at].size;
    if (live_[at].first.value() == i) SetFirst(state, at);
    return;
  }
  // The class emptied: drop it from the live list and the hash index, and reuse its slot.
  live_[at] = live_.back();
  classes_[live_[at].slot].live_at = at;
  live_.pop_back();
  for (auto [it, end] = by_hash_.equal_range(cls.hash); it != end; ++it) {
    if (it->second == c) {
      by_hash_.erase(it);
      break;
    }
  }
  free_.push_back(c);
}

void StateClasses::Join(const ClusterState& state, uint32_t i) {
  const NodeId id(i);
  const uint64_t h = NodeStateHash(state, id);
  version_[i] = state.usage(id).version;
  for (auto [it, end] = by_hash_.equal_range(h); it != end; ++it) {
    Class& cls = classes_[it->second];
    if (SameNodeState(state, id, NodeId(*cls.members.begin()))) {
      cls.members.insert(i);
      class_of_[i] = it->second;
      ++live_[cls.live_at].size;
      if (i < live_[cls.live_at].first.value()) SetFirst(state, cls.live_at);
      return;
    }
  }
  uint32_t c;
  if (free_.empty()) {
    c = static_cast<uint32_t>(classes_.size());
    classes_.emplace_back();
  } else {
    c = free_.back();
    free_.pop_back();
  }
  Class& cls = classes_[c];
  cls.hash = h;
  cls.members = {i};
  cls.live_at = live_.size();
  const NodeUsage& u = state.usage(id);
  live_.push_back({id, 1, state.node(id).cls, u.version, u.gpu_free_milli, u.model_mask,
                   u.max_share_milli, u.unheld_cards, state.node(id).sharing_modes, c});
  by_hash_.emplace(h, c);
  class_of_[i] = c;
}

void StateClasses::Sync(const ClusterState& state) {
  const size_t n = state.size();
  changed_.clear();
  if (!synced_ || state.shape_version() != shape_version_ || class_of_.size() != n) {
    Clear(n);
    for (uint32_t i = 0; i < n; ++i) changed_.push_back(NodeId(i));
  } else if (!state.ChangedSince(usage_version_, changed_)) {
    changed_.clear();
    for (uint32_t i = 0; i < n; ++i) {
      if (state.usage(NodeId(i)).version != version_[i]) changed_.push_back(NodeId(i));
    }
  }
  // Every changed node leaves before any joins: a class is matched against its first member,
  // which must already be in its current state.
  for (NodeId id : changed_) Leave(state, id.value());
  for (NodeId id : changed_) {
    if (class_of_[id.value()] == kNone) Join(state, id.value());
  }
  synced_ = true;
  shape_version_ = state.shape_version();
  usage_version_ = state.last_usage_version();
}

}  // namespace tessera::core
