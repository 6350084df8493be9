#include "core/cluster_state.h"

#include <algorithm>
#include <atomic>

namespace tessera::core {

std::string_view DeviceKindName(DeviceKind k) {
  switch (k) {
    case DeviceKind::kWhole:
      return "whole";
    case DeviceKind::kShare:
      return "share";
    case DeviceKind::kMigInstance:
      return "mig";
    case DeviceKind::kReplica:
      return "replica";
  }
  return "?";
}

namespace {

// Versions of node states and cluster shapes; 0 is never handed out.
uint64_t NextVersion() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t TakenMilli(const GpuDevice& g, const GpuUsage& u) {
  switch (g.sharing.mode) {
    case SharingMode::kExclusive:
      return u.holders > 0 ? kMilliPerGpu : 0;
    case SharingMode::kShared: {
      int64_t by_mem = g.memory_mib > 0 ? CeilDiv(u.memory_mib * kMilliPerGpu, g.memory_mib) : 0;
      return std::min<int64_t>(kMilliPerGpu, std::max<int64_t>(u.milli, by_mem));
    }
    case SharingMode::kTimeSlice:
      return g.sharing.replicas == 0
                 ? 0
                 : std::min<int64_t>(kMilliPerGpu,
                                     CeilDiv(u.replicas * kMilliPerGpu, g.sharing.replicas));
    case SharingMode::kMig: {
      const MigGeometry* geo = FindMigGeometry(g.model);
      if (geo == nullptr) return 0;
      int64_t sum = 0;
      for (size_t i = 0; i < g.sharing.mig.size(); ++i) {
        if (u.mig_used & (1u << i)) {
          sum += MigInstanceMilli(*geo, geo->profiles[g.sharing.mig[i].profile]);
        }
      }
      return std::min<int64_t>(kMilliPerGpu, sum);
    }
  }
  return 0;
}

// `skip_hostname`: without the kubernetes.io/hostname label (the key of the class's pool).
std::string ClassKey(const Labels& labels, const std::vector<Taint>& taints,
                     bool skip_hostname = false) {
  std::string k;
  for (const auto& [key, value] : labels) {
    if (skip_hostname && key == kHostnameLabel) continue;
    k.append(key).push_back('\x01');
    k.append(value).push_back('\x02');
  }
  k.push_back('\x03');
  for (const Taint& t : taints) {
    k.append(t.key).push_back('\x01');
    k.append(t.value).push_back('\x01');
    k.push_back(static_cast<char>('0' + static_cast<int>(t.effect)));
    k.push_back('\x02');
  }
  return k;
}

}  // namespace

NodeClassId ClusterState::InternClass(const Labels& labels, const std::vector<Taint>& taints) {
  std::string key = ClassKey(labels, taints);
  // `labels` and `taints` may be those of a class of this state (a change to one of the two):
  // read them before the class vectors grow.
  std::string pool_key = ClassKey(labels, taints, /*skip_hostname=*/true);
  Topology& t = MutableTopology();
  auto it = t.class_index.find(key);
  if (it != t.class_index.end()) return it->second;
  NodeClassId id(static_cast<uint32_t>(t.class_labels.size()));
  for (const Taint& t : taints)
    any_prefer_no_schedule_ |= t.effect == TaintEffect::kPreferNoSchedule;
  t.class_labels.push_back(labels);
  t.class_taints.push_back(taints);
  t.class_index.emplace(std::move(key), id);
  const auto pool =
      t.pool_index.emplace(std::move(pool_key), static_cast<uint32_t>(t.pool_index.size()));
  t.class_pool.push_back(pool.first->second);
  return id;
}

ClusterState::Topology& ClusterState::MutableTopology() {
  if (topo_.use_count() > 1) topo_ = std::make_shared<Topology>(*topo_);
  shape_version_ = NextVersion();
  return *topo_;
}

Result<NodeId> ClusterState::AddNode(NodeSpec spec) {
  std::sort(spec.gpus.begin(), spec.gpus.end(),
            [](const GpuDevice& a, const GpuDevice& b) { return a.index < b.index; });
  if (Status s = ValidateNodeSpec(spec); !s.ok()) return s;
  Topology& t = MutableTopology();
  if (t.by_name.count(spec.name)) return AlreadyExists("node " + spec.name + " already exists");
  NodeId id(static_cast<uint32_t>(t.nodes.size()));
  NodeRecord rec;
  rec.name = std::move(spec.name);
  rec.unschedulable = spec.unschedulable;
  rec.allocatable = spec.allocatable;
  rec.gpus = std::move(spec.gpus);
  rec.gpus.shrink_to_fit();
  rec.cls = InternClass(spec.labels, spec.taints);
  rec.gpu_capacity_milli = kMilliPerGpu * static_cast<int64_t>(rec.gpus.size());
  for (const GpuDevice& g : rec.gpus) rec.sharing_modes |= 1u << static_cast<int>(g.sharing.mode);
  total_gpu_milli_ += rec.gpu_capacity_milli;
  max_node_cpu_milli_ = std::max(max_node_cpu_milli_, rec.allocatable.cpu_milli);
  max_node_gpu_milli_ = std::max(max_node_gpu_milli_, rec.gpu_capacity_milli);
  NodeUsage usage;
  usage.cls = rec.cls;
  usage.gpus.resize(rec.gpus.size());
  usage.gpus.shrink_to_fit();
  for (size_t g = 0; g < rec.gpus.size(); ++g) {
    const auto at = std::find_if(t.models.begin(), t.models.end(), [&](const std::string& m) {
      return SameModel(m, rec.gpus[g].model);
    });
    const auto model = static_cast<size_t>(at - t.models.begin());
    if (at == t.models.end()) t.models.push_back(rec.gpus[g].model);
    usage.gpus[g].model = static_cast<uint16_t>(model);
    usage.model_mask |= uint64_t{1} << std::min<size_t>(model, 63);
    usage.gpus[g].mode = rec.gpus[g].sharing.mode;
    usage.gpus[g].capacity_mib = static_cast<int32_t>(rec.gpus[g].memory_mib);
    usage.gpus[g].numa_node = rec.gpus[g].numa_node;
    usage.gpus[g].nvlink_domain = rec.gpus[g].nvlink_domain;
  }
  t.by_name.emplace(rec.name, id);
  t.nodes.push_back(std::move(rec));
  usage_.push_back(std::move(usage));
  RefreshFree(id);
  return id;
}

uint64_t ClusterState::AcceptedModelMask(std::span<const std::string> accepted) const {
  if (accepted.empty()) return ~uint64_t{0};
  uint64_t mask = uint64_t{1} << 63;  // models past the 63rd share a bit: never passed over
  const std::vector<std::string>& models = topo_->models;
  for (size_t i = 0; i < models.size() && i < 63; ++i) {
    if (std::any_of(accepted.begin(), accepted.end(),
                    [&](const std::string& a) { return SameModel(a, models[i]); })) {
      mask |= uint64_t{1} << i;
    }
  }
  return mask;
}

Result<NodeId> ClusterState::FindNode(std::string_view name) const {
  auto it = topo_->by_name.find(std::string(name));
  if (it == topo_->by_name.end()) return NotFound("node " + std::string(name) + " not found");
  return it->second;
}

NodeSpec ClusterState::ExportSpec(NodeId id) const {
  const NodeRecord& n = node(id);
  NodeSpec s;
  s.name = n.name;
  s.labels = labels(id);
  s.taints = taints(id);
  s.unschedulable = n.unschedulable;
  s.allocatable = n.allocatable;
  s.gpus = n.gpus;
  return s;
}

Status ClusterState::SetUnschedulable(NodeId id, bool unschedulable) {
  if (id.value() >= size()) return NotFound("no such node");
  MutableTopology().nodes[id.value()].unschedulable = unschedulable;
  Touch(id);
  return Status::Ok();
}

Status ClusterState::SetGpuHealth(NodeId id, int gpu, GpuHealth health) {
  if (id.value() >= size()) return NotFound("no such node");
  NodeRecord& n = MutableTopology().nodes[id.value()];
  if (gpu < 0 || gpu >= static_cast<int>(n.gpus.size())) {
    return NotFound("node " + n.name + " has no GPU at position " + std::to_string(gpu));
  }
  n.gpus[gpu].health = health;
  RefreshFree(id);
  return Status::Ok();
}

Status ClusterState::SetLabels(NodeId id, Labels labels) {
  if (id.value() >= size()) return NotFound("no such node");
  const NodeClassId cls = InternClass(labels, taints(id));
  MutableTopology().nodes[id.value()].cls = cls;
  usage_[id.value()].cls = cls;
  Touch(id);
  return Status::Ok();
}

Status ClusterState::SetTaints(NodeId id, std::vector<Taint> taints) {
  if (id.value() >= size()) return NotFound("no such node");
  for (const Taint& t : taints) {
    if (t.key.empty()) return InvalidArgument("taint key must not be empty");
  }
  const NodeClassId cls = InternClass(labels(id), taints);
  MutableTopology().nodes[id.value()].cls = cls;
  usage_[id.value()].cls = cls;
  Touch(id);
  return Status::Ok();
}

int64_t ClusterState::GpuTakenMilli(NodeId id, int gpu) const {
  return TakenMilli(node(id).gpus[gpu], usage(id).gpus[gpu]);
}

int64_t ClusterState::GpuFreeMilli(NodeId id, int gpu) const {
  return usage(id).gpus[gpu].free_milli;
}

int64_t ClusterState::DeviceGpuMilli(NodeId id, const DeviceAssignment& d) const {
  const GpuDevice& g = node(id).gpus[d.gpu];
  switch (d.kind) {
    case DeviceKind::kWhole:
      return kMilliPerGpu;
    case DeviceKind::kShare: {
      const int64_t by_mem =
          g.memory_mib > 0 ? CeilDiv(d.memory_mib * kMilliPerGpu, g.memory_mib) : 0;
      return std::min<int64_t>(kMilliPerGpu, std::max<int64_t>(d.milli, by_mem));
    }
    case DeviceKind::kMigInstance: {
      const MigGeometry* geo = FindMigGeometry(g.model);
      if (geo == nullptr || d.mig_instance >= g.sharing.mig.size()) return 0;
      return MigInstanceMilli(*geo, geo->profiles[g.sharing.mig[d.mig_instance].profile]);
    }
    case DeviceKind::kReplica:
      return g.sharing.replicas == 0
                 ? 0
                 : std::min<int64_t>(kMilliPerGpu,
                                     CeilDiv(d.replicas * kMilliPerGpu, g.sharing.replicas));
  }
  return 0;
}

Status ClusterState::CheckFits(const NodeRecord& n, const NodeUsage& u, const Placement& p) const {
  const std::string where = "node " + n.name + ": ";
  if (!(u.used + p.resources).FitsIn(n.allocatable)) {
    return ResourceExhausted(where + "insufficient cpu or memory");
  }
  // Devices of one placement may share a card (replicas, MIG instances): check cumulatively.
  std::vector<GpuUsage> after = u.gpus;
  for (const DeviceAssignment& d : p.devices) {
    if (d.gpu >= n.gpus.size()) {
      return InvalidArgument(where + "no GPU at position " + std::to_string(d.gpu));
    }
    const GpuDevice& g = n.gpus[d.gpu];
    GpuUsage& a = after[d.gpu];
    const std::string gw = where + "GPU " + std::to_string(g.index) + ": ";
    const SharingMode mode = g.sharing.mode;
    switch (d.kind) {
      case DeviceKind::kWhole:
        if (mode != SharingMode::kExclusive && mode != SharingMode::kShared) {
          return FailedPrecondition(gw + "a " + std::string(SharingModeName(mode)) +
                                    " GPU cannot be held whole");
        }
        if (a.holders > 0) return ResourceExhausted(gw + "already in use");
        a.milli = kMilliPerGpu;
        a.memory_mib = g.memory_mib;
        break;
      case DeviceKind::kShare:
        if (mode != SharingMode::kShared) {
          return FailedPrecondition(gw + "a " + std::string(SharingModeName(mode)) +
                                    " GPU cannot hold a fractional share");
        }
        if (d.milli < 0 || d.memory_mib < 0 || a.milli + d.milli > kMilliPerGpu ||
            a.memory_mib + d.memory_mib > g.memory_mib) {
          return ResourceExhausted(gw + "share does not fit");
        }
        a.milli += d.milli;
        a.memory_mib += d.memory_mib;
        break;
      case DeviceKind::kMigInstance:
        if (mode != SharingMode::kMig || d.mig_instance >= g.sharing.mig.size()) {
          return FailedPrecondition(gw + "no MIG instance #" + std::to_string(d.mig_instance));
        }
        if (a.mig_used & (1u << d.mig_instance)) {
          return ResourceExhausted(gw + "MIG instance #" + std::to_string(d.mig_instance) +
                                   " already in use");
        }
        a.mig_used |= static_cast<uint16_t>(1u << d.mig_instance);
        break;
      case DeviceKind::kReplica:
        if (mode != SharingMode::kTimeSlice) {
          return FailedPrecondition(gw + "not a time-sliced GPU");
        }
        if (d.replicas == 0 || a.replicas + d.replicas > g.sharing.replicas) {
          return ResourceExhausted(gw + "not enough free replicas");
        }
        a.replicas = static_cast<uint16_t>(a.replicas + d.replicas);
        break;
    }
    ++a.holders;
  }
  return Status::Ok();
}

void ClusterState::Apply(NodeId id, const Placement& p, int sign) {
  const NodeRecord& n = topo_->nodes[id.value()];
  NodeUsage& u = usage_[id.value()];
  uint32_t touched = 0;
  for (const DeviceAssignment& d : p.devices) touched |= 1u << d.gpu;
  auto taken = [&] {
    int64_t sum = 0;
    for (size_t i = 0; i < n.gpus.size(); ++i) {
      if (touched & (1u << i)) sum += TakenMilli(n.gpus[i], u.gpus[i]);
    }
    return sum;
  };
  const int64_t before = taken();
  if (sign > 0) {
    u.used += p.resources;
  } else {
    u.used -= p.resources;
  }
  u.pods += sign;
  for (const DeviceAssignment& d : p.devices) {
    const GpuDevice& g = n.gpus[d.gpu];
    GpuUsage& a = u.gpus[d.gpu];
    switch (d.kind) {
      case DeviceKind::kWhole:
        a.milli += sign * static_cast<int32_t>(kMilliPerGpu);
        a.memory_mib += sign * g.memory_mib;
        break;
      case DeviceKind::kShare:
        a.milli += sign * d.milli;
        a.memory_mib += sign * d.memory_mib;
        break;
      case DeviceKind::kMigInstance:
        if (sign > 0) {
          a.mig_used |= static_cast<uint16_t>(1u << d.mig_instance);
        } else {
          a.mig_used &= static_cast<uint16_t>(~(1u << d.mig_instance));
        }
        break;
      case DeviceKind::kReplica:
        a.replicas = static_cast<uint16_t>(a.replicas + sign * d.replicas);
        break;
    }
    a.holders = static_cast<uint16_t>(a.holders + sign);
  }
  allocated_gpu_milli_ += taken() - before;
  RefreshFree(id);
}

void ClusterState::RefreshFree(NodeId id) {
  const NodeRecord& n = topo_->nodes[id.value()];
  NodeUsage& u = usage_[id.value()];
  int64_t free = 0;
  int16_t max_share = 0;
  uint8_t unheld = 0;
  for (size_t g = 0; g < n.gpus.size(); ++g) {
    GpuUsage& a = u.gpus[g];
    a.healthy = n.gpus[g].health == GpuHealth::kHealthy;
    a.free_milli = static_cast<int16_t>(a.healthy ? kMilliPerGpu - TakenMilli(n.gpus[g], a) : 0);
    free += a.free_milli;
    if (!a.healthy) continue;
    if (a.mode == SharingMode::kShared) {
      max_share = std::max(max_share, static_cast<int16_t>(kMilliPerGpu - a.milli));
    }
    if ((a.mode == SharingMode::kShared || a.mode == SharingMode::kExclusive) && a.holders == 0) {
      ++unheld;
    }
  }
  u.gpu_free_milli = free;
  u.max_share_milli = max_share;
  u.unheld_cards = unheld;
  Touch(id);
}

void ClusterState::Touch(NodeId id) {
  previous_usage_version_ = last_usage_version_;
  last_usage_version_ = NextVersion();
  usage_[id.value()].version = last_usage_version_;
  last_changed_node_ = id;
  if (log_size_ == kChangeLog) log_floor_ = log_[log_head_].version;  // the oldest falls out
  log_[log_head_] = {last_usage_version_, id};
  log_head_ = (log_head_ + 1) % kChangeLog;
  log_size_ = std::min(log_size_ + 1, kChangeLog);
}

bool ClusterState::ChangedSince(uint64_t version, std::vector<NodeId>& nodes) const {
  if (version == last_usage_version_) return true;
  // Walk from the oldest logged change to the newest: the changes after `version` follow the
  // one whose predecessor is `version`.
  uint64_t before = log_floor_;
  for (size_t k = 0; k < log_size_; ++k) {
    const Change& c = log_[(log_head_ + kChangeLog - log_size_ + k) % kChangeLog];
    if (before == version) {
      for (size_t j = k; j < log_size_; ++j) {
        nodes.push_back(log_[(log_head_ + kChangeLog - log_size_ + j) % kChangeLog].node);
      }
      return true;
    }
    before = c.version;
  }
  return false;
}

Status ClusterState::Allocate(const Placement& p) {
  if (!p.node.valid() || p.node.value() >= size()) {
    return NotFound("placement names no known node");
  }
  if (Status s = CheckFits(node(p.node), usage(p.node), p); !s.ok()) return s;
  Apply(p.node, p, +1);
  return Status::Ok();
}

Status ClusterState::Release(const Placement& p) {
  if (!p.node.valid() || p.node.value() >= size()) {
    return NotFound("placement names no known node");
  }
  const NodeRecord& n = node(p.node);
  const NodeUsage& u = usage(p.node);
  if (!p.resources.FitsIn(u.used)) {
    return FailedPrecondition("node " + n.name + ": releasing more cpu/memory than is held");
  }
  for (const DeviceAssignment& d : p.devices) {
    if (d.gpu >= n.gpus.size() || u.gpus[d.gpu].holders == 0) {
      return FailedPrecondition("node " + n.name + ": releasing a device that is not held");
    }
  }
  Apply(p.node, p, -1);
  return Status::Ok();
}

GpuFragmentation FragmentationOf(const ClusterState& state) {
  GpuFragmentation f;
  for (size_t n = 0; n < state.size(); ++n) {
    const NodeId id(static_cast<uint32_t>(n));
    for (size_t g = 0; g < state.node(id).gpus.size(); ++g) {
      const int64_t free = state.GpuFreeMilli(id, static_cast<int>(g));
      f.free_milli += free;
      if (free > 0 && free < kMilliPerGpu) f.fragmented_milli += free;
    }
  }
  return f;
}

}  // namespace tessera::core
