#include "core/admission.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/plugins.h"

namespace tessera::core {

namespace {

constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::max();
constexpr size_t kNotRunning = static_cast<size_t>(-1);
// Most flavor combinations tried for one workload.
constexpr int kMaxFlavorCombos = 256;

// A flavor per quota resource (kNoFlavor where none).
using ResourceFlavors = std::array<int, kNumQuotaResources>;
constexpr ResourceFlavors kNoFlavors = {kNoFlavor, kNoFlavor, kNoFlavor};

// What a workload's pods take: per pod set (each charged to its own flavors) and in all (for
// the namespace quota).
struct Amounts {
  std::vector<QuotaVector> sets;
  QuotaVector total = {0, 0, 0};
};

Amounts AmountsOf(std::vector<QuotaVector> sets) {
  Amounts a;
  for (const QuotaVector& v : sets) {
    for (int r = 0; r < kNumQuotaResources; ++r) a.total[r] += v[r];
  }
  a.sets = std::move(sets);
  return a;
}

// Raises `a` to at least `b`, per pod set and in all, resource by resource.
void RaiseTo(const Amounts& b, Amounts* a) {
  a->sets.resize(std::max(a->sets.size(), b.sets.size()), QuotaVector{0, 0, 0});
  for (size_t i = 0; i < b.sets.size(); ++i) {
    for (int r = 0; r < kNumQuotaResources; ++r) {
      a->sets[i][r] = std::max(a->sets[i][r], b.sets[i][r]);
    }
  }
  for (int r = 0; r < kNumQuotaResources; ++r) a->total[r] = std::max(a->total[r], b.total[r]);
}

// A workload holding resources in the cycle's working state.
struct Holder {
  const Workload* w = nullptr;
  int queue = -1;
  int32_t priority = 0;
  QuotaCharge charge;
  // Per pod set, the flavor charged per resource (a member placed later is charged there).
  std::vector<ResourceFlavors> set_flavors;
  QuotaVector amount = {0, 0, 0};  // for the namespace quota
  int ns = -1;                     // its namespace's quota (NamespaceOf)
  int64_t admitted_ms = 0;
  int64_t end_ms = kNoEnd;
  size_t running_index = kNotRunning;    // into the running list, or
  size_t admission_index = kNotRunning;  // into this cycle's admissions
  int32_t pods = 0;
  bool victim = false;
};

struct PendingInfo {
  int queue = -1;
  int32_t priority = 0;
  bool can_preempt = true;
  Amounts lower;   // the request's lower bound
  int ns = -1;     // its namespace's quota (NamespaceOf)
  int shape = -1;  // interned ShapeKey, -1 until first needed
};

// A resource group of a queue: the resources it covers and its flavors, in order.
struct Group {
  std::vector<QuotaResource> covered;
  std::vector<int> flavors;
};

// The flavors a combo (per pod set and group of the queue, the flavor index or -1) gives each
// pod set, per resource.
std::vector<ResourceFlavors> SetFlavorsOf(const std::vector<Group>& groups,
                                          const std::vector<int>& combo, size_t sets) {
  std::vector<ResourceFlavors> out(sets, kNoFlavors);
  for (size_t s = 0; s < sets; ++s) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const int f = combo[s * groups.size() + g];
      if (f < 0) continue;
      for (QuotaResource r : groups[g].covered) out[s][static_cast<int>(r)] = f;
    }
  }
  return out;
}

enum class Block : uint8_t { kNone, kQuota, kPlacement };

struct Attempt {
  Block block = Block::kQuota;
  std::string reason;
  // The first flavor combination whose quota fits (for reservations), -1 when none.
  int quota_fit_combo = -1;
  // Per flavor combination: 1 when its pods were found not to fit the current state.
  std::vector<uint8_t> no_room;
  // Victims were chosen for it under a flavor choice before later choices were tried
  // (flavorFungibility.whenCanPreempt Preempt).
  bool preempting = false;
};

// `amount` charged to `flavor` per resource; nothing where a resource has no flavor.
QuotaCharge ChargeOf(const std::array<int, kNumQuotaResources>& flavor, const QuotaVector& amount) {
  QuotaCharge c;
  for (int r = 0; r < kNumQuotaResources; ++r) {
    c.Add(flavor[r], static_cast<QuotaResource>(r), amount[r]);
  }
  return c;
}

// The flavors a charge uses, each once, in the order of its parts.
std::vector<int> FlavorsOf(const QuotaCharge& c) {
  std::vector<int> out;
  for (const QuotaCharge::Part& p : c.parts) {
    if (std::find(out.begin(), out.end(), p.flavor) == out.end()) out.push_back(p.flavor);
  }
  return out;
}

std::string PriorityText(int32_t p) { return "priority " + std::to_string(p); }

// A workload's estimated runtime; kNoEnd when unknown.
int64_t RuntimeOrNoEnd(const Workload& w) {
  return w.estimated_runtime_ms > 0 ? w.estimated_runtime_ms : kNoEnd;
}

// When work started at `start` is expected to end; kNoEnd when its runtime is unknown.
int64_t ExpectedEnd(const Workload& w, int64_t start) {
  return w.estimated_runtime_ms > 0 ? start + w.estimated_runtime_ms : kNoEnd;
}

// Appends the nodes of `placements` to `nodes`.
void AppendNodes(const std::vector<std::optional<Placement>>& placements,
                 std::vector<NodeId>* nodes) {
  for (const std::optional<Placement>& p : placements) {
    if (p) nodes->push_back(p->node);
  }
}

}  // namespace

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

// The state of one cycle.
class CycleRun {
 public:
  CycleRun(const AdmissionCycle& cycle, Scheduler& placer, const ClusterState& snapshot,
           std::span<const Workload> pending, std::span<const AdmittedWorkload> running,
           int64_t now_ms)
      : c_(cycle),
        placer_(placer),
        state_(snapshot),
        tree_(cycle.tree_),
        pending_(pending),
        running_(running),
        now_(now_ms) {}

  CycleResult Run(std::span<const Reservation> held);

 private:
  // One pending workload's flavor choice: per pod set and group of its queue (index
  // set * groups + group), the flavor index; -1 where the set uses nothing the group covers.
  using Combo = std::vector<int>;

  void ChargeRunning();
  void ResolvePending();
  // The workload's flavor choices, in the order they are tried (cached per queue and the set of
  // resource groups the workload uses).
  const std::vector<Combo>& Combos(size_t idx);
  // The workload's interned ShapeKey: workloads of one shape place alike.
  int ShapeOf(size_t idx);
  // Each pod set's `amounts` charged to its flavors under `combo`.
  QuotaCharge ChargeFor(size_t idx, const Combo& combo,
                        const std::vector<QuotaVector>& amounts) const;
  // Pods constrained to the combo's flavors; false when a flavor contradicts the pods' own
  // selectors or GPU models.
  bool ConstrainedPods(size_t idx, const Combo& combo, GangPods* pods) const;
  // Index of the namespace's quota, -1 when it has none.
  int NamespaceOf(const std::string& ns);
  // Why `amount` more exceeds the quota of namespace index `ns`; empty when it fits.
  std::string NamespaceExplain(int ns, const QuotaVector& amount) const;

  Attempt TryAdmit(size_t idx);
  // Places the workload's gang for `combo`. With `keep`, holds it; otherwise rolls it back.
  // Reserved nodes are usable only by the reservation's owner and by work that ends before the
  // reservation starts.
  GangOutcome PlaceGang(size_t idx, const GangPods& pods, bool keep);
  enum class Fit : uint8_t { kNoQuota, kNoRoom, kYes };
  // Quota and room for the workload's `pods` under `combo` (a simulation; nothing stays held).
  // When it places, `*amount` is what the placement would charge and `*nodes` its nodes (also
  // when the exact charge then misses the quota: kNoQuota with nodes); otherwise nodes is empty.
  Fit Check(size_t idx, const Combo& combo, const GangPods& pods, Amounts* amount,
            std::vector<NodeId>* nodes);
  // Quota alone, for a charge of `amount` (namespace quota included).
  bool QuotaFits(size_t idx, const Combo& combo, const Amounts& amount) const;
  // True when some pod of `pods` passes the placement filters and device step on one of
  // `nodes` (with the reservations the workload may use open): necessary for the gang to fit
  // where it did not before these nodes gained room, and sufficient for a single pod.
  bool AnyPodFeasible(size_t idx, std::vector<NodeId> nodes, const GangPods& pods);
  // Whether the pods (under the flavor choice `key` names) fit once all work held in this cycle
  // has ended and no node is reserved: when not, neither preemption nor a reservation helps.
  bool FitsWhenAllEnd(size_t idx, const std::string& key, const GangPods& pods);
  // Whether workload `idx` may preempt at all: its priority class and queue policy allow it
  // and no workload of its queue, priority and shape has failed to in this cycle.
  bool MayPreempt(size_t idx);
  std::string PreemptionKey(size_t idx);
  // Preempts for `idx` under the first flavor choice where victims make room; on success
  // prefixes `reason` with what it preempts.
  bool TryPreempt(size_t idx, const Attempt& attempt, std::string* reason);
  // Preempts for `idx` under flavor choice `ci` when victims make room there.
  bool PreemptIn(size_t idx, size_t ci, const Attempt& attempt, std::string* reason);
  // A preemption candidate: a running holder and the reason it would be preempted for.
  struct Cand {
    size_t holder;
    PreemptionCause cause;
  };
  // One search for victims for pending workload `idx` under one flavor choice: what it has
  // removed (in order), and what the simulations found.
  struct Search {
    size_t idx = 0;
    const Combo* combo = nullptr;
    const GangPods* pods = nullptr;
    QuotaCharge charge;  // the request's lower bound under the combo
    // Per part of `charge`: whether it needs preemption (Kueue's
    // resourcesRequiringPreemption).
    std::vector<uint8_t> needs;
    bool allow_borrowing = true;  // false: the preemptor must fit without borrowing
    std::vector<Cand> removed;
    Amounts need;
    Amounts amount;
    std::vector<NodeId> fit_nodes;
    // Nodes that gained room since they were last looked at; while the workload is known not
    // to fit (known_no_room), it can only fit now if a pod fits on one of them.
    std::vector<NodeId> gained;
    bool known_no_room = false;
  };
  // Whether the holder is charged for a flavor/resource the search needs.
  bool UsesNeeded(const Holder& h, const Search& s) const;
  // Whether the queue (in a cohort) borrows a flavor/resource the search needs.
  bool BorrowingInNeeded(int queue, const Search& s) const;
  bool SearchQuotaFits(const Search& s, const Amounts& amount) const;
  // Removes the candidate; true when the workload then fits (quota, borrowing rule and room).
  bool RemoveAndCheck(Search& s, const Cand& c);
  void Abandon(Search& s);
  // Restores the removed victims the workload fits without (Kueue's fillBackWorkloads).
  void FillBack(Search& s);
  // Kueue's minimalPreemptions: removes candidates in order (skipping other queues once they
  // no longer borrow) until the workload fits, then fills back. With `threshold`
  // (borrowWithinCohort), taking a victim of another queue at or above it forbids borrowing.
  // On failure nothing stays removed.
  bool Minimal(Search& s, const std::vector<Cand>& cands, bool allow_borrowing,
               std::optional<int32_t> threshold);
  // kube-scheduler's SelectVictimsOnNode and pickOneNodeForPreemption for a one-pod workload:
  // per node holding candidates, all of them removed, then reprieved most important first
  // (higher priority, earlier start, name) while the pod still fits on that node; the node
  // whose victims have the lowest highest priority, then the lowest sum of priorities, the
  // fewest victims, the latest start among its highest-priority victims, the lowest id. The
  // chosen victims stay removed; on failure none does.
  bool KubeNodeVictims(Search& s, const std::vector<Cand>& cands);
  // Kueue's fairPreemptions over its cohort tree: victims from the queues FairTargets names
  // while the strategies allow it, comparing the shares of the preemptor's and the victim's
  // ancestors below their lowest common ancestor. borrowWithinCohort does not apply (as in
  // Kueue since fair sharing became hierarchical).
  bool FairMinimal(Search& s, const std::vector<Cand>& cands);
  void TryReserve(size_t idx, const Attempt& attempt, std::string* reason);
  // Whether workload `idx` may use the nodes of reservation `r`: its own, one it ends before,
  // or one of a lower-priority owner.
  bool MayUse(size_t idx, size_t r) const;
  // Uncordons the reservations workload `idx` may use; returns them for CloseReservations.
  std::vector<size_t> OpenReservations(size_t idx);
  void CloseReservations(const std::vector<size_t>& opened);
  // A placement failure's reason, saying which reservations held nodes the workload could not
  // use ("node(s) were unschedulable" alone would blame the nodes).
  std::string NameReservations(size_t idx, std::string reason) const;
  // Rolls back the placements of a gang this cycle placed (and told the reserve plugins of).
  void Unplace(const GangPods& pods, const GangOutcome& g);
  void Admit(size_t idx, const Combo& combo, const QuotaCharge& charge, const Amounts& amount,
             GangOutcome gang);
  // Places the members of running workloads that were admitted without them (beyond
  // min_member), one by one, in the room and quota left after this cycle's admissions.
  void GrowRunning();
  // Kueue's fair-sharing tournament (fair_sharing_iterator.go): the queue whose head goes
  // next. In each cohort tree the children of every cohort compete with the head each puts
  // forward (a queue its own, a cohort its winner): lowest share of the child once that head is
  // admitted, then higher priority, then older, then name. Winners of different trees and
  // queues outside cohorts, which share no quota, go by their share at the top, priority, age
  // and name. -1 when no head is left.
  int FairNextQueue(const std::vector<std::vector<size_t>>& lists,
                    const std::vector<size_t>& cursor);
  // Kueue's capacity reservation for a blocked StrictFIFO head whose queue cannot reclaim what it
  // lends (reclaimWithinCohort Never): the part of its request within the queue's unused
  // nominal quota is held for the rest of the cycle, so that borrowers in the cohort do not take
  // it.
  void HoldForStrictHead(size_t idx);

  const std::vector<std::optional<Placement>>& PlacementsOf(const Holder& h) const {
    return h.running_index != kNotRunning ? running_[h.running_index].placements
                                          : out_.admissions[h.admission_index].admitted.placements;
  }
  // Releases (sign -1) or re-allocates (+1) a holder's placements in the working state.
  void MovePlacements(const Holder& h, int sign);
  // Adds (sign +1) or removes (-1) a charge to a queue's quota usage and `amount` to its
  // namespace's.
  void ChargeUsage(int queue, int ns, const QuotaCharge& charge, const QuotaVector& amount,
                   int sign);
  void ChargeHolder(const Holder& h, int sign) {
    ChargeUsage(h.queue, h.ns, h.charge, h.amount, sign);
  }
  void RemoveHolder(Holder& h);
  void RestoreHolder(Holder& h);
  void DropReservation(size_t owner);
  void SetCordon(const std::vector<NodeId>& nodes, bool on);
  bool OwnsReservation(size_t idx) const;
  bool Qualifies(size_t idx, const Reservation& r) const;

  const AdmissionCycle& c_;
  Scheduler& placer_;
  ClusterState state_;
  QuotaTree tree_;
  std::span<const Workload> pending_;
  std::span<const AdmittedWorkload> running_;
  int64_t now_;

  CycleResult out_;
  // FairNextQueue's shares per queue: (cohort, share below it with the head admitted), from
  // the queue's parent up; valid while the tree's generation and the head are unchanged.
  struct HeadShares {
    size_t head = SIZE_MAX;
    std::vector<std::pair<int, int64_t>> at;
  };
  std::vector<HeadShares> head_shares_;
  uint64_t head_shares_generation_ = UINT64_MAX;
  // FairNextQueue's tournament winner per root cohort (-1: none, -2: to be run again) and the
  // queue it last returned, whose head has moved on since.
  std::vector<int> root_winner_;
  int last_fair_queue_ = -1;
  std::vector<Holder> holders_;
  // Holders per queue and flavor (a holder is listed under each flavor it is charged to).
  std::vector<std::vector<std::vector<size_t>>> by_queue_flavor_;
  void IndexHolder(size_t holder);
  // Calls fn(holder index) once for each running, non-victim holder of queue `q` charged to a
  // flavor that `charge` uses: as in Kueue, only such work is a preemption candidate.
  template <typename Fn>
  void ForEachSharingFlavor(int q, const QuotaCharge& charge, Fn fn) const;
  std::vector<int> root_;                                  // per queue: root cohort node, -1: none
  std::unordered_map<int, std::vector<int>> root_queues_;  // root cohort node -> its queues
  std::vector<PendingInfo> info_;
  std::vector<std::vector<Group>> groups_;  // per queue
  std::vector<ResourceFlavors> group_of_;   // per queue and resource: the group covering it
  // Namespaces with a quota, by index: the quota and what the cycle's holders use of it.
  std::unordered_map<std::string_view, int> ns_index_;
  std::vector<const NamespaceQuota*> ns_quota_;
  std::vector<QuotaVector> ns_used_;
  // Placement failures in this cycle, per shape and flavor choice: the estimated runtimes
  // (kNoEnd: unknown) and priorities that failed, and why. The state only loses room and
  // reservations only close nodes; a longer runtime or a lower priority opens a subset of the
  // reserved nodes a shorter one or a higher one opens, so a workload fails too when some
  // failure had a runtime at most its own and a priority at least its own. Kept per key as the
  // failures no other one covers. A failure while no reservation is in force covers every
  // runtime and priority.
  struct Failure {
    int64_t runtime = kNoEnd;
    int32_t priority = 0;
    std::string reason;
    std::string workload;  // whose placement failed
  };
  std::unordered_map<std::string, std::vector<Failure>> failed_shapes_;
  static std::string FailureKey(int shape, const Combo& combo);
  // The recorded failure that covers this workload under `key`, or null.
  const Failure* KnownFailure(size_t idx, const std::string& key) const;
  void RecordFailure(size_t idx, const std::string& key, const std::string& reason);
  std::unordered_set<std::string> failed_preemptions_;
  std::unordered_map<std::string, int> shapes_;
  struct WordsHash {
    size_t operator()(const std::vector<uint64_t>& v) const {
      uint64_t h = 1469598103934665603ULL;
      for (uint64_t x : v) h = (h ^ x) * 1099511628211ULL;
      return h;
    }
  };
  std::unordered_map<std::vector<uint64_t>, std::vector<Combo>, WordsHash> combos_;
  std::vector<const std::vector<Combo>*> combos_of_;  // per pending workload, once looked up
  std::vector<int> sizes_scratch_;                    // Combos' working space
  std::vector<uint64_t> key_scratch_;
  // Per queue: the lowest priority of its running work (a bound: victims are not removed).
  std::vector<int32_t> min_running_priority_;
  // The working state with every holder's placements released and no reservation cordoned,
  // built when first needed, and per failure key whether the pods fit on it.
  std::optional<ClusterState> all_ended_;
  std::unordered_map<std::string, bool> fits_when_all_end_;
  // Reservations in force and their owners (pending indices).
  std::vector<Reservation> reservations_;
  std::vector<size_t> reservation_owner_;
  std::vector<uint8_t> cordoned_by_snapshot_;
};

void CycleRun::IndexHolder(size_t holder) {
  const Holder& h = holders_[holder];
  for (int f : FlavorsOf(h.charge)) by_queue_flavor_[h.queue][f].push_back(holder);
}

template <typename Fn>
void CycleRun::ForEachSharingFlavor(int q, const QuotaCharge& charge, Fn fn) const {
  const std::vector<int> flavors = FlavorsOf(charge);
  for (size_t i = 0; i < flavors.size(); ++i) {
    for (size_t hi : by_queue_flavor_[q][flavors[i]]) {
      const Holder& h = holders_[hi];
      // Work admitted in this cycle is not preempted in it.
      if (h.victim || h.running_index == kNotRunning) continue;
      // Listed under an earlier flavor of the charge: already called.
      bool earlier = false;
      for (size_t k = 0; k < i; ++k) earlier = earlier || h.charge.UsesFlavor(flavors[k]);
      if (!earlier) fn(hi);
    }
  }
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
  for (size_t i = 0; i < pending_.size(); ++i) {
    const Workload& w = pending_[i];
    PendingInfo& p = info_[i];
    std::string& reason = out_.pending_reasons[i];
    auto lq = c_.local_queues_.find(w.namespace_name + "/" + w.local_queue);
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

int CycleRun::ShapeOf(size_t idx) {
  int& shape = info_[idx].shape;
  if (shape < 0) {
    shape =
        shapes_.emplace(ShapeKey(pending_[idx]), static_cast<int>(shapes_.size())).first->second;
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

namespace {

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

}  // namespace

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

void CycleRun::GrowRunning() {
  for (Holder& h : holders_) {
    if (h.running_index == kNotRunning || h.victim || h.queue < 0) continue;
    const AdmittedWorkload& a = running_[h.running_index];
    if (std::all_of(a.placements.begin(), a.placements.end(),
                    [](const std::optional<Placement>& p) { return p.has_value(); })) {
      continue;
    }
    GangPods pods = GangOf(a.workload);  // a run per pod set
    for (size_t set = 0; set < pods.num_runs(); ++set) {
      const size_t first = pods.start(set);
      const size_t end = std::min(first + pods.run(set).count, a.placements.size());
      // Why the set's unplaced members from `i` on wait (once one of them does not fit,
      // nothing has changed for the next ones, which are alike), a run of them at a time.
      auto wait_from = [&](size_t i, const std::string& reason) {
        while (i < end) {
          size_t j = i;
          while (j < end && !a.placements[j]) ++j;
          if (j > i) out_.waiting.push_back({h.running_index, i, j - i, reason});
          i = j + 1;
        }
      };
      if (tree_.queue(h.queue).stop != StopPolicy::kNone) {
        const std::string& why = tree_.queue(h.queue).stop_reason;
        wait_from(first, why.empty() ? "queue " + tree_.queue(h.queue).name + " is stopped" : why);
        continue;
      }
      const ResourceFlavors& set_flavors =
          set < h.set_flavors.size() ? h.set_flavors[set] : kNoFlavors;
      bool allowed = true;
      for (int r = 0; r < kNumQuotaResources; ++r) {
        const int f = set_flavors[r];
        bool earlier = false;  // applied for an earlier resource already
        for (int k = 0; k < r; ++k) earlier = earlier || set_flavors[k] == f;
        if (f != kNoFlavor && !earlier) {
          allowed = allowed && ApplyFlavor(tree_.flavor(f), &pods.mutable_pod(set));
        }
      }
      if (!allowed) {
        wait_from(first,
                  "the pod's node selector or GPU models exclude the flavors its job was "
                  "admitted to");
        continue;
      }
      const PodSpec& pod = pods.run(set).pod;
      for (size_t i = first; i < end; ++i) {
        if (a.placements[i]) continue;
        ++out_.placement_attempts;
        PlaceOutcome o = placer_.Schedule(state_, pod);
        if (!o.ok) {
          wait_from(i, o.reason);
          break;
        }
        const std::optional<Placement> one = o.placement;
        const QuotaVector amount = PlacedAmount(state_, std::span(&one, 1));
        const QuotaCharge charge = ChargeOf(set_flavors, amount);
        std::string over = NamespaceExplain(h.ns, amount);
        if (over.empty() && !tree_.Fits(h.queue, charge)) over = tree_.Explain(h.queue, charge);
        if (!over.empty()) {
          (void)placer_.Unreserve(state_, pod, o.placement);
          wait_from(i, over);
          break;
        }
        ChargeUsage(h.queue, h.ns, charge, amount, +1);
        for (int r = 0; r < kNumQuotaResources; ++r) h.amount[r] += amount[r];
        h.charge.Add(charge);
        out_.growths.push_back({h.running_index, i, std::move(o.placement)});
      }
    }
  }
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
    for (uint32_t n = 0; n < all_ended_->size(); ++n) {
      if (!cordoned_by_snapshot_[n]) (void)all_ended_->SetUnschedulable(NodeId(n), false);
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

void CycleRun::RecordFailure(size_t idx, const std::string& key, const std::string& reason) {
  if (OwnsReservation(idx)) return;
  Failure f{RuntimeOrNoEnd(pending_[idx]), info_[idx].priority, reason, pending_[idx].name};
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
      RecordFailure(idx, key, g.reason);
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
  return false;
}

bool CycleRun::PreemptIn(size_t idx, size_t ci, const Attempt& attempt, std::string* reason) {
  const Workload& w = pending_[idx];
  const PendingInfo& p = info_[idx];
  const int q = p.queue;
  const PreemptionPolicy& pol = tree_.queue(q).preemption;
  const int root = root_[q];
  const bool may_reclaim = root >= 0 && pol.reclaim_within_cohort != ReclaimPreemption::kNever;
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
  // Kueue's findCandidates. Within the queue, per withinClusterQueue (skipped when no running
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
  // Kueue's GetTargets.
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
  if (!fits) return false;
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
    Preemption& pr = out_.preemptions.emplace_back();
    pr.running_index = h.running_index;
    pr.cause = c.cause;
    pr.victim = h.w->name;
    pr.preemptor = w.name;
    pr.reason = "preempted by " + w.name + " (" +
                (kube ? "" : "queue " + tree_.queue(q).name + ", ") + PriorityText(p.priority) +
                "): ";
    switch (c.cause) {
      case PreemptionCause::kPreemptionByScheduler:
        pr.reason += "higher priority (kube-scheduler's default preemption)";
        break;
      case PreemptionCause::kInClusterQueue:
        pr.reason += h.priority < p.priority ? "higher priority in the same queue"
                                             : "older workload of equal priority in the same "
                                               "queue";
        break;
      case PreemptionCause::kInCohortReclamation:
        pr.reason +=
            "reclaiming quota that queue " + tree_.queue(h.queue).name + " borrowed in the cohort";
        break;
      case PreemptionCause::kInCohortReclaimWhileBorrowing:
        pr.reason += "lower-priority work of queue " + tree_.queue(h.queue).name +
                     " borrowing in the cohort (borrowWithinCohort)";
        break;
      case PreemptionCause::kInCohortFairSharing:
        pr.reason += "fair sharing in the cohort: queue " + tree_.queue(h.queue).name +
                     " holds a larger share";
        break;
      case PreemptionCause::kClusterQueueStopped:
        break;  // not a preemption: Run drains stopped queues itself
    }
    names += (count++ ? ", " : "") + h.w->name;
  }
  *reason = "preempting " + std::to_string(count) + " workload" + (count == 1 ? "" : "s") +
            " to make room (" + names + "); " + *reason;
  return true;
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
    return;
  }
  DropReservation(idx);
  // Nodes whose labels match some pod's node selector (per label class).
  std::vector<int8_t> class_ok(state_.num_classes(), -1);
  auto relevant = [&](NodeId n) {
    int8_t& ok = class_ok[state_.node(n).cls.value()];
    if (ok < 0) {
      const Labels& labels = state_.labels(n);
      ok = false;
      for (size_t r = 0; r < pods.num_runs() && !ok; ++r) {
        ok = pods.run(r).count > 0 && MatchesSelector(labels, pods.run(r).pod.node_selector);
      }
    }
    return ok == 1;
  };
  // Holders on such nodes, in the order they are expected to free their room.
  std::vector<size_t> order;
  for (size_t i = 0; i < holders_.size(); ++i) {
    for (const std::optional<Placement>& p : PlacementsOf(holders_[i])) {
      if (p && relevant(p->node)) {
        order.push_back(i);
        break;
      }
    }
  }
  // Ties by holder index: running work in input order, then this cycle's admissions.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Holder& x = holders_[a];
    const Holder& y = holders_[b];
    return std::tie(x.end_ms, x.admitted_ms, a) < std::tie(y.end_ms, y.admitted_ms, b);
  });
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
}

void CycleRun::DropReservation(size_t owner) {
  for (size_t r = 0; r < reservations_.size(); ++r) {
    if (reservation_owner_[r] != owner) continue;
    SetCordon(reservations_[r].nodes, false);
    reservations_.erase(reservations_.begin() + static_cast<std::ptrdiff_t>(r));
    reservation_owner_.erase(reservation_owner_.begin() + static_cast<std::ptrdiff_t>(r));
    return;
  }
}

int CycleRun::FairNextQueue(const std::vector<std::vector<size_t>>& lists,
                            const std::vector<size_t>& cursor) {
  const int nq = tree_.num_queues();
  if (head_shares_generation_ != tree_.generation()) {
    head_shares_.assign(nq, {});
    root_winner_.assign(tree_.num_nodes(), -2);
  } else if (last_fair_queue_ >= 0 && tree_.RootOf(last_fair_queue_) >= 0) {
    root_winner_[tree_.RootOf(last_fair_queue_)] = -2;
  }
  for (int q = 0; q < nq; ++q) {
    const int parent = tree_.ParentOf(q);
    if (cursor[q] >= lists[q].size() || parent < 0) continue;
    const size_t i = lists[q][cursor[q]];
    HeadShares& hs = head_shares_[q];
    if (hs.head == i) continue;
    hs.head = i;
    hs.at.clear();
    const QuotaCharge charge = ChargeFor(i, Combos(i).front(), info_[i].lower.sets);
    hs.at.emplace_back(parent, tree_.ShareMilli(q, &charge));
    if (tree_.ParentOf(parent) < 0) continue;  // a queue's own share needs no simulation
    tree_.AddUsage(q, charge, +1);
    for (int n = parent; tree_.ParentOf(n) >= 0; n = tree_.ParentOf(n)) {
      hs.at.emplace_back(tree_.ParentOf(n), tree_.NodeShareMilli(n));
    }
    tree_.AddUsage(q, charge, -1);
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
  std::vector<uint8_t> root_done(tree_.num_nodes(), 0);
  for (int q = 0; q < nq; ++q) {
    if (cursor[q] >= lists[q].size()) continue;
    const int root = tree_.RootOf(q);
    int cand = q;
    if (root >= 0) {
      if (root_done[root]) continue;
      root_done[root] = 1;
      if (root_winner_[root] == -2) root_winner_[root] = winner(winner, root);
      cand = root_winner_[root];
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
    Attempt a = TryAdmit(idx);
    if (a.block != Block::kNone) {
      std::string reason = std::move(a.reason);
      const bool preempting = a.preempting || TryPreempt(idx, a, &reason);
      if (!preempting && a.block == Block::kPlacement && c_.options_.backfill &&
          !reserved_queue[q] && reservations_made < c_.options_.max_reservations) {
        reserved_queue[q] = 1;
        ++reservations_made;
        TryReserve(idx, a, &reason);
      }
      out_.pending_reasons[idx] = std::move(reason);
      if (!preempting) HoldForStrictHead(idx);
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
  return std::move(out_);
}

CycleResult AdmissionCycle::Run(Scheduler& placer, const ClusterState& snapshot,
                                std::span<const Workload> pending,
                                std::span<const AdmittedWorkload> running, int64_t now_ms,
                                std::span<const Reservation> held) const {
  CycleRun run(*this, placer, snapshot, pending, running, now_ms);
  return run.Run(held);
}

}  // namespace tessera::core
