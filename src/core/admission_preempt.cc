// Preemption: in the queue, reclaim in the cohort, fair sharing (see core/cycle_run.h).
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

void CycleRun::MovePlacements(const Holder& h, int sign) {
  for (const std::optional<Placement>& p : PlacementsOf(h)) {
    if (!p) continue;
    Status s = sign < 0 ? state_.Release(*p) : state_.Allocate(*p);
    (void)s;
  }
}

void CycleRun::ChargeUsage(int queue, int ns, const QuotaCharge& charge, const QuotaVector& amount,
                           int sign) {
  if (queue >= 0) tree_.AddUsage(queue, charge, sign);
  if (ns < 0) return;
  QuotaVector& used = ns_used_[ns];
  for (int r = 0; r < kNumQuotaResources; ++r) used[r] += sign * amount[r];
}

void CycleRun::RemoveHolder(Holder& h) {
  MovePlacements(h, -1);
  ChargeHolder(h, -1);
}

void CycleRun::RestoreHolder(Holder& h) {
  MovePlacements(h, +1);
  ChargeHolder(h, +1);
}

bool CycleRun::UsesNeeded(const Holder& h, const Search& s) const {
  for (size_t i = 0; i < s.charge.parts.size(); ++i) {
    const QuotaCharge::Part& p = s.charge.parts[i];
    if (s.needs[i] && h.charge.Charges(p.flavor, p.resource)) return true;
  }
  return false;
}

bool CycleRun::BorrowingInNeeded(int queue, const Search& s) const {
  if (root_[queue] < 0) return false;
  for (size_t i = 0; i < s.charge.parts.size(); ++i) {
    const QuotaCharge::Part& p = s.charge.parts[i];
    if (s.needs[i] && tree_.BorrowingIn(queue, p.flavor, p.resource)) return true;
  }
  return false;
}

bool CycleRun::SearchQuotaFits(const Search& s, const Amounts& amount) const {
  if (!QuotaFits(s.idx, *s.combo, amount)) return false;
  return s.allow_borrowing ||
         !tree_.WouldBorrow(info_[s.idx].queue, ChargeFor(s.idx, *s.combo, amount.sets));
}

bool CycleRun::RemoveAndCheck(Search& s, const Cand& c) {
  Holder& h = holders_[c.holder];
  RemoveHolder(h);
  s.removed.push_back(c);
  AppendNodes(PlacementsOf(h), &s.gained);
  if (!SearchQuotaFits(s, s.need)) return false;
  if (s.known_no_room) {
    // Nodes found to hold no room for any pod keep none until they gain more.
    const bool may_fit = AnyPodFeasible(s.idx, s.gained, *s.pods);
    s.gained.clear();
    if (!may_fit) return false;
  }
  Fit f = Check(s.idx, *s.combo, *s.pods, &s.amount, &s.fit_nodes);
  if (f == Fit::kYes && !SearchQuotaFits(s, s.amount)) f = Fit::kNoQuota;
  if (f == Fit::kYes) return true;
  if (f == Fit::kNoQuota && !s.fit_nodes.empty()) {
    // There is room; the exact charge is what misses.
    RaiseTo(s.amount, &s.need);
    s.fit_nodes.clear();
    s.known_no_room = false;
  }
  if (f == Fit::kNoRoom) {
    s.known_no_room = true;
    s.gained.clear();
  }
  return false;
}

void CycleRun::Abandon(Search& s) {
  for (const Cand& c : s.removed) RestoreHolder(holders_[c.holder]);
  s.removed.clear();
}

void CycleRun::FillBack(Search& s) {
  // Put back every victim the preemptor can do without, latest first (Kueue's
  // fillBackWorkloads). A victim on none of the nodes of the last placement found leaves that
  // placement valid: only the quota needs checking.
  std::vector<uint8_t> needed(s.removed.size(), 1);
  for (size_t i = s.removed.size() - 1; i-- > 0;) {
    Holder& h = holders_[s.removed[i].holder];
    RestoreHolder(h);
    bool disjoint = true;
    for (const std::optional<Placement>& pl : PlacementsOf(h)) {
      if (pl && std::find(s.fit_nodes.begin(), s.fit_nodes.end(), pl->node) != s.fit_nodes.end()) {
        disjoint = false;
      }
    }
    bool ok = false;
    if (disjoint) {
      ok = SearchQuotaFits(s, s.amount);
    } else {
      Amounts without;
      std::vector<NodeId> without_nodes;
      if (Check(s.idx, *s.combo, *s.pods, &without, &without_nodes) == Fit::kYes &&
          SearchQuotaFits(s, without)) {
        ok = true;
        s.amount = without;
        s.fit_nodes = std::move(without_nodes);
      }
    }
    if (ok) {
      needed[i] = 0;
    } else {
      RemoveHolder(h);
    }
  }
  std::vector<Cand> kept;
  for (size_t i = 0; i < s.removed.size(); ++i) {
    if (needed[i]) kept.push_back(s.removed[i]);
  }
  s.removed = std::move(kept);
}

bool CycleRun::Minimal(Search& s, const std::vector<Cand>& cands, bool allow_borrowing,
                       std::optional<int32_t> threshold) {
  const int q = info_[s.idx].queue;
  s.allow_borrowing = allow_borrowing;
  for (Cand c : cands) {
    const Holder& h = holders_[c.holder];
    if (h.queue != q) {
      // A queue stops being a candidate once it no longer borrows what the preemptor needs.
      if (!BorrowingInNeeded(h.queue, s)) continue;
      c.cause = PreemptionCause::kInCohortReclamation;
      if (threshold) {
        // A victim at or above the threshold is taken only if the preemptor then does not
        // borrow; candidates come lowest priority first, so the last one taken stays needed.
        if (h.priority >= *threshold) {
          s.allow_borrowing = false;
        } else {
          c.cause = PreemptionCause::kInCohortReclaimWhileBorrowing;
        }
      }
    }
    if (RemoveAndCheck(s, c)) {
      FillBack(s);
      return true;
    }
  }
  Abandon(s);
  return false;
}

bool CycleRun::KubeNodeVictims(Search& s, const std::vector<Cand>& cands) {
  s.allow_borrowing = true;
  std::map<uint32_t, std::vector<Cand>> by_node;
  for (const Cand& c : cands) {
    std::vector<NodeId> nodes;
    AppendNodes(PlacementsOf(holders_[c.holder]), &nodes);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (NodeId n : nodes) by_node[n.value()].push_back(c);
  }
  auto more_important = [&](const Cand& a, const Cand& b) {
    const Holder& x = holders_[a.holder];
    const Holder& y = holders_[b.holder];
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.admitted_ms != y.admitted_ms) return x.admitted_ms < y.admitted_ms;
    return x.w->name < y.w->name;
  };
  struct Choice {
    std::vector<Cand> victims;
    int32_t highest = 0;
    int64_t sum = 0;
    int64_t earliest_of_highest = 0;
  };
  std::optional<Choice> best;
  for (auto& [node, list] : by_node) {
    const std::vector<NodeId> here = {NodeId(node)};
    auto fits = [&] { return SearchQuotaFits(s, s.need) && AnyPodFeasible(s.idx, here, *s.pods); };
    std::sort(list.begin(), list.end(), more_important);
    for (const Cand& c : list) RemoveHolder(holders_[c.holder]);
    if (!fits()) {
      for (const Cand& c : list) RestoreHolder(holders_[c.holder]);
      continue;
    }
    Choice ch;
    for (const Cand& c : list) {
      Holder& h = holders_[c.holder];
      RestoreHolder(h);
      if (!fits()) {
        RemoveHolder(h);
        ch.victims.push_back(c);
      }
    }
    for (const Cand& c : ch.victims) RestoreHolder(holders_[c.holder]);
    // Victims come most important first: the first holds the highest priority.
    ch.highest = holders_[ch.victims.front().holder].priority;
    ch.earliest_of_highest = holders_[ch.victims.front().holder].admitted_ms;
    for (const Cand& c : ch.victims) {
      // Priorities shifted to be non-negative, as kube-scheduler sums them.
      ch.sum += int64_t{holders_[c.holder].priority} + (int64_t{1} << 31);
    }
    auto key = [](const Choice& c) {
      return std::make_tuple(c.highest, c.sum, c.victims.size(), -c.earliest_of_highest);
    };
    if (!best || key(ch) < key(*best)) best = std::move(ch);
  }
  if (!best) return false;
  for (const Cand& c : best->victims) RemoveHolder(holders_[c.holder]);
  s.removed = best->victims;
  if (Check(s.idx, *s.combo, *s.pods, &s.amount, &s.fit_nodes) != Fit::kYes) {
    Abandon(s);
    return false;
  }
  return true;
}

namespace {

// Kueue's TargetClusterQueueOrdering: the queues to take victims from, found by walking down
// the preemptor's cohort tree from its root, at each cohort into the child of highest share
// (a cohort over a queue when equal) among those that may still yield candidates. A queue
// without candidates left, a queue other than the preemptor's that does not borrow and a
// cohort off the preemptor's path that does not borrow are pruned; so is a cohort whose
// children all are. Shares are those of the tree as it is when Next is called.
class FairTargets {
 public:
  FairTargets(const QuotaTree& tree, int preemptor) : tree_(tree), preemptor_(preemptor) {
    on_path_.assign(tree.num_nodes(), 0);
    pruned_.assign(tree.num_nodes(), 0);
    left_.resize(tree.num_queues());
    for (int n = tree.ParentOf(preemptor); n >= 0; n = tree.ParentOf(n)) {
      on_path_[n] = 1;
      root_ = n;
    }
  }
  std::vector<size_t>& left(int queue) { return left_[queue]; }
  // The next queue to take a victim from; -1 when none is left.
  int Next() {
    if (root_ < 0) return left_[preemptor_].empty() ? -1 : preemptor_;
    while (!pruned_[root_]) {
      if (const int q = NextIn(root_); q >= 0) return q;
    }
    return -1;
  }
  void Drop(int queue) { pruned_[queue] = 1; }
  // The shares Kueue's fair-sharing strategies compare: those of the preemptor's and the
  // target's ancestors just below their lowest common ancestor (the queues themselves when
  // they share a parent).
  int64_t PreemptorShare(int target) const {
    return tree_.NodeShareMilli(BelowLca(preemptor_, Lca(target)));
  }
  int64_t TargetShare(int target) const {
    return tree_.NodeShareMilli(BelowLca(target, Lca(target)));
  }

 private:
  int Lca(int target) const {
    int n = tree_.ParentOf(target);
    while (n >= 0 && !on_path_[n]) n = tree_.ParentOf(n);
    return n;
  }
  int BelowLca(int node, int lca) const {
    while (tree_.ParentOf(node) != lca) node = tree_.ParentOf(node);
    return node;
  }
  // Ties among queues go to the lower name, as among cohorts.
  int NextIn(int cohort) {
    int best_queue = -1, best_cohort = -1;
    int64_t queue_share = -1, cohort_share = -1;
    auto consider = [&](int child, int64_t share, int* best, int64_t* best_share) {
      if (share > *best_share ||
          (share == *best_share && tree_.NodeName(child) < tree_.NodeName(*best))) {
        *best_share = share;
        *best = child;
      }
    };
    for (int child : tree_.ChildrenOf(cohort)) {
      if (pruned_[child]) continue;
      const int64_t share = tree_.NodeShareMilli(child);
      const bool queue = tree_.IsQueueNode(child);
      const bool prune = queue ? (share == 0 && child != preemptor_) || left_[child].empty()
                               : share == 0 && !on_path_[child];
      if (prune) {
        pruned_[child] = 1;
      } else if (queue) {
        consider(child, share, &best_queue, &queue_share);
      } else {
        consider(child, share, &best_cohort, &cohort_share);
      }
    }
    if (best_queue < 0 && best_cohort < 0) {
      pruned_[cohort] = 1;
      return -1;
    }
    if (best_cohort >= 0 && cohort_share >= queue_share) return NextIn(best_cohort);
    return best_queue;
  }

  const QuotaTree& tree_;
  const int preemptor_;
  int root_ = -1;
  std::vector<uint8_t> on_path_, pruned_;
  std::vector<std::vector<size_t>> left_;  // per queue: its candidates left, in order
};

}  // namespace

bool CycleRun::FairMinimal(Search& s, const std::vector<Cand>& cands) {
  const int q = info_[s.idx].queue;
  s.allow_borrowing = true;
  const std::vector<FairStrategy>& strategies = c_.options_.fair_strategies;
  if (strategies.empty()) return false;
  auto allows = [&](FairStrategy st, int64_t preemptor_new, int64_t victim_old,
                    int64_t victim_new) {
    return st == FairStrategy::kLessThanOrEqualToFinalShare ? preemptor_new <= victim_new
                                                            : preemptor_new < victim_old;
  };
  // Shares are compared with the preemptor's usage added (Kueue's SimulateUsageAddition);
  // whether it fits is checked without.
  QuotaCharge added = ChargeFor(s.idx, *s.combo, s.need.sets);
  tree_.AddUsage(q, added, +1);
  auto take = [&](Cand c, PreemptionCause cause) {
    c.cause = cause;
    tree_.AddUsage(q, added, -1);
    const bool fits = RemoveAndCheck(s, c);
    added = ChargeFor(s.idx, *s.combo, s.need.sets);
    tree_.AddUsage(q, added, +1);
    return fits;
  };
  auto targets = [&](const std::vector<Cand>& from) {
    FairTargets t(tree_, q);
    for (size_t i = 0; i < from.size(); ++i) t.left(holders_[from[i].holder].queue).push_back(i);
    return t;
  };
  // Kueue's runFirstFsStrategy: a victim of the preemptor's own queue is taken as it comes;
  // one of another queue when the first strategy allows it, the others kept for the second.
  std::vector<Cand> retry;
  bool fits = false;
  FairTargets first = targets(cands);
  for (int t = first.Next(); t >= 0 && !fits; t = first.Next()) {
    std::vector<size_t>& left = first.left(t);
    if (t == q) {
      const Cand c = cands[left.front()];
      left.erase(left.begin());
      fits = take(c, PreemptionCause::kInClusterQueue);
      continue;
    }
    const int64_t preemptor_new = first.PreemptorShare(t);
    const int64_t victim_old = first.TargetShare(t);
    while (!left.empty()) {
      const Cand c = cands[left.front()];
      left.erase(left.begin());
      Holder& h = holders_[c.holder];
      ChargeHolder(h, -1);
      const int64_t victim_new = first.TargetShare(t);
      ChargeHolder(h, +1);
      if (allows(strategies[0], preemptor_new, victim_old, victim_new)) {
        fits = take(c, PreemptionCause::kInCohortFairSharing);
        break;  // the shares changed: the next target is chosen again
      }
      retry.push_back(c);
    }
  }
  // Kueue's runSecondFsStrategy: at most one victim per queue, its first candidate left.
  if (!fits && strategies.size() > 1) {
    FairTargets second = targets(retry);
    for (int t = second.Next(); t >= 0 && !fits; t = second.Next()) {
      if (allows(strategies[1], second.PreemptorShare(t), second.TargetShare(t), 0)) {
        fits = take(retry[second.left(t).front()], PreemptionCause::kInCohortFairSharing);
      }
      second.Drop(t);
    }
  }
  tree_.AddUsage(q, added, -1);
  if (!fits) {
    Abandon(s);
    return false;
  }
  FillBack(s);
  return true;
}

bool CycleRun::MayPreempt(size_t idx) {
  const PendingInfo& p = info_[idx];
  if (!p.can_preempt) return false;
  const PreemptionPolicy& pol = tree_.queue(p.queue).preemption;
  const bool may_reclaim =
      root_[p.queue] >= 0 && pol.reclaim_within_cohort != ReclaimPreemption::kNever;
  if (pol.within_queue == WithinQueuePreemption::kNever && !may_reclaim) return false;
  return !failed_preemptions_.contains(PreemptionKey(idx));
}

std::string CycleRun::PreemptionKey(size_t idx) {
  const PendingInfo& p = info_[idx];
  return std::to_string(p.queue) + "|" + std::to_string(p.priority) + "|" +
         std::to_string(ShapeOf(idx));
}

bool CycleRun::TryPreempt(size_t idx, const Attempt& attempt, std::string* reason) {
  if (!MayPreempt(idx)) return false;
  for (size_t ci = 0; ci < Combos(idx).size(); ++ci) {
    if (PreemptIn(idx, ci, attempt, reason)) return true;
  }
  failed_preemptions_.insert(PreemptionKey(idx));
  ++changes_;
  return false;
}

bool CycleRun::PreemptIn(size_t idx, size_t ci, const Attempt& attempt, std::string* reason) {
  const PendingInfo& p = info_[idx];
  const int q = p.queue;
  const int shape = ShapeOf(idx);
  const Combo& combo = Combos(idx)[ci];
  GangPods pods;
  if (!ConstrainedPods(idx, combo, &pods)) return false;
  Search s;
  s.idx = idx;
  s.combo = &combo;
  s.pods = &pods;
  s.charge = ChargeFor(idx, combo, p.lower.sets);
  // The flavor/resources that need preemption (Kueue's resourcesRequiringPreemption): those
  // whose quota is short; all charged ones when the quota fits and the room is short.
  bool any_short = false;
  s.needs.assign(s.charge.parts.size(), 0);
  for (size_t i = 0; i < s.charge.parts.size(); ++i) {
    const QuotaCharge::Part& part = s.charge.parts[i];
    if (part.amount == 0) continue;
    s.needs[i] = tree_.Available(q, part.flavor, part.resource) < part.amount ? 1 : 0;
    any_short = any_short || s.needs[i];
  }
  for (size_t i = 0; i < s.charge.parts.size() && !any_short; ++i) {
    s.needs[i] = s.charge.parts[i].amount > 0 ? 1 : 0;
  }
  std::vector<Cand> cands = FindCandidates(idx, s);
  if (cands.empty()) return false;
  // Quota alone, with every candidate gone: when it does not fit then, no set of victims
  // helps (checked on the quota tree only, no placement moved).
  for (const Cand& c : cands) ChargeHolder(holders_[c.holder], -1);
  const bool quota_possible = QuotaFits(idx, combo, p.lower);
  for (const Cand& c : cands) ChargeHolder(holders_[c.holder], +1);
  if (!quota_possible) return false;
  const std::string key = FailureKey(shape, combo);
  if (!FitsWhenAllEnd(idx, key, pods)) return false;
  // Kueue's candidatesOrdering: other queues' work before the own queue's, lowest priority,
  // most recently admitted; then fewest pods, most recently created, name.
  std::sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
    const Holder& x = holders_[a.holder];
    const Holder& y = holders_[b.holder];
    const bool xo = x.queue != q, yo = y.queue != q;
    if (xo != yo) return xo;
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.admitted_ms != y.admitted_ms) return x.admitted_ms > y.admitted_ms;
    if (x.pods != y.pods) return x.pods < y.pods;
    if (x.w->created_ms != y.w->created_ms) return x.w->created_ms > y.w->created_ms;
    return x.w->name < y.w->name;
  });
  // Known when admission found no room for this choice, or a workload of the same shape did
  // (when quota stopped this one before it looked).
  const bool no_room =
      (ci < attempt.no_room.size() && attempt.no_room[ci]) || KnownFailure(idx, key) != nullptr;
  auto fresh = [&] {
    s.removed.clear();
    s.gained.clear();
    s.fit_nodes.clear();
    s.known_no_room = no_room;
    // What the workload needs of quota: its request's lower bound, raised to what a simulated
    // placement actually charged (a MIG slice or a memory share charges more than its bound).
    s.need = p.lower;
  };
  fresh();
  if (!FindTargets(idx, s, cands, fresh)) return false;
  CommitPreemption(idx, combo, s, reason);
  return true;
}

// Kueue's findCandidates: the running work the workload may preempt under the search's flavor
// choice.
std::vector<CycleRun::Cand> CycleRun::FindCandidates(size_t idx, const Search& s) {
  const Workload& w = pending_[idx];
  const PendingInfo& p = info_[idx];
  const int q = p.queue;
  const PreemptionPolicy& pol = tree_.queue(q).preemption;
  const int root = root_[q];
  const bool may_reclaim = root >= 0 && pol.reclaim_within_cohort != ReclaimPreemption::kNever;
  // Within the queue, per withinClusterQueue (skipped when no running
  // work of the queue has a priority low enough).
  const bool within_any = pol.within_queue == WithinQueuePreemption::kLowerOrNewerEqualPriority
                              ? min_running_priority_[q] <= p.priority
                              : pol.within_queue == WithinQueuePreemption::kLowerPriority &&
                                    min_running_priority_[q] < p.priority;
  const bool kube = pol.style == PreemptionStyle::kKubeScheduler;
  std::vector<Cand> cands;
  if (kube) {
    // kube-scheduler: any running work of the queue of strictly lower priority, whatever it
    // is charged for (work outside queues has no quota).
    for (size_t hi = 0; hi < holders_.size() && min_running_priority_[q] < p.priority; ++hi) {
      const Holder& h = holders_[hi];
      if (h.queue == q && !h.victim && h.running_index != kNotRunning && h.priority < p.priority) {
        cands.push_back({hi, PreemptionCause::kPreemptionByScheduler});
      }
    }
  }
  if (within_any && !kube) {
    ForEachSharingFlavor(q, s.charge, [&](size_t hi) {
      const Holder& h = holders_[hi];
      const bool lower = h.priority < p.priority;
      const bool newer_equal = h.priority == p.priority && h.w->created_ms > w.created_ms;
      if (!UsesNeeded(h, s)) return;
      if ((pol.within_queue == WithinQueuePreemption::kLowerPriority && lower) ||
          (pol.within_queue == WithinQueuePreemption::kLowerOrNewerEqualPriority &&
           (lower || newer_equal))) {
        cands.push_back({hi, PreemptionCause::kInClusterQueue});
      }
    });
  }
  // In the cohort, per reclaimWithinCohort: work of the queues that borrow what is needed.
  if (may_reclaim) {
    for (int vq : root_queues_[root]) {
      if (vq == q || !tree_.queue(vq).reclaimable || !BorrowingInNeeded(vq, s)) continue;
      if (pol.reclaim_within_cohort != ReclaimPreemption::kAny &&
          min_running_priority_[vq] >= p.priority) {
        continue;
      }
      ForEachSharingFlavor(vq, s.charge, [&](size_t hi) {
        const Holder& h = holders_[hi];
        if (!UsesNeeded(h, s)) return;
        if (pol.reclaim_within_cohort == ReclaimPreemption::kAny || h.priority < p.priority) {
          cands.push_back({hi, PreemptionCause::kInCohortReclamation});
        }
      });
    }
  }
  // Never the workload's own preemptor: the quota it freed stays with it.
  if (!w.yields_to.empty()) {
    std::erase_if(cands, [&](const Cand& c) { return holders_[c.holder].w->name == w.yields_to; });
  }
  return cands;
}

// Kueue's GetTargets: the victims among `cands` that make room, left removed in `s` (`fresh`
// starts the search again).
bool CycleRun::FindTargets(size_t idx, Search& s, const std::vector<Cand>& cands,
                           const std::function<void()>& fresh) {
  const PendingInfo& p = info_[idx];
  const int q = p.queue;
  const PreemptionPolicy& pol = tree_.queue(q).preemption;
  const bool kube = pol.style == PreemptionStyle::kKubeScheduler;
  const GangPods& pods = *s.pods;
  std::vector<Cand> same_queue;
  for (const Cand& c : cands) {
    if (holders_[c.holder].queue == q) same_queue.push_back(c);
  }
  // Kueue's fitsResourceQuota: a queue that may not preempt while borrowing (no
  // borrowWithinCohort, no fair sharing) looks for victims only when the request fits its
  // nominal quota, or by reclaiming what others borrow in its cohort; a request only borrowing
  // can admit waits for quota instead (Kueue issue #1974).
  // And whether the queue uses less than its nominal quota of each: reclaiming in the cohort
  // is tried only then.
  bool within_nominal = true, under_nominal = true;
  for (size_t i = 0; i < s.charge.parts.size(); ++i) {
    const QuotaCharge::Part& part = s.charge.parts[i];
    if (!s.needs[i]) continue;
    within_nominal = within_nominal && part.amount <= tree_.Nominal(q, part.flavor, part.resource);
    under_nominal = under_nominal && tree_.UnderNominal(q, part.flavor, part.resource);
  }
  std::optional<int32_t> threshold;
  if (pol.borrow_within_cohort != BorrowWithinCohort::kNever) {
    threshold = p.priority;
    if (pol.max_priority_threshold && *pol.max_priority_threshold < *threshold) {
      threshold = *pol.max_priority_threshold + 1;
    }
  }
  const bool may_borrow_after = within_nominal || threshold || c_.options_.fair_sharing;
  bool fits = false;
  if (kube) {
    fits = pods.size() == 1 ? KubeNodeVictims(s, cands)
                            : Minimal(s, cands, /*allow_borrowing=*/true, std::nullopt);
  } else if (same_queue.size() == cands.size()) {
    fits = Minimal(s, cands, /*allow_borrowing=*/may_borrow_after, std::nullopt);
  } else {
    if (c_.options_.fair_sharing) {
      fits = FairMinimal(s, cands);
    } else if (threshold) {
      // Borrowing while preempting: with the queue at or above its nominal quota, only work
      // of the own queue or below the threshold.
      std::vector<Cand> allowed;
      for (const Cand& c : cands) {
        const Holder& h = holders_[c.holder];
        if (under_nominal || h.queue == q || h.priority < *threshold) allowed.push_back(c);
      }
      fits = Minimal(s, allowed, /*allow_borrowing=*/true, threshold);
    } else {
      // Without borrowWithinCohort, reclaiming in the cohort is tried only while the queue is
      // under its nominal quota, and the preemptor must not borrow after it; then only the
      // own queue's work, borrowing allowed.
      if (under_nominal) fits = Minimal(s, cands, /*allow_borrowing=*/false, std::nullopt);
      if (!fits && within_nominal) {
        fresh();
        fits = Minimal(s, same_queue, /*allow_borrowing=*/true, std::nullopt);
      }
    }
  }
  return fits;
}

// The preemption found: the victims' quota and devices pass to the preemptor, each victim gets
// its reason, and `reason` says what was preempted.
void CycleRun::CommitPreemption(size_t idx, const Combo& combo, const Search& s,
                                std::string* reason) {
  const Workload& w = pending_[idx];
  const PendingInfo& p = info_[idx];
  const int q = p.queue;
  const bool kube = tree_.queue(q).preemption.style == PreemptionStyle::kKubeScheduler;
  // The victims' devices stay busy until they have stopped, so no one else may be placed
  // there in this cycle; their quota passes to the preemptor, which holds it (nominated) so
  // that later workloads neither take it nor preempt again for the same room.
  for (const Cand& c : s.removed) MovePlacements(holders_[c.holder], +1);
  ChargeUsage(q, p.ns, ChargeFor(idx, combo, s.amount.sets), s.amount.total, +1);
  std::string names;
  int count = 0;
  for (const Cand& c : s.removed) {
    Holder& h = holders_[c.holder];
    h.victim = true;
    // A victim frees its room now, as far as reservations are concerned.
    h.end_ms = now_;
    by_end_valid_ = false;
    Preemption& pr = out_.preemptions.emplace_back();
    pr.running_index = h.running_index;
    pr.cause = c.cause;
    pr.victim = h.w->name;
    pr.preemptor = w.name;
    pr.reason = "preempted by " + w.name + " (" +
                (kube ? "" : "queue " + tree_.queue(q).name + ", ") + PriorityText(p.priority) +
                "): ";
    pr.reason += CauseText(c.cause, h, p.priority);
    names += (count++ ? ", " : "") + h.w->name;
  }
  *reason = "preempting " + std::to_string(count) + " workload" + (count == 1 ? "" : "s") +
            " to make room (" + names + "); " + *reason;
}

// Why a victim was preempted, after "preempted by <preemptor> (...): ".
std::string CycleRun::CauseText(PreemptionCause cause, const Holder& h, int32_t priority) const {
  switch (cause) {
    case PreemptionCause::kPreemptionByScheduler:
      return "higher priority (kube-scheduler's default preemption)";
    case PreemptionCause::kInClusterQueue:
      return h.priority < priority ? "higher priority in the same queue"
                                   : "older workload of equal priority in the same queue";
    case PreemptionCause::kInCohortReclamation:
      return "reclaiming quota that queue " + tree_.queue(h.queue).name + " borrowed in the cohort";
    case PreemptionCause::kInCohortReclaimWhileBorrowing:
      return "lower-priority work of queue " + tree_.queue(h.queue).name +
             " borrowing in the cohort (borrowWithinCohort)";
    case PreemptionCause::kInCohortFairSharing:
      return "fair sharing in the cohort: queue " + tree_.queue(h.queue).name +
             " holds a larger share";
    case PreemptionCause::kClusterQueueStopped:
      break;  // not a preemption: Run drains stopped queues itself
  }
  return "";
}

}  // namespace tessera::core::cycle
