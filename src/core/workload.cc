#include "core/workload.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tessera::core {

GangPods GangOf(const Workload& w) {
  GangPods g;
  for (const PodSet& set : w.pod_sets) {
    PodSpec pod = set.pod;
    pod.name = w.name + "/" + set.name;
    g.Add({.pod = std::move(pod), .count = set.count, .required = set.min_count});
  }
  return g;
}

std::vector<PodSpec> ExpandPods(const Workload& w) { return GangOf(w).Expand(); }

int32_t PodCount(const Workload& w) {
  int32_t n = 0;
  for (const PodSet& set : w.pod_sets) n += set.count;
  return n;
}

namespace {

QuotaVector SetLowerBound(const PodSet& set) {
  const PodSpec& p = set.pod;
  int64_t gpu = NominalGpuMilli(p);
  if (p.gpu.kind == GpuRequestKind::kMig || p.gpu.kind == GpuRequestKind::kReplica ||
      (p.gpu.kind == GpuRequestKind::kShare && p.gpu.milli == 0)) {
    gpu = p.gpu.count;
  }
  return {gpu * set.count, p.requests.cpu_milli * set.count, p.requests.memory_mib * set.count};
}

}  // namespace

std::vector<QuotaVector> SetLowerBounds(const Workload& w) {
  std::vector<QuotaVector> out;
  out.reserve(w.pod_sets.size());
  for (const PodSet& set : w.pod_sets) out.push_back(SetLowerBound(set));
  return out;
}

QuotaVector RequestLowerBound(const Workload& w) {
  QuotaVector v = {0, 0, 0};
  for (const PodSet& set : w.pod_sets) {
    const QuotaVector s = SetLowerBound(set);
    for (int r = 0; r < kNumQuotaResources; ++r) v[r] += s[r];
  }
  return v;
}

namespace {

void AddPlaced(const ClusterState& state, const Placement& p, QuotaVector* v) {
  for (const DeviceAssignment& d : p.devices) {
    (*v)[static_cast<int>(QuotaResource::kGpu)] += state.DeviceGpuMilli(p.node, d);
  }
  (*v)[static_cast<int>(QuotaResource::kCpu)] += p.resources.cpu_milli;
  (*v)[static_cast<int>(QuotaResource::kMemory)] += p.resources.memory_mib;
}

}  // namespace

QuotaVector PlacedAmount(const ClusterState& state,
                         std::span<const std::optional<Placement>> placements) {
  QuotaVector v = {0, 0, 0};
  for (const std::optional<Placement>& p : placements) {
    if (p) AddPlaced(state, *p, &v);
  }
  return v;
}

std::vector<QuotaVector> SetPlacedAmounts(const ClusterState& state, const Workload& w,
                                          std::span<const std::optional<Placement>> placements) {
  std::vector<QuotaVector> out(w.pod_sets.size(), QuotaVector{0, 0, 0});
  size_t i = 0;
  for (size_t set = 0; set < w.pod_sets.size(); ++set) {
    for (int32_t k = 0; k < w.pod_sets[set].count && i < placements.size(); ++k, ++i) {
      if (placements[i]) AddPlaced(state, *placements[i], &out[set]);
    }
  }
  return out;
}

namespace {

// Fixed-width bytes, not decimal text: the key is only compared, never shown.
void Append(std::string& k, int64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  k.append(bytes, sizeof v);
}

void Append(std::string& k, const std::string& s) {
  Append(k, static_cast<int64_t>(s.size()));
  k += s;
}

void AppendTerm(std::string& k, const NodeSelectorTerm& t) {
  Append(k, static_cast<int64_t>(t.requirements.size()));
  for (const LabelRequirement& r : t.requirements) {
    Append(k, r.key);
    Append(k, static_cast<int64_t>(r.op));
    Append(k, static_cast<int64_t>(r.values.size()));
    for (const std::string& v : r.values) Append(k, v);
  }
}

}  // namespace

std::string ShapeKey(const Workload& w) {
  std::string k;
  k.reserve(192);
  Append(k, w.min_member);
  for (const PodSet& set : w.pod_sets) {
    const PodSpec& p = set.pod;
    Append(k, set.count);
    Append(k, set.min_count);
    Append(k, p.requests.cpu_milli);
    Append(k, p.requests.memory_mib);
    Append(k, static_cast<int64_t>(p.gpu.kind));
    Append(k, p.gpu.count);
    Append(k, p.gpu.milli);
    Append(k, p.gpu.memory_mib);
    Append(k, p.gpu.mig_profile);
    Append(k, static_cast<int64_t>(p.gpu_models.size()));
    for (const std::string& m : p.gpu_models) Append(k, m);
    Append(k, static_cast<int64_t>(p.node_selector.size()));
    for (const auto& [key, value] : p.node_selector) {
      Append(k, key);
      Append(k, value);
    }
    Append(k, static_cast<int64_t>(p.required_terms.size()));
    for (const NodeSelectorTerm& t : p.required_terms) AppendTerm(k, t);
    Append(k, static_cast<int64_t>(p.preferred_terms.size()));
    for (const PreferredTerm& t : p.preferred_terms) {
      Append(k, t.weight);
      AppendTerm(k, t.term);
    }
    Append(k, static_cast<int64_t>(p.tolerations.size()));
    for (const Toleration& t : p.tolerations) {
      Append(k, t.key);
      Append(k, static_cast<int64_t>(t.op));
      Append(k, t.value);
      Append(k, t.any_effect ? -1 : static_cast<int64_t>(t.effect));
    }
  }
  return k;
}

}  // namespace tessera::core
