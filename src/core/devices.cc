#include "core/devices.h"

#include <algorithm>
#include <array>

namespace tessera::core {

namespace {

constexpr std::string_view kNoGpus = "no GPUs";
constexpr std::string_view kUnhealthy = "unhealthy or cordoned GPUs";
constexpr std::string_view kInsufficientGpus = "insufficient free GPUs";
constexpr std::string_view kNoSharing = "no GPU allows sharing";
constexpr std::string_view kInsufficientGpuMemory = "insufficient GPU memory";
constexpr std::string_view kInsufficientGpuCompute = "insufficient GPU compute";
constexpr std::string_view kNoTimeSlice = "no time-sliced GPU";
constexpr std::string_view kInsufficientReplicas = "insufficient time-slice replicas";
// More whole GPUs than the node has of the model asked, free or not: waiting cannot help (as
// kube-scheduler says of a request above a node's allocatable).
constexpr std::string_view kTooFewGpus = "node has fewer GPUs than the pod asks: it can never fit";
constexpr std::string_view kOneReplicaOnly = "time-slicing allows one replica per request";

bool ModelAllowed(const PodSpec& pod, const std::string& model) {
  if (pod.gpu_models.empty()) return true;
  return std::any_of(pod.gpu_models.begin(), pod.gpu_models.end(),
                     [&](const std::string& m) { return SameModel(m, model); });
}

// Why no GPU of the node is eligible at all (model mismatch or health), or empty.
std::string_view IneligibleReason(const DeviceRequest& req, const NodeRecord& node) {
  if (node.gpus.empty()) return kNoGpus;
  bool model_ok = false;
  for (const GpuDevice& g : node.gpus) model_ok |= ModelAllowed(*req.pod, g.model);
  return model_ok ? kUnhealthy : std::string_view(req.model_reason);
}

bool Free(const GpuUsage& u) { return u.holders == 0; }

// GPU positions of one node; never more than kMaxGpusPerNode, so no heap. Only the first n are
// set: the rest is left unwritten, as this is built for every node examined.
struct GpuList {
  std::array<int, kMaxGpusPerNode> v;
  int n = 0;
  void push_back(int g) { v[n++] = g; }
  int size() const { return n; }
  bool empty() const { return n == 0; }
  int operator[](int i) const { return v[i]; }
  const int* begin() const { return v.data(); }
  const int* end() const { return v.data() + n; }
  int* begin() { return v.data(); }
  int* end() { return v.data() + n; }
};

using CardState = std::pair<int64_t, int64_t>;

// One single-card candidate per distinct card state (`state_of(g)`), lowest position first:
// cards in equal states give equal outcomes, so scoring one of them is enough.
template <typename StateOf>
void ProposeOnePerCardState(const GpuList& cards, const Candidate& base, DeviceKind kind,
                            uint16_t replicas, std::vector<Candidate>& out, StateOf state_of) {
  std::array<CardState, kMaxGpusPerNode> seen{};
  int nseen = 0;
  for (int g : cards) {
    const CardState key = state_of(g);
    if (std::find(seen.begin(), seen.begin() + nseen, key) != seen.begin() + nseen) continue;
    seen[nseen++] = key;
    Candidate c = base;
    c.kind = kind;
    c.n = 1;
    c.picks[0] = {static_cast<uint8_t>(g), 0, replicas};
    out.push_back(c);
  }
}

// Whole cards: one candidate per NVLink domain (else NUMA node) that can hold all of them (inside
// a domain, one per NUMA node of it that can), else the lowest free indices. For one card, one
// candidate per (domain, NUMA) group.
void ProposeWhole(const NodeUsage& node, const GpuList& free, int count, Candidate base,
                  std::vector<Candidate>& out) {
  auto emit = [&](const GpuList& gpus) {
    Candidate c = base;
    c.kind = DeviceKind::kWhole;
    c.n = static_cast<uint8_t>(count);
    for (int i = 0; i < count; ++i) c.picks[i] = {static_cast<uint8_t>(gpus[i]), 0, 0};
    out.push_back(c);
  };
  const size_t before = out.size();
  for (int pass = 0; pass < 2 && out.size() == before; ++pass) {
    // pass 0 groups by NVLink domain, pass 1 by NUMA node.
    std::array<int16_t, kMaxGpusPerNode> seen{};
    int nseen = 0;
    for (int g : free) {
      const GpuUsage& d = node.gpus[g];
      int16_t key = pass == 0 ? d.nvlink_domain : d.numa_node;
      int16_t other = pass == 0 ? d.numa_node : d.nvlink_domain;
      if (key < 0) continue;
      int16_t combo = count == 1 ? static_cast<int16_t>(key * 64 + (other + 1)) : key;
      if (std::find(seen.begin(), seen.begin() + nseen, combo) != seen.begin() + nseen) continue;
      seen[nseen++] = combo;
      GpuList group;
      for (int h : free) {
        const GpuUsage& e = node.gpus[h];
        int16_t k2 = pass == 0 ? e.nvlink_domain : e.numa_node;
        int16_t o2 = pass == 0 ? e.numa_node : e.nvlink_domain;
        if (k2 == key && (count > 1 || o2 == other)) group.push_back(h);
      }
      if (group.size() < count) continue;
      // Inside an NVLink domain, cards of one NUMA node when that many are free there.
      bool one_numa = false;
      if (pass == 0 && count > 1) {
        std::array<int16_t, kMaxGpusPerNode> numas{};
        int nnumas = 0;
        for (int h : group) {
          const int16_t numa = node.gpus[h].numa_node;
          if (numa < 0 ||
              std::find(numas.begin(), numas.begin() + nnumas, numa) != numas.begin() + nnumas) {
            continue;
          }
          numas[nnumas++] = numa;
          GpuList local;
          for (int k : group) {
            if (node.gpus[k].numa_node == numa) local.push_back(k);
          }
          if (local.size() >= count) {
            emit(local);
            one_numa = true;
          }
        }
      }
      if (!one_numa) emit(group);
    }
  }
  if (out.size() == before) emit(free);
}

// What every request kind reads of one node: its record, usage and eligible cards.
struct NodeView {
  const DeviceRequest& req;
  const ClusterState& state;
  NodeId id;
  const NodeRecord& node;
  const NodeUsage& usage;
  int ngpus;
  bool any_model;
  const GpuList& eligible;
  const Candidate& base;
};

// All the node's cards of the models `pod` accepts, healthy or not, and time-sliced ones as
// their replicas: a whole-GPU request for more never fits there.
int WholeCapacity(const PodSpec& pod, const NodeRecord& node, const NodeUsage& usage) {
  const bool any_model = pod.gpu_models.empty();
  int capacity = 0;
  for (size_t g = 0; g < node.gpus.size(); ++g) {
    if (!any_model && !ModelAllowed(pod, node.gpus[g].model)) continue;
    const GpuSharing& s = node.gpus[g].sharing;
    capacity += usage.gpus[g].mode == SharingMode::kTimeSlice && !s.rename &&
                        !s.fail_requests_greater_than_one
                    ? s.replicas
                    : 1;
  }
  return capacity;
}

// Whole cards: free exclusive or shared cards, else replicas of time-sliced cards advertised as
// plain GPUs.
std::string_view ProposeWholeCards(const NodeView& v, const GpuRequest& gr,
                                   std::vector<Candidate>& out) {
  if (WholeCapacity(*v.req.pod, v.node, v.usage) < gr.count) return kTooFewGpus;
  GpuList free;
  GpuList ts;  // time-sliced cards advertised as plain nvidia.com/gpu
  for (int g : v.eligible) {
    const SharingMode mode = v.usage.gpus[g].mode;
    if (mode == SharingMode::kExclusive || mode == SharingMode::kShared) {
      if (Free(v.usage.gpus[g])) free.push_back(g);
      continue;
    }
    if (mode != SharingMode::kTimeSlice) continue;
    const GpuSharing& s = v.node.gpus[g].sharing;
    if (!s.rename && v.usage.gpus[g].replicas < s.replicas &&
        !(s.fail_requests_greater_than_one && gr.count > 1)) {
      ts.push_back(g);
    }
  }
  if (free.size() >= gr.count) {
    ProposeWhole(v.usage, free, gr.count, v.base, out);
    return {};
  }
  if (!ts.empty()) {
    // As the device plugin does: units are replicas, spread over distinct cards first.
    Candidate c = v.base;
    c.kind = DeviceKind::kReplica;
    int left = gr.count;
    std::array<int, kMaxGpusPerNode> room{};
    for (int g : ts) room[g] = v.node.gpus[g].sharing.replicas - v.usage.gpus[g].replicas;
    std::array<uint16_t, kMaxGpusPerNode> take{};
    while (left > 0) {
      bool progressed = false;
      for (int g : ts) {
        if (left > 0 && take[g] < room[g]) {
          ++take[g];
          --left;
          progressed = true;
        }
      }
      if (!progressed) break;
    }
    if (left == 0) {
      for (int g : ts) {
        if (take[g] > 0) c.picks[c.n++] = {static_cast<uint8_t>(g), 0, take[g]};
      }
      out.push_back(c);
      return {};
    }
  }
  return kInsufficientGpus;
}

// Fractional shares, each on a distinct shared card.
std::string_view ProposeShares(const NodeView& v, const GpuRequest& gr,
                               std::vector<Candidate>& out) {
  bool any_shared = false;
  bool any_memory = false;
  GpuList fit;
  for (int g : v.eligible) {
    const GpuUsage& u = v.usage.gpus[g];
    if (u.mode != SharingMode::kShared) continue;
    any_shared = true;
    const bool mem_ok = u.memory_mib + ShareMemoryMib(gr, u.capacity_mib) <= u.capacity_mib;
    any_memory |= mem_ok;
    if (mem_ok && u.milli + gr.milli <= kMilliPerGpu) fit.push_back(g);
  }
  if (!any_shared) return kNoSharing;
  if (fit.size() < gr.count) {
    return any_memory ? kInsufficientGpuCompute : kInsufficientGpuMemory;
  }
  if (gr.count == 1) {
    ProposeOnePerCardState(fit, v.base, DeviceKind::kShare, 0, out, [&](int g) {
      const GpuUsage& u = v.usage.gpus[g];
      return CardState{u.milli, u.memory_mib * 65536 + u.capacity_mib};
    });
  } else {
    // Several shares, each on a distinct card: the tightest cards first (best fit).
    std::stable_sort(fit.begin(), fit.end(), [&](int a, int b) {
      return v.state.GpuFreeMilli(v.id, a) < v.state.GpuFreeMilli(v.id, b);
    });
    Candidate c = v.base;
    c.kind = DeviceKind::kShare;
    c.n = static_cast<uint8_t>(gr.count);
    for (int i = 0; i < gr.count; ++i) c.picks[i] = {static_cast<uint8_t>(fit[i]), 0, 0};
    std::sort(c.picks.begin(), c.picks.begin() + c.n,
              [](const DevicePick& a, const DevicePick& b) { return a.gpu < b.gpu; });
    out.push_back(c);
  }
  return {};
}

// MIG instances of the profile asked.
std::string_view ProposeMigInstances(const NodeView& v, const GpuRequest& gr,
                                     std::vector<Candidate>& out) {
  bool any_profile = false;
  std::array<DevicePick, kMaxGpusPerNode * 8> free;  // the first nfree are set
  int nfree = 0;
  for (int g : v.eligible) {
    if (v.usage.gpus[g].mode != SharingMode::kMig) continue;
    const GpuDevice& d = v.node.gpus[g];
    const MigGeometry* geo = FindMigGeometry(d.model);
    if (geo == nullptr) continue;
    int prof = geo->FindProfile(gr.mig_profile);
    if (prof < 0) continue;
    for (size_t i = 0; i < d.sharing.mig.size(); ++i) {
      if (d.sharing.mig[i].profile != prof) continue;
      any_profile = true;
      if (!(v.usage.gpus[g].mig_used & (1u << i))) {
        free[nfree++] = {static_cast<uint8_t>(g), static_cast<uint8_t>(i), 0};
      }
    }
  }
  if (!any_profile) return v.req.mig_missing;
  if (nfree < gr.count) return v.req.mig_busy;
  if (gr.count == 1) {
    int last = -1;
    for (int k = 0; k < nfree; ++k) {
      const DevicePick& p = free[k];
      if (p.gpu == last) continue;  // the first free instance of each card
      last = p.gpu;
      Candidate c = v.base;
      c.kind = DeviceKind::kMigInstance;
      c.n = 1;
      c.picks[0] = p;
      out.push_back(c);
    }
  } else {
    Candidate c = v.base;
    c.kind = DeviceKind::kMigInstance;
    c.n = static_cast<uint8_t>(gr.count);
    std::copy(free.begin(), free.begin() + gr.count, c.picks.begin());
    out.push_back(c);
  }
  return {};
}

// Time-slice replicas.
std::string_view ProposeReplicas(const NodeView& v, const GpuRequest& gr,
                                 std::vector<Candidate>& out) {
  GpuList ts;
  bool any_ts = false;
  bool one_only = false;
  for (int g : v.eligible) {
    const GpuSharing& s = v.node.gpus[g].sharing;
    if (s.mode != SharingMode::kTimeSlice) continue;
    any_ts = true;
    if (s.fail_requests_greater_than_one && gr.count > 1) {
      one_only = true;
      continue;
    }
    if (v.usage.gpus[g].replicas < s.replicas) ts.push_back(g);
  }
  if (!any_ts) return kNoTimeSlice;
  if (ts.empty() && one_only) return kOneReplicaOnly;
  int room = 0;
  for (int g : ts) room += v.node.gpus[g].sharing.replicas - v.usage.gpus[g].replicas;
  if (room < gr.count) return kInsufficientReplicas;
  if (gr.count == 1) {
    ProposeOnePerCardState(ts, v.base, DeviceKind::kReplica, 1, out, [&](int g) {
      return CardState{v.usage.gpus[g].replicas, v.node.gpus[g].sharing.replicas};
    });
  } else {
    // Replicas of one card share its compute: spread over distinct cards first.
    std::array<uint16_t, kMaxGpusPerNode> take{};
    int left = gr.count;
    while (left > 0) {
      for (int g : ts) {
        if (left > 0 && v.usage.gpus[g].replicas + take[g] < v.node.gpus[g].sharing.replicas) {
          ++take[g];
          --left;
        }
      }
    }
    Candidate c = v.base;
    c.kind = DeviceKind::kReplica;
    for (int g : ts) {
      if (take[g] > 0) c.picks[c.n++] = {static_cast<uint8_t>(g), 0, take[g]};
    }
    out.push_back(c);
  }
  return {};
}

}  // namespace

bool NeverHoldsWholeCards(const DeviceRequest& req, const ClusterState& state, NodeId id) {
  const GpuRequest& gr = req.pod->gpu;
  return gr.kind == GpuRequestKind::kWhole &&
         WholeCapacity(*req.pod, state.node(id), state.usage(id)) < gr.count;
}

DeviceRequest MakeDeviceRequest(const PodSpec& pod) {
  DeviceRequest r;
  r.pod = &pod;
  if (!pod.gpu_models.empty()) {
    r.model_reason = "no GPU of model ";
    for (size_t i = 0; i < pod.gpu_models.size(); ++i) {
      if (i) r.model_reason += "|";
      r.model_reason += pod.gpu_models[i];
    }
  }
  if (pod.gpu.kind == GpuRequestKind::kMig) {
    r.mig_missing = "no MIG " + pod.gpu.mig_profile + " instance";
    r.mig_busy = "no free MIG " + pod.gpu.mig_profile + " instance";
  }
  return r;
}

int64_t ShareMemoryMib(const GpuRequest& req, int64_t card_mib) {
  if (req.memory_mib > 0) return req.memory_mib;
  return card_mib * req.milli / kMilliPerGpu;
}

std::string_view ProposeCandidates(const DeviceRequest& req, const ClusterState& state, NodeId id,
                                   std::vector<Candidate>& out) {
  const GpuRequest& gr = req.pod->gpu;
  if (gr.kind == GpuRequestKind::kNone) {
    Candidate c;
    c.node = id;
    out.push_back(c);
    return {};
  }
  const NodeRecord& node = state.node(id);
  // A node with no card of the mode the request needs is rejected without reading its cards.
  auto lacks = [&](SharingMode m) { return !(node.sharing_modes & (1u << static_cast<int>(m))); };
  if (!node.gpus.empty()) {
    if (gr.kind == GpuRequestKind::kMig && lacks(SharingMode::kMig)) return req.mig_missing;
    if (gr.kind == GpuRequestKind::kShare && lacks(SharingMode::kShared)) return kNoSharing;
    if (gr.kind == GpuRequestKind::kReplica && lacks(SharingMode::kTimeSlice)) return kNoTimeSlice;
  }
  const NodeUsage& usage = state.usage(id);
  const int ngpus = static_cast<int>(node.gpus.size());
  const bool any_model = req.pod->gpu_models.empty();
  GpuList eligible;  // set for every node examined: left unzeroed past its size
  for (int g = 0; g < ngpus; ++g) {
    if (usage.gpus[g].healthy && (any_model || ModelAllowed(*req.pod, node.gpus[g].model))) {
      eligible.push_back(g);
    }
  }
  if (eligible.empty()) return IneligibleReason(req, node);
  Candidate base;
  base.node = id;
  const NodeView v{req, state, id, node, usage, ngpus, any_model, eligible, base};
  switch (gr.kind) {
    case GpuRequestKind::kNone:
      break;
    case GpuRequestKind::kWhole:
      return ProposeWholeCards(v, gr, out);
    case GpuRequestKind::kShare:
      return ProposeShares(v, gr, out);
    case GpuRequestKind::kMig:
      return ProposeMigInstances(v, gr, out);
    case GpuRequestKind::kReplica:
      return ProposeReplicas(v, gr, out);
  }
  return kNoGpus;
}

int64_t PickMilli(const ClusterState& s, const PodSpec& pod, const Candidate& c,
                  const DevicePick& p) {
  // Whole cards and shares need only the usage record; MIG and replicas read the card's config.
  switch (c.kind) {
    case DeviceKind::kWhole:
      return kMilliPerGpu;
    case DeviceKind::kShare: {
      const int64_t card_mib = s.usage(c.node).gpus[p.gpu].capacity_mib;
      const int64_t by_mem = ShareMemoryMib(pod.gpu, card_mib) * kMilliPerGpu / card_mib;
      return std::min<int64_t>(kMilliPerGpu, std::max<int64_t>(pod.gpu.milli, by_mem));
    }
    case DeviceKind::kMigInstance: {
      const GpuDevice& g = s.node(c.node).gpus[p.gpu];
      const MigGeometry* geo = FindMigGeometry(g.model);
      return MigInstanceMilli(*geo, geo->profiles[g.sharing.mig[p.mig_instance].profile]);
    }
    case DeviceKind::kReplica:
      return kMilliPerGpu * p.replicas / s.node(c.node).gpus[p.gpu].sharing.replicas;
  }
  return 0;
}

Placement Materialize(const ClusterState& state, const PodSpec& pod, const Candidate& c) {
  Placement p;
  p.node = c.node;
  p.resources = pod.requests;
  const NodeRecord& node = state.node(c.node);
  for (const DevicePick& pick : c.devices()) {
    const GpuDevice& g = node.gpus[pick.gpu];
    DeviceAssignment d;
    d.gpu = pick.gpu;
    d.kind = c.kind;
    switch (c.kind) {
      case DeviceKind::kWhole:
        d.milli = static_cast<int32_t>(kMilliPerGpu);
        d.memory_mib = g.memory_mib;
        break;
      case DeviceKind::kShare:
        d.milli = pod.gpu.milli;
        d.memory_mib = ShareMemoryMib(pod.gpu, g.memory_mib);
        break;
      case DeviceKind::kMigInstance: {
        d.mig_instance = pick.mig_instance;
        const MigGeometry* geo = FindMigGeometry(g.model);
        const MigProfile& prof = geo->profiles[g.sharing.mig[pick.mig_instance].profile];
        d.memory_mib = MigInstanceMemoryMib(*geo, prof, g.memory_mib);
        d.milli = static_cast<int32_t>(MigInstanceMilli(*geo, prof));
        break;
      }
      case DeviceKind::kReplica:
        d.replicas = pick.replicas;
        d.milli = static_cast<int32_t>(kMilliPerGpu * pick.replicas / g.sharing.replicas);
        break;
    }
    p.devices.push_back(d);
  }
  return p;
}

}  // namespace tessera::core
