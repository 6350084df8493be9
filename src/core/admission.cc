#include "core/admission.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/cycle_run.h"
#include "core/plugins.h"

namespace tessera::core {

std::string_view PreemptionCauseName(PreemptionCause c) {
  switch (c) {
    case PreemptionCause::kInClusterQueue:
      return "InClusterQueue";
    case PreemptionCause::kInCohortReclamation:
      return "InCohortReclamation";
    case PreemptionCause::kInCohortReclaimWhileBorrowing:
      return "InCohortReclaimWhileBorrowing";
    case PreemptionCause::kInCohortFairSharing:
      return "InCohortFairSharing";
    case PreemptionCause::kPreemptionByScheduler:
      return "PreemptionByScheduler";
    case PreemptionCause::kClusterQueueStopped:
      return "ClusterQueueStopped";
  }
  return "";
}

Result<AdmissionCycle> AdmissionCycle::Create(const QueueConfig& config, CycleOptions options) {
  Result<QuotaTree> tree = QuotaTree::Build(config);
  if (!tree.ok()) return tree.status();
  AdmissionCycle c;
  c.options_ = options;
  c.tree_ = std::move(tree).value();
  for (const LocalQueueSpec& l : config.local_queues) {
    c.local_queues_[l.namespace_name + "/" + l.name] = l.queue;
  }
  for (const PriorityClassSpec& p : config.priority_classes) {
    c.priority_classes_[p.name] = p;
    if (p.global_default) c.default_class_ = p;
  }
  for (const NamespaceQuota& n : config.namespace_quotas) {
    c.namespace_quotas_[n.namespace_name] = n;
  }
  return c;
}

namespace cycle {

void CycleRun::IndexHolder(size_t holder) {
  const Holder& h = holders_[holder];
  for (int f : FlavorsOf(h.charge)) by_queue_flavor_[h.queue][f].push_back(holder);
}

void CycleRun::ChargeRunning() {
  groups_.resize(tree_.num_queues());
  group_of_.assign(tree_.num_queues(), {-1, -1, -1});
  for (int q = 0; q < tree_.num_queues(); ++q) {
    for (const ResourceGroup& g : tree_.queue(q).resource_groups) {
      Group& out = groups_[q].emplace_back();
      out.covered = g.covered;
      for (const FlavorQuotas& f : g.flavors) out.flavors.push_back(tree_.FindFlavor(f.flavor));
      for (QuotaResource r : g.covered) {
        group_of_[q][static_cast<int>(r)] = static_cast<int>(groups_[q].size()) - 1;
      }
    }
  }
  holders_.reserve(running_.size() + pending_.size());
  by_queue_flavor_.assign(tree_.num_queues(),
                          std::vector<std::vector<size_t>>(tree_.num_flavors()));
  for (int q = 0; q < tree_.num_queues(); ++q) {
    root_.push_back(tree_.RootOf(q));
    if (root_.back() >= 0) root_queues_[root_.back()].push_back(q);
  }
  min_running_priority_.assign(tree_.num_queues(), std::numeric_limits<int32_t>::max());
  for (size_t i = 0; i < running_.size(); ++i) {
    const AdmittedWorkload& a = running_[i];
    Holder& h = holders_.emplace_back();
    h.w = &a.workload;
    h.queue = tree_.FindQueue(a.queue);
    h.priority = a.priority;
    h.admitted_ms = a.admitted_ms;
    h.end_ms = ExpectedEnd(a.workload, a.admitted_ms);
    h.running_index = i;
    h.ns = NamespaceOf(a.workload.namespace_name);
    h.pods = PodCount(a.workload);
    const Amounts placed = AmountsOf(SetPlacedAmounts(state_, a.workload, a.placements));
    const std::vector<QuotaVector>& sets = placed.sets;
    h.amount = placed.total;
    h.set_flavors.assign(sets.size(), kNoFlavors);
    for (size_t set = 0; set < sets.size(); ++set) {
      // One entry stands for every pod set.
      const size_t from = a.flavors.size() == 1 ? 0 : set;
      if (from >= a.flavors.size()) continue;
      for (int r = 0; r < kNumQuotaResources; ++r) {
        const int f = a.flavors[from][r].empty() ? kNoFlavor : tree_.FindFlavor(a.flavors[from][r]);
        h.set_flavors[set][r] = f < 0 ? kNoFlavor : f;
      }
    }
    // Resource by resource, pod set by pod set (the order quota messages name them in).
    for (int r = 0; r < kNumQuotaResources; ++r) {
      for (size_t set = 0; set < sets.size(); ++set) {
        h.charge.Add(h.set_flavors[set][r], static_cast<QuotaResource>(r), sets[set][r]);
      }
    }
    ChargeHolder(h, +1);
    if (h.queue < 0) continue;
    IndexHolder(holders_.size() - 1);
    min_running_priority_[h.queue] = std::min(min_running_priority_[h.queue], h.priority);
  }
  cordoned_by_snapshot_.resize(state_.size());
  for (uint32_t n = 0; n < state_.size(); ++n) {
    cordoned_by_snapshot_[n] = state_.node(NodeId(n)).unschedulable ? 1 : 0;
  }
}

void CycleRun::ResolvePending() {
  info_.resize(pending_.size());
  out_.pending_reasons.assign(pending_.size(), "");
  out_.pending_places.assign(pending_.size(), QueuePlace{});
  for (size_t i = 0; i < pending_.size(); ++i) {
    const Workload& w = pending_[i];
    PendingInfo& p = info_[i];
    std::string& reason = out_.pending_reasons[i];
    lq_key_.assign(w.namespace_name).append("/").append(w.local_queue);
    auto lq = c_.local_queues_.find(lq_key_);
    if (lq == c_.local_queues_.end()) {
      reason = "local queue " + w.namespace_name + "/" + w.local_queue + " does not exist";
      continue;
    }
    const int q = tree_.FindQueue(lq->second);
    if (q < 0) {
      reason = "queue " + lq->second + " (of local queue " + w.namespace_name + "/" +
               w.local_queue + ") does not exist";
      continue;
    }
    if (tree_.queue(q).stop != StopPolicy::kNone) {
      reason = !tree_.queue(q).stop_reason.empty()
                   ? tree_.queue(q).stop_reason
                   : "queue " + lq->second + " is stopped (stopPolicy " +
                         (tree_.queue(q).stop == StopPolicy::kHold ? "Hold" : "HoldAndDrain") +
                         "): it admits nothing until the policy is None";
      continue;
    }
    if (!w.priority_class.empty()) {
      auto pc = c_.priority_classes_.find(w.priority_class);
      if (pc == c_.priority_classes_.end()) {
        reason = "priority class " + w.priority_class + " does not exist";
        continue;
      }
      p.priority = pc->second.value;
      p.can_preempt = pc->second.preemption == PreemptionPolicyKind::kPreemptLowerPriority;
    } else if (c_.default_class_) {
      p.priority = c_.default_class_->value;
      p.can_preempt = c_.default_class_->preemption == PreemptionPolicyKind::kPreemptLowerPriority;
    }
    if (w.pod_sets.empty() || PodCount(w) <= 0) {
      reason = "workload has no pods";
      continue;
    }
    bool valid = true;
    for (const PodSet& s : w.pod_sets) {
      if (s.count < 0) {
        reason = "pod set " + s.name + ": count must be >= 0, got " + std::to_string(s.count);
        valid = false;
        break;
      }
      if (Status st = ValidatePodSpec(s.pod); !st.ok()) {
        reason = "pod set " + s.name + ": " + st.message();
        valid = false;
        break;
      }
    }
    if (!valid) continue;
    p.lower = AmountsOf(SetLowerBounds(w));
    p.ns = NamespaceOf(w.namespace_name);
    p.queue = q;
  }
}

void CycleRun::HoldForStrictHead(size_t idx) {
  const int q = info_[idx].queue;
  const QueueSpec& spec = tree_.queue(q);
  if (spec.strategy != QueueingStrategy::kStrictFifo || root_[q] < 0 ||
      spec.preemption.reclaim_within_cohort != ReclaimPreemption::kNever) {
    return;
  }
  const std::vector<Combo>& combos = Combos(idx);
  if (combos.empty()) return;
  QuotaCharge hold = ChargeFor(idx, combos.front(), info_[idx].lower.sets);
  for (QuotaCharge::Part& part : hold.parts) {
    part.amount = std::min(part.amount, tree_.UnusedNominal(q, part.flavor, part.resource));
  }
  tree_.AddUsage(q, hold, +1);
}

int CycleRun::NamespaceOf(const std::string& ns) {
  if (c_.namespace_quotas_.empty()) return -1;
  auto known = ns_index_.find(ns);
  if (known != ns_index_.end()) return known->second;
  auto it = c_.namespace_quotas_.find(ns);
  if (it == c_.namespace_quotas_.end()) return -1;
  const int index = static_cast<int>(ns_quota_.size());
  ns_index_.emplace(it->first, index);
  ns_quota_.push_back(&it->second);
  ns_used_.push_back({0, 0, 0});
  return index;
}

std::string CycleRun::NamespaceExplain(int ns, const QuotaVector& amount) const {
  if (ns < 0) return "";
  const NamespaceQuota& quota = *ns_quota_[ns];
  const QuotaVector& used = ns_used_[ns];
  for (int r = 0; r < kNumQuotaResources; ++r) {
    const std::optional<int64_t>& hard = quota.hard[r];
    if (!hard || amount[r] == 0 || used[r] + amount[r] <= *hard) continue;
    const QuotaResource res = static_cast<QuotaResource>(r);
    return "namespace " + quota.namespace_name + " quota: requests." +
           std::string(QuotaResourceName(res)) + " " + FormatQuota(res, used[r]) + " used + " +
           FormatQuota(res, amount[r]) + " requested exceeds hard " + FormatQuota(res, *hard);
  }
  return "";
}

CycleRun::VerdictKey CycleRun::VerdictKeyOf(size_t idx) {
  const PendingInfo& p = info_[idx];
  // A runtime matters only where reservations are in force (who may use their nodes, which
  // failures cover which runtimes); making or dropping one changes the epoch.
  const int64_t runtime = reservations_.empty() ? 0 : RuntimeOrNoEnd(pending_[idx]);
  return {p.queue, ShapeOf(idx), p.ns, p.priority, p.can_preempt, runtime};
}

bool CycleRun::Decide(size_t idx, uint8_t& reserved_queue, int& reservations_made) {
  // An owner of a reservation is tried as itself: the reservation is open to it alone.
  const bool reuse = c_.options_.reuse_equal_verdicts && !OwnsReservation(idx);
  const Epoch before = CurrentEpoch();
  VerdictKey key;
  if (reuse) {
    key = VerdictKeyOf(idx);
    if (auto it = verdicts_.find(key); it != verdicts_.end() && it->second.epoch == before) {
      out_.pending_reasons[idx] = it->second.reason;
      out_.pending_places[idx].fits_when_all_end = it->second.fit;
      ++out_.reused_verdicts;
      return false;
    }
  }
  Attempt a = TryAdmit(idx);
  if (a.never_fits) out_.pending_places[idx].fits_when_all_end = QueuePlace::Fit::kNo;
  if (a.block == Block::kNone) return true;
  std::string reason = std::move(a.reason);
  const bool preempting = a.preempting || TryPreempt(idx, a, &reason);
  // The queue's reservation is tried once: a verdict found trying it is not one an equal
  // workload after it would get.
  const bool reserving = !preempting && a.block == Block::kPlacement && c_.options_.backfill &&
                         !reserved_queue && reservations_made < c_.options_.max_reservations;
  if (reserving) {
    reserved_queue = 1;
    ++reservations_made;
    TryReserve(idx, a, &reason);
  }
  if (!preempting) HoldForStrictHead(idx);
  out_.pending_reasons[idx] = std::move(reason);
  if (reuse && !reserving && CurrentEpoch() == before) {
    verdicts_[key] = {before, out_.pending_reasons[idx],
                      out_.pending_places[idx].fits_when_all_end};
  }
  return false;
}

CycleResult CycleRun::Run(std::span<const Reservation> held) {
  ChargeRunning();
  ResolvePending();
  // stopPolicy HoldAndDrain: what the queue admitted is evicted (its devices stay busy until it
  // has stopped).
  for (Holder& h : holders_) {
    if (h.running_index == kNotRunning || tree_.queue(h.queue).stop != StopPolicy::kHoldAndDrain) {
      continue;
    }
    h.victim = true;
    Preemption& pr = out_.preemptions.emplace_back();
    pr.running_index = h.running_index;
    pr.cause = PreemptionCause::kClusterQueueStopped;
    pr.victim = h.w->name;
    pr.reason =
        "evicted: queue " + tree_.queue(h.queue).name + " is stopped (stopPolicy HoldAndDrain)";
  }
  // Reservations carried over from the previous cycle hold their nodes until their owner's turn.
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < pending_.size(); ++i) by_name.emplace(pending_[i].name, i);
  for (const Reservation& r : held) {
    auto it = by_name.find(r.workload);
    if (it == by_name.end() || info_[it->second].queue < 0) continue;
    bool valid = true;
    for (NodeId n : r.nodes) valid = valid && n.value() < state_.size();
    if (!valid) continue;
    SetCordon(r.nodes, true);
    reservations_.push_back(r);
    reservation_owner_.push_back(it->second);
  }

  // Per queue, pending workloads by priority (high first), then age, then name. A workload
  // whose preemptor still waits for the quota it freed stands aside.
  std::vector<std::vector<size_t>> lists(tree_.num_queues());
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (info_[i].queue < 0) continue;
    const Workload& w = pending_[i];
    if (!w.yields_to.empty() && now_ < w.yield_until_ms && by_name.contains(w.yields_to)) {
      out_.pending_reasons[i] =
          "waiting: " + w.yields_to + " preempted it and holds the quota it freed until admitted";
      continue;
    }
    lists[info_[i].queue].push_back(i);
  }
  for (std::vector<size_t>& l : lists) {
    std::sort(l.begin(), l.end(), [&](size_t a, size_t b) {
      return std::make_tuple(-info_[a].priority, pending_[a].created_ms,
                             std::string_view(pending_[a].name)) <
             std::make_tuple(-info_[b].priority, pending_[b].created_ms,
                             std::string_view(pending_[b].name));
    });
  }
  for (int q = 0; q < static_cast<int>(lists.size()); ++q) {
    for (size_t k = 0; k < lists[q].size(); ++k) {
      const size_t i = lists[q][k];
      out_.pending_places[i] = {tree_.queue(q).name, static_cast<int64_t>(k + 1),
                                static_cast<int64_t>(lists[q].size()), info_[i].priority};
    }
  }
  std::vector<size_t> cursor(lists.size(), 0);
  // Queue heads (fair sharing: FairNextQueue): no borrowing first, then priority, age and name.
  using Key = std::tuple<int64_t, int32_t, int64_t, std::string_view, int>;
  auto key_of = [&](int q) {
    const size_t i = lists[q][cursor[q]];
    // The head's first flavor choice stands for its charge when ordering.
    const QuotaCharge charge = ChargeFor(i, Combos(i).front(), info_[i].lower.sets);
    return Key(tree_.WouldBorrow(q, charge) ? 1 : 0, -info_[i].priority, pending_[i].created_ms,
               pending_[i].name, q);
  };
  const bool fair = c_.options_.fair_sharing;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heads;
  for (int q = 0; q < tree_.num_queues() && !fair; ++q) {
    if (!lists[q].empty()) heads.push(key_of(q));
  }
  std::vector<uint8_t> reserved_queue(lists.size(), 0);
  int reservations_made = 0;
  while (true) {
    int q = -1;
    if (fair) {
      q = FairNextQueue(lists, cursor);
    } else if (!heads.empty()) {
      q = std::get<4>(heads.top());
      heads.pop();
    }
    if (q < 0) break;
    const size_t idx = lists[q][cursor[q]];
    if (!Decide(idx, reserved_queue[q], reservations_made)) {
      if (tree_.queue(q).strategy == QueueingStrategy::kStrictFifo) {
        for (size_t k = cursor[q] + 1; k < lists[q].size(); ++k) {
          out_.pending_reasons[lists[q][k]] = "waiting behind " + pending_[idx].name +
                                              ", the head of StrictFIFO queue " +
                                              tree_.queue(q).name;
        }
        cursor[q] = lists[q].size();
      }
    }
    if (cursor[q] < lists[q].size() && ++cursor[q] < lists[q].size() && !fair) {
      heads.push(key_of(q));
    }
  }
  GrowRunning();
  out_.reservations = reservations_;
  if (c_.options_.report_quotas) out_.quotas = ReportQuotas(tree_);
  return std::move(out_);
}

}  // namespace cycle

CycleResult AdmissionCycle::Run(Scheduler& placer, const ClusterState& snapshot,
                                std::span<const Workload> pending,
                                std::span<const AdmittedWorkload> running, int64_t now_ms,
                                std::span<const Reservation> held) const {
  cycle::CycleRun run(*this, placer, snapshot, pending, running, now_ms);
  return run.Run(held);
}

}  // namespace tessera::core
