// Flavor assignment: the combinations a workload may take, whether their quota fits, and the
// attempt to admit it (see core/cycle_run.h).
#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/cycle_run.h"

namespace tessera::core::cycle {

int CycleRun::ShapeOf(size_t idx) {
  int& shape = info_[idx].shape;
  if (shape < 0) {
    std::string key = ShapeKey(pending_[idx]);
    auto it = shapes_.find(key);
    if (it == shapes_.end()) {
      it = shapes_.emplace(std::move(key), static_cast<int>(shapes_.size())).first;
    }
    shape = it->second;
  }
  return shape;
}

const std::vector<CycleRun::Combo>& CycleRun::Combos(size_t idx) {
  if (combos_of_.size() <= idx) combos_of_.resize(pending_.size(), nullptr);
  if (combos_of_[idx] != nullptr) return *combos_of_[idx];
  const PendingInfo& p = info_[idx];
  const Workload& w = pending_[idx];
  const std::vector<Group>& groups = groups_[p.queue];
  const size_t num_groups = groups.size();
  // Per pod set, the groups covering a resource it uses get a flavor; the others none (-1), as
  // Kueue assigns flavors per pod set for the resources it requests.
  std::vector<int>& sizes = sizes_scratch_;
  sizes.assign(w.pod_sets.size() * num_groups, 0);
  // The cache key: the queue, then which positions are used, 64 to a word.
  std::vector<uint64_t>& cache_key = key_scratch_;
  cache_key.assign({static_cast<uint64_t>(p.queue), sizes.size()});
  for (size_t set = 0; set < w.pod_sets.size(); ++set) {
    const bool wants_gpu = w.pod_sets[set].pod.gpu.kind != GpuRequestKind::kNone;
    for (size_t g = 0; g < num_groups; ++g) {
      const size_t i = set * num_groups + g;
      for (QuotaResource r : groups[g].covered) {
        if (p.lower.sets[set][static_cast<int>(r)] > 0 || (r == QuotaResource::kGpu && wants_gpu)) {
          sizes[i] = static_cast<int>(groups[g].flavors.size());
        }
      }
      if (i % 64 == 0) cache_key.push_back(0);
      if (sizes[i] > 0) cache_key.back() |= uint64_t{1} << (i % 64);
    }
  }
  if (auto known = combos_.find(cache_key); known != combos_.end()) {
    combos_of_[idx] = &known->second;
    return known->second;
  }
  std::vector<Combo>& combos = combos_[cache_key];
  combos_of_[idx] = &combos;
  const size_t positions = sizes.size();
  Combo cur(positions, -1);
  std::vector<int> pos(positions, 0);
  while (static_cast<int>(combos.size()) < kMaxFlavorCombos) {
    for (size_t i = 0; i < positions; ++i) {
      cur[i] = sizes[i] == 0 ? -1 : groups[i % num_groups].flavors[pos[i]];
    }
    combos.push_back(cur);
    // Odometer: the last position varies fastest, so earlier pod sets (and groups) keep their
    // first flavors longest. The first choice that fits is then the one Kueue's pass pod set
    // by pod set, each taking its first flavor that fits, would make.
    int i = static_cast<int>(positions) - 1;
    for (; i >= 0; --i) {
      if (sizes[i] == 0) continue;
      if (++pos[i] < sizes[i]) break;
      pos[i] = 0;
    }
    if (i < 0) break;
  }
  return combos;
}

QuotaCharge CycleRun::ChargeFor(size_t idx, const Combo& combo,
                                const std::vector<QuotaVector>& amounts) const {
  const int q = info_[idx].queue;
  const size_t num_groups = groups_[q].size();
  QuotaCharge c;
  // Resource by resource, pod set by pod set (the order quota messages name them in).
  for (int r = 0; r < kNumQuotaResources; ++r) {
    const int g = group_of_[q][r];
    if (g < 0) continue;
    for (size_t set = 0; set < amounts.size(); ++set) {
      const int f = combo[set * num_groups + g];
      if (f >= 0) c.Add(f, static_cast<QuotaResource>(r), amounts[set][r]);
    }
  }
  return c;
}

// Constrains a pod to a flavor: its node labels and GPU models, its tolerations; false when the
// pod contradicts them or does not tolerate the flavor's nodeTaints.
bool ApplyFlavor(const ResourceFlavor& flavor, PodSpec* p) {
  for (const Taint& t : flavor.node_taints) {
    if (t.effect == TaintEffect::kPreferNoSchedule) continue;
    const bool tolerated = std::any_of(p->tolerations.begin(), p->tolerations.end(),
                                       [&](const Toleration& tol) { return Tolerates(tol, t); });
    if (!tolerated) return false;
  }
  for (const auto& [key, value] : flavor.node_labels) {
    auto [it, inserted] = p->node_selector.emplace(key, value);
    if (!inserted && it->second != value) return false;
  }
  p->tolerations.insert(p->tolerations.end(), flavor.tolerations.begin(), flavor.tolerations.end());
  if (flavor.gpu_models.empty()) return true;
  if (p->gpu_models.empty()) {
    p->gpu_models = flavor.gpu_models;
    return true;
  }
  std::vector<std::string> both;
  for (const std::string& m : p->gpu_models) {
    if (std::find(flavor.gpu_models.begin(), flavor.gpu_models.end(), m) !=
        flavor.gpu_models.end()) {
      both.push_back(m);
    }
  }
  p->gpu_models = std::move(both);
  return !p->gpu_models.empty();
}

bool CycleRun::ConstrainedPods(size_t idx, const Combo& combo, GangPods* pods) const {
  *pods = GangOf(pending_[idx]);
  const size_t num_groups = groups_[info_[idx].queue].size();
  // A run per pod set.
  for (size_t set = 0; set < pods->num_runs(); ++set) {
    if (pods->run(set).count <= 0) continue;
    for (size_t g = 0; g < num_groups; ++g) {
      const int f = combo[set * num_groups + g];
      if (f >= 0 && !ApplyFlavor(tree_.flavor(f), &pods->mutable_pod(set))) return false;
    }
  }
  return true;
}

std::string CycleRun::FailureKey(int shape, const Combo& combo) {
  std::string key = std::to_string(shape) + "|";
  for (int f : combo) key += std::to_string(f) + ",";
  return key;
}

const CycleRun::Failure* CycleRun::KnownFailure(size_t idx, const std::string& key) const {
  // An owner sees its own reserved nodes: its outcome says nothing about others and theirs
  // nothing about it.
  if (OwnsReservation(idx)) return nullptr;
  auto it = failed_shapes_.find(key);
  if (it == failed_shapes_.end()) return nullptr;
  const int64_t runtime = RuntimeOrNoEnd(pending_[idx]);
  for (const Failure& f : it->second) {
    if (runtime >= f.runtime && info_[idx].priority <= f.priority) return &f;
  }
  return nullptr;
}

void CycleRun::RecordFailure(size_t idx, const std::string& key, const std::string& reason,
                             bool never) {
  if (OwnsReservation(idx)) return;
  Failure f{RuntimeOrNoEnd(pending_[idx]), info_[idx].priority, reason, pending_[idx].name, never};
  if (reservations_.empty()) {
    f.runtime = std::numeric_limits<int64_t>::min();
    f.priority = std::numeric_limits<int32_t>::max();
  }
  std::vector<Failure>& known = failed_shapes_[key];
  for (const Failure& k : known) {
    if (f.runtime >= k.runtime && f.priority <= k.priority) return;  // already covered
  }
  std::erase_if(
      known, [&](const Failure& k) { return k.runtime >= f.runtime && k.priority <= f.priority; });
  known.push_back(std::move(f));
  ++changes_;
}

Attempt CycleRun::TryAdmit(size_t idx) {
  const PendingInfo& p = info_[idx];
  Attempt a;
  if (std::string ns = NamespaceExplain(p.ns, p.lower.total); !ns.empty()) {
    a.reason = ns;
    return a;
  }
  const std::vector<Combo>& combos = Combos(idx);
  a.no_room.assign(combos.size(), 0);
  std::string quota_reason, placement_reason;
  // Whether every flavor choice tried so far can never be placed.
  bool never = true;
  const QueueSpec& spec = tree_.queue(p.queue);
  // flavorFungibility.whenCanBorrow TryNextFlavor: the choices that fit without borrowing
  // first, in order, then the others.
  std::vector<size_t> order(combos.size());
  for (size_t ci = 0; ci < combos.size(); ++ci) order[ci] = ci;
  if (spec.try_next_flavor_before_borrowing) {
    std::stable_partition(order.begin(), order.end(), [&](size_t ci) {
      return !tree_.WouldBorrow(p.queue, ChargeFor(idx, combos[ci], p.lower.sets));
    });
  }
  // flavorFungibility.whenCanPreempt Preempt: a choice where victims make room is taken
  // before later choices are tried (unless it borrows and whenCanBorrow says TryNextFlavor).
  const bool may_preempt_early = spec.preempt_before_next_flavor && MayPreempt(idx);
  auto preempt_here = [&](size_t ci, std::string why) {
    if (!may_preempt_early) return false;
    if (spec.try_next_flavor_before_borrowing &&
        tree_.WouldBorrow(p.queue, ChargeFor(idx, combos[ci], p.lower.sets))) {
      return false;
    }
    if (!PreemptIn(idx, ci, a, &why)) return false;
    a.preempting = true;
    a.reason = std::move(why);
    return true;
  };
  for (const size_t ci : order) {
    const Combo& combo = combos[ci];
    const QuotaCharge lower = ChargeFor(idx, combo, p.lower.sets);
    if (!tree_.Fits(p.queue, lower)) {
      never = false;  // not placed: unknown
      std::string why = tree_.Explain(p.queue, lower);
      if (quota_reason.empty()) quota_reason = why;
      if (preempt_here(ci, std::move(why))) return a;
      continue;
    }
    if (a.quota_fit_combo < 0 || static_cast<int>(ci) < a.quota_fit_combo) {
      a.quota_fit_combo = static_cast<int>(ci);
    }
    const std::string key = FailureKey(ShapeOf(idx), combo);
    if (const Failure* f = KnownFailure(idx, key)) {
      ++out_.placement_cache_hits;
      a.no_room[ci] = 1;
      never = never && f->never;
      if (placement_reason.empty()) {
        placement_reason =
            f->reason + " (found placing " + f->workload + ", of the same shape, in this cycle)";
      }
      continue;
    }
    GangPods pods;
    if (!ConstrainedPods(idx, combo, &pods)) {
      if (placement_reason.empty()) {
        placement_reason =
            "the pods' node selector or GPU models exclude the queue's flavors, or the pods do "
            "not tolerate their nodeTaints";
      }
      continue;
    }
    GangOutcome g = PlaceGang(idx, pods, /*keep=*/true);
    if (!g.ok) {
      g.reason = NameReservations(idx, std::move(g.reason));
      RecordFailure(idx, key, g.reason, g.never_fits);
      never = never && g.never_fits;
      a.no_room[ci] = 1;
      if (placement_reason.empty()) placement_reason = g.reason;
      if (preempt_here(ci, g.reason)) return a;
      continue;
    }
    const Amounts amount = AmountsOf(SetPlacedAmounts(state_, pending_[idx], g.placements));
    const QuotaCharge exact = ChargeFor(idx, combo, amount.sets);
    std::string over = NamespaceExplain(p.ns, amount.total);
    if (over.empty() && !tree_.Fits(p.queue, exact)) over = tree_.Explain(p.queue, exact);
    if (!over.empty()) {
      Unplace(pods, g);
      if (quota_reason.empty()) quota_reason = std::move(over);
      continue;
    }
    Admit(idx, combo, exact, amount, std::move(g));
    a.block = Block::kNone;
    return a;
  }
  if (a.quota_fit_combo >= 0 && !placement_reason.empty()) {
    a.block = Block::kPlacement;
    a.never_fits = never;
    a.reason = std::move(placement_reason);
  } else {
    a.reason = quota_reason.empty() ? std::move(placement_reason) : std::move(quota_reason);
  }
  return a;
}

void CycleRun::Admit(size_t idx, const Combo& combo, const QuotaCharge& charge,
                     const Amounts& amount, GangOutcome gang) {
  const Workload& w = pending_[idx];
  const PendingInfo& p = info_[idx];
  Admission& ad = out_.admissions.emplace_back();
  ad.pending_index = idx;
  ad.borrowing = tree_.WouldBorrow(p.queue, charge);
  ad.admitted.workload = w;
  ad.admitted.queue = tree_.queue(p.queue).name;
  std::vector<ResourceFlavors> set_flavors =
      SetFlavorsOf(groups_[p.queue], combo, w.pod_sets.size());
  for (const ResourceFlavors& flavors : set_flavors) {
    std::array<std::string, kNumQuotaResources>& names = ad.admitted.flavors.emplace_back();
    for (int r = 0; r < kNumQuotaResources; ++r) {
      if (flavors[r] != kNoFlavor) names[r] = tree_.flavor(flavors[r]).name;
    }
  }
  ad.admitted.placements = std::move(gang.placements);
  ad.admitted.priority = p.priority;
  ad.admitted.admitted_ms = now_;
  // Admitted work holds room that later reservations in this cycle wait for.
  Holder& h = holders_.emplace_back();
  h.w = &w;
  h.queue = p.queue;
  h.priority = p.priority;
  h.charge = charge;
  h.set_flavors = std::move(set_flavors);
  h.amount = amount.total;
  h.admitted_ms = now_;
  h.end_ms = ExpectedEnd(w, now_);
  h.admission_index = out_.admissions.size() - 1;
  h.ns = p.ns;
  h.pods = PodCount(w);
  ChargeHolder(h, +1);
  IndexHolder(holders_.size() - 1);
  DropReservation(idx);
}

bool CycleRun::QuotaFits(size_t idx, const Combo& combo, const Amounts& amount) const {
  return NamespaceExplain(info_[idx].ns, amount.total).empty() &&
         tree_.Fits(info_[idx].queue, ChargeFor(idx, combo, amount.sets));
}

CycleRun::Fit CycleRun::Check(size_t idx, const Combo& combo, const GangPods& pods, Amounts* amount,
                              std::vector<NodeId>* nodes) {
  nodes->clear();
  if (!QuotaFits(idx, combo, info_[idx].lower)) return Fit::kNoQuota;
  GangOutcome g = PlaceGang(idx, pods, /*keep=*/false);
  if (!g.ok) return Fit::kNoRoom;
  // The exact charge of the simulated placement: the state no longer holds it, but the cards
  // it names are unchanged.
  *amount = AmountsOf(SetPlacedAmounts(state_, pending_[idx], g.placements));
  AppendNodes(g.placements, nodes);
  return QuotaFits(idx, combo, *amount) ? Fit::kYes : Fit::kNoQuota;
}

}  // namespace tessera::core::cycle
