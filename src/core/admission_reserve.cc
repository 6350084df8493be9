// Reservations and backfill: room held for a blocked head, who may use it meanwhile, and
// placing a gang with them (see core/cycle_run.h).
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

bool CycleRun::Qualifies(size_t idx, const Reservation& r) const {
  const int64_t runtime = pending_[idx].estimated_runtime_ms;
  return runtime > 0 && r.start_ms && now_ + runtime <= *r.start_ms;
}

bool CycleRun::OwnsReservation(size_t idx) const {
  return std::find(reservation_owner_.begin(), reservation_owner_.end(), idx) !=
         reservation_owner_.end();
}

void CycleRun::SetCordon(const std::vector<NodeId>& nodes, bool on) {
  for (NodeId n : nodes) {
    if (cordoned_by_snapshot_[n.value()]) continue;
    Status s = state_.SetUnschedulable(n, on);
    (void)s;
  }
}

bool CycleRun::MayUse(size_t idx, size_t r) const {
  // A reservation holds only against work of lower or equal priority that would delay it.
  return reservation_owner_[r] == idx || Qualifies(idx, reservations_[r]) ||
         info_[idx].priority > info_[reservation_owner_[r]].priority;
}

std::vector<size_t> CycleRun::OpenReservations(size_t idx) {
  std::vector<size_t> opened;
  for (size_t r = 0; r < reservations_.size(); ++r) {
    if (MayUse(idx, r)) {
      SetCordon(reservations_[r].nodes, false);
      opened.push_back(r);
    }
  }
  return opened;
}

std::string CycleRun::NameReservations(size_t idx, std::string reason) const {
  std::string held;
  size_t nodes = 0;
  for (size_t r = 0; r < reservations_.size(); ++r) {
    if (MayUse(idx, r)) continue;
    const size_t owner = reservation_owner_[r];
    nodes += reservations_[r].nodes.size();
    if (!held.empty()) continue;
    held = pending_[owner].name +
           (reservations_[r].start_ms
                ? " until its start at " + std::to_string(*reservations_[r].start_ms) + " ms"
                : " until running work ends");
  }
  if (nodes == 0) return reason;
  return reason + "; " + std::to_string(nodes) + " node(s) held for " + held +
         " (backfill: only work of higher priority, or that ends before, may use them)";
}

void CycleRun::CloseReservations(const std::vector<size_t>& opened) {
  for (size_t r : opened) SetCordon(reservations_[r].nodes, true);
}

GangOutcome CycleRun::PlaceGang(size_t idx, const GangPods& pods, bool keep) {
  const std::vector<size_t> opened = OpenReservations(idx);
  ++out_.placement_attempts;
  GangOutcome g = placer_.ScheduleGang(state_, pods, pending_[idx].min_member);
  CloseReservations(opened);
  if (g.ok && !keep) Unplace(pods, g);
  return g;
}

bool CycleRun::AnyPodFeasible(size_t idx, std::vector<NodeId> nodes, const GangPods& pods) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  const std::vector<size_t> opened = OpenReservations(idx);
  bool any = false;
  // Members of one run are alike: its pod stands for them all.
  for (size_t r = 0; r < pods.num_runs() && !any; ++r) {
    if (pods.run(r).count > 0) any = placer_.AnyFeasible(state_, pods.run(r).pod, nodes);
  }
  CloseReservations(opened);
  return any;
}

bool CycleRun::FitsWhenAllEnd(size_t idx, const std::string& key, const GangPods& pods) {
  auto it = fits_when_all_end_.find(key);
  if (it != fits_when_all_end_.end()) return it->second;
  if (!all_ended_) {
    all_ended_ = state_;
    for (const Holder& h : holders_) {
      for (const std::optional<Placement>& p : PlacementsOf(h)) {
        if (p) (void)all_ended_->Release(*p);
      }
    }
    // Only the nodes reservations cordoned are opened (a node written needlessly would cost a
    // copy of the whole topology on the first write).
    for (uint32_t n = 0; n < all_ended_->size(); ++n) {
      if (!cordoned_by_snapshot_[n] && all_ended_->node(NodeId(n)).unschedulable) {
        (void)all_ended_->SetUnschedulable(NodeId(n), false);
      }
    }
  }
  ++out_.placement_attempts;
  GangOutcome g = placer_.ScheduleGang(*all_ended_, pods, pending_[idx].min_member);
  for (size_t i = 0; i < g.placements.size(); ++i) {
    if (g.placements[i]) (void)placer_.Unreserve(*all_ended_, pods.pod(i), *g.placements[i]);
  }
  fits_when_all_end_.emplace(key, g.ok);
  return g.ok;
}

void CycleRun::Unplace(const GangPods& pods, const GangOutcome& g) {
  for (size_t i = 0; i < g.placements.size(); ++i) {
    if (g.placements[i]) {
      Status s = placer_.Unreserve(state_, pods.pod(i), *g.placements[i]);
      (void)s;
    }
  }
}

const std::vector<size_t>& CycleRun::HoldersByEnd() {
  // Ties by holder index: running work in input order, then this cycle's admissions.
  auto before = [&](size_t a, size_t b) {
    const Holder& x = holders_[a];
    const Holder& y = holders_[b];
    return std::tie(x.end_ms, x.admitted_ms, a) < std::tie(y.end_ms, y.admitted_ms, b);
  };
  if (!by_end_valid_) {
    by_end_.resize(holders_.size());
    for (size_t i = 0; i < holders_.size(); ++i) by_end_[i] = i;
    std::sort(by_end_.begin(), by_end_.end(), before);
    by_end_valid_ = true;
  }
  // Holders admitted since: each put in its place.
  for (size_t i = by_end_.size(); i < holders_.size(); ++i) {
    by_end_.insert(std::lower_bound(by_end_.begin(), by_end_.end(), i, before), i);
  }
  return by_end_;
}

void CycleRun::TryReserve(size_t idx, const Attempt& attempt, std::string* reason) {
  // The first flavor choice whose quota fits and whose pods fit once running work ends.
  const std::vector<Combo>& combos = Combos(idx);
  const int shape = ShapeOf(idx);
  GangPods pods;
  bool found = false;
  for (size_t ci = std::max(attempt.quota_fit_combo, 0); ci < combos.size() && !found; ++ci) {
    found = QuotaFits(idx, combos[ci], info_[idx].lower) &&
            ConstrainedPods(idx, combos[ci], &pods) &&
            FitsWhenAllEnd(idx, FailureKey(shape, combos[ci]), pods);
  }
  if (!found) {
    *reason += "; does not fit even when running work ends (no nodes reserved)";
    out_.pending_places[idx].fits_when_all_end = QueuePlace::Fit::kNo;
    return;
  }
  out_.pending_places[idx].fits_when_all_end = QueuePlace::Fit::kYes;
  DropReservation(idx);
  // Nodes whose labels match some pod's node selector (per label class).
  std::vector<int8_t> class_ok(state_.num_classes(), -1);
  if (node_class_.empty()) {
    node_class_.resize(state_.size());
    for (uint32_t n = 0; n < state_.size(); ++n)
      node_class_[n] = state_.node(NodeId(n)).cls.value();
  }
  auto relevant = [&](NodeId n) {
    int8_t& ok = class_ok[node_class_[n.value()]];
    if (ok < 0) {
      const Labels& labels = state_.labels(n);
      ok = false;
      for (size_t r = 0; r < pods.num_runs() && !ok; ++r) {
        ok = pods.run(r).count > 0 && MatchesSelector(labels, pods.run(r).pod.node_selector);
      }
    }
    return ok == 1;
  };
  // Holders on such nodes (found in their own order, which reads memory in order), in the
  // order they are expected to free their room.
  std::vector<uint8_t> on_relevant(holders_.size(), 0);
  for (size_t i = 0; i < holders_.size(); ++i) {
    for (const std::optional<Placement>& p : PlacementsOf(holders_[i])) {
      if (p && relevant(p->node)) {
        on_relevant[i] = 1;
        break;
      }
    }
  }
  std::vector<size_t> order;
  for (size_t i : HoldersByEnd()) {
    if (on_relevant[i]) order.push_back(i);
  }
  // The fewest holders (a prefix of `order`) whose end makes room: found by doubling, then
  // bisection, moving placements in and out of the state incrementally.
  size_t released = 0;
  auto release_first = [&](size_t k) {
    while (released < k) MovePlacements(holders_[order[released++]], -1);
    while (released > k) MovePlacements(holders_[order[--released]], +1);
  };
  std::vector<NodeId> nodes;
  // `lo`: a prefix known not to make room. Beyond it, only the nodes the extra holders free
  // can make a difference; no simulation when no pod could fit on any of them.
  auto fits_after = [&](size_t k, size_t lo) {
    std::vector<NodeId> gained;
    for (size_t i = lo; i < k; ++i) AppendNodes(PlacementsOf(holders_[order[i]]), &gained);
    release_first(k);
    if (!AnyPodFeasible(idx, gained, pods)) return false;
    GangOutcome g = PlaceGang(idx, pods, /*keep=*/false);
    nodes.clear();
    AppendNodes(g.placements, &nodes);
    return g.ok;
  };
  size_t lo = 0, hi = 0;
  for (size_t k = 1; k <= order.size() && hi == 0; k = std::min(2 * k, order.size())) {
    if (fits_after(k, lo)) {
      hi = k;
    } else {
      lo = k;
      if (k == order.size()) break;
    }
  }
  if (hi == 0) {
    release_first(0);
    *reason += "; does not fit even when running work ends (no nodes reserved)";
    out_.pending_places[idx].fits_when_all_end = QueuePlace::Fit::kNo;
    return;
  }
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (fits_after(mid, lo) ? hi : lo) = mid;
  }
  fits_after(hi, 0);
  release_first(0);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  Reservation r;
  r.workload = pending_[idx].name;
  r.nodes = nodes;
  const int64_t end = holders_[order[hi - 1]].end_ms;
  if (end != kNoEnd) r.start_ms = std::max(end, now_);
  SetCordon(r.nodes, true);
  *reason += "; reserved " + std::to_string(r.nodes.size()) + " node" +
             (r.nodes.size() == 1 ? "" : "s") + " to start " +
             (r.start_ms ? "at " + std::to_string(*r.start_ms) + " ms"
                         : "when running work ends (runtimes unknown)");
  reservations_.push_back(std::move(r));
  reservation_owner_.push_back(idx);
  ++changes_;
}

void CycleRun::DropReservation(size_t owner) {
  for (size_t r = 0; r < reservations_.size(); ++r) {
    if (reservation_owner_[r] != owner) continue;
    SetCordon(reservations_[r].nodes, false);
    reservations_.erase(reservations_.begin() + static_cast<std::ptrdiff_t>(r));
    reservation_owner_.erase(reservation_owner_.begin() + static_cast<std::ptrdiff_t>(r));
    ++changes_;
    return;
  }
}

int CycleRun::FairNextQueue(const std::vector<std::vector<size_t>>& lists,
                            const std::vector<size_t>& cursor) {
  const int nq = tree_.num_queues();
  // Between two calls only the queue returned last has a new head, unless usage changed.
  const bool all = head_shares_generation_ != tree_.generation();
  if (all) {
    head_shares_.assign(nq, {});
    root_winner_.assign(tree_.num_nodes(), -2);
  } else if (last_fair_queue_ >= 0 && tree_.RootOf(last_fair_queue_) >= 0) {
    root_winner_[tree_.RootOf(last_fair_queue_)] = -2;
  }
  if (fair_entrants_.empty()) {
    // Each cohort tree once, and each queue outside cohorts; no two heads tie (names differ),
    // so the order they are compared in does not matter.
    std::vector<uint8_t> seen(tree_.num_nodes(), 0);
    for (int q = 0; q < nq; ++q) {
      const int root = tree_.RootOf(q);
      if (root < 0) {
        fair_entrants_.emplace_back(q, -1);
      } else if (!seen[root]) {
        seen[root] = 1;
        fair_entrants_.emplace_back(-1, root);
      }
    }
  }
  auto refresh = [&](int q) {
    const int parent = tree_.ParentOf(q);
    if (cursor[q] >= lists[q].size() || parent < 0) return;
    const size_t i = lists[q][cursor[q]];
    HeadShares& hs = head_shares_[q];
    if (hs.head == i) return;
    hs.head = i;
    hs.at.clear();
    const QuotaCharge charge = ChargeFor(i, Combos(i).front(), info_[i].lower.sets);
    hs.at.emplace_back(parent, tree_.ShareMilli(q, &charge));
    if (tree_.ParentOf(parent) < 0) return;  // a queue's own share needs no simulation
    tree_.AddUsage(q, charge, +1);
    for (int n = parent; tree_.ParentOf(n) >= 0; n = tree_.ParentOf(n)) {
      hs.at.emplace_back(tree_.ParentOf(n), tree_.NodeShareMilli(n));
    }
    tree_.AddUsage(q, charge, -1);
  };
  if (all) {
    for (int q = 0; q < nq; ++q) refresh(q);
  } else if (last_fair_queue_ >= 0) {
    refresh(last_fair_queue_);
  }
  head_shares_generation_ = tree_.generation();
  auto share_at = [&](int q, int cohort) -> int64_t {
    for (const auto& [c, v] : head_shares_[q].at) {
      if (c == cohort) return v;
    }
    return 0;
  };
  auto key = [&](int q, int cohort) {
    const size_t i = lists[q][cursor[q]];
    return std::make_tuple(share_at(q, cohort), -info_[i].priority, pending_[i].created_ms,
                           std::string_view(pending_[i].name));
  };
  auto winner = [&](auto& self, int cohort) -> int {
    int best = -1;
    for (int child : tree_.ChildrenOf(cohort)) {
      const int cand = !tree_.IsQueueNode(child)             ? self(self, child)
                       : cursor[child] < lists[child].size() ? child
                                                             : -1;
      if (cand >= 0 && (best < 0 || key(cand, cohort) < key(best, cohort))) best = cand;
    }
    return best;
  };
  int best = -1;
  int best_root = -1;
  for (const auto& [queue, root] : fair_entrants_) {
    int cand = queue;
    if (root >= 0) {
      if (root_winner_[root] == -2) root_winner_[root] = winner(winner, root);
      cand = root_winner_[root];
    } else if (cursor[queue] >= lists[queue].size()) {
      continue;
    }
    if (cand < 0) continue;
    if (best < 0 || key(cand, root) < key(best, best_root)) {
      best = cand;
      best_root = root;
    }
  }
  last_fair_queue_ = best;
  return best;
}

}  // namespace tessera::core::cycle
