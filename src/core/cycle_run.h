// Inside the admission cycle (core/admission.h is its interface): the state of one cycle,
// CycleRun, and the small types its parts share. Its member functions are defined by concern,
// one file each, along Kueue's seams:
//
//   admission.cc            the cycle's order: charge what runs, resolve what waits, queue
//                           order (classic and fair sharing), then admit, preempt or reserve
//   admission_flavors.cc    flavor assignment: the combinations a workload may take, whether
//                           their quota fits, and the attempt to admit it (TryAdmit)
//   admission_preempt.cc    preemption: in the queue, reclaim in the cohort, fair sharing
//                           (victim search, minimal sets, fill-back)
//   admission_reserve.cc    reservations and backfill: room held for a blocked head, who may
//                           use it meanwhile, and placing a gang with them
//   admission_grow.cc       the growth of running elastic gangs
//
// Only those files include it.
#ifndef TESSERA_CORE_CYCLE_RUN_H_
#define TESSERA_CORE_CYCLE_RUN_H_

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/admission.h"
#include "core/plugins.h"

namespace tessera::core::cycle {

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

inline Amounts AmountsOf(std::vector<QuotaVector> sets) {
  Amounts a;
  for (const QuotaVector& v : sets) {
    for (int r = 0; r < kNumQuotaResources; ++r) a.total[r] += v[r];
  }
  a.sets = std::move(sets);
  return a;
}

// Raises `a` to at least `b`, per pod set and in all, resource by resource.
inline void RaiseTo(const Amounts& b, Amounts* a) {
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

// FNV-1a over 64-bit words: the cycle's hash keys of interned choices and verdicts.
inline size_t HashWords(std::span<const uint64_t> words) {
  uint64_t h = 1469598103934665603ULL;
  for (uint64_t x : words) h = (h ^ x) * 1099511628211ULL;
  return h;
}

// A resource group of a queue: the resources it covers and its flavors, in order.
struct Group {
  std::vector<QuotaResource> covered;
  std::vector<int> flavors;
};

// The flavors a combo (per pod set and group of the queue, the flavor index or -1) gives each
// pod set, per resource.
inline std::vector<ResourceFlavors> SetFlavorsOf(const std::vector<Group>& groups,
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
  // Blocked by placement, and under every flavor choice its pods could never be placed
  // (GangOutcome::never_fits), whatever ends.
  bool never_fits = false;
};

// `amount` charged to `flavor` per resource; nothing where a resource has no flavor.
inline QuotaCharge ChargeOf(const std::array<int, kNumQuotaResources>& flavor,
                            const QuotaVector& amount) {
  QuotaCharge c;
  for (int r = 0; r < kNumQuotaResources; ++r) {
    c.Add(flavor[r], static_cast<QuotaResource>(r), amount[r]);
  }
  return c;
}

// The flavors a charge uses, each once, in the order of its parts.
inline std::vector<int> FlavorsOf(const QuotaCharge& c) {
  std::vector<int> out;
  for (const QuotaCharge::Part& p : c.parts) {
    if (std::find(out.begin(), out.end(), p.flavor) == out.end()) out.push_back(p.flavor);
  }
  return out;
}

inline std::string PriorityText(int32_t p) { return "priority " + std::to_string(p); }

// A workload's estimated runtime; kNoEnd when unknown.
inline int64_t RuntimeOrNoEnd(const Workload& w) {
  return w.estimated_runtime_ms > 0 ? w.estimated_runtime_ms : kNoEnd;
}

// When work started at `start` is expected to end; kNoEnd when its runtime is unknown.
inline int64_t ExpectedEnd(const Workload& w, int64_t start) {
  return w.estimated_runtime_ms > 0 ? start + w.estimated_runtime_ms : kNoEnd;
}

// Appends the nodes of `placements` to `nodes`.
inline void AppendNodes(const std::vector<std::optional<Placement>>& placements,
                        std::vector<NodeId>* nodes) {
  for (const std::optional<Placement>& p : placements) {
    if (p) nodes->push_back(p->node);
  }
}

// Constrains a pod to a flavor: its node labels and GPU models, its tolerations; false when the
// pod contradicts them or does not tolerate the flavor's nodeTaints (admission_flavors.cc).
bool ApplyFlavor(const ResourceFlavor& flavor, PodSpec* p);

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
  // Tries pending workload `idx`, the head of its queue, or gives it the verdict of an equal
  // one; false when it stays waiting (its reason set). `reserved_queue`: whether its queue
  // has tried a reservation in this cycle.
  bool Decide(size_t idx, uint8_t& reserved_queue, int& reservations_made);
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
  // The stages of PreemptIn: the candidates (Kueue's findCandidates), the victims among them
  // (GetTargets; `fresh` starts the search again), and the preemption recorded.
  std::vector<Cand> FindCandidates(size_t idx, const Search& s);
  bool FindTargets(size_t idx, Search& s, const std::vector<Cand>& cands,
                   const std::function<void()>& fresh);
  void CommitPreemption(size_t idx, const Combo& combo, const Search& s, std::string* reason);
  std::string CauseText(PreemptionCause cause, const Holder& h, int32_t priority) const;
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
  // Every holder, in the order it is expected to free its room (end, start, index); kept
  // from one reservation to the next.
  const std::vector<size_t>& HoldersByEnd();
  std::vector<size_t> by_end_;
  bool by_end_valid_ = false;
  // Each node's label class (cordons, the only node changes in a cycle, leave it), for
  // TryReserve's scans.
  std::vector<uint32_t> node_class_;
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
  // FairNextQueue's top-level entrants: (queue, -1) for a queue outside cohorts, (-1, root)
  // for a cohort tree.
  std::vector<std::pair<int, int>> fair_entrants_;
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
  std::string lq_key_;                      // ResolvePending's working space
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
    bool never = false;    // GangOutcome::never_fits
  };
  std::unordered_map<std::string, std::vector<Failure>> failed_shapes_;
  static std::string FailureKey(int shape, const Combo& combo);
  // The recorded failure that covers this workload under `key`, or null.
  const Failure* KnownFailure(size_t idx, const std::string& key) const;
  void RecordFailure(size_t idx, const std::string& key, const std::string& reason, bool never);
  std::unordered_set<std::string> failed_preemptions_;
  // Verdicts of waiting workloads, for their equals (CycleOptions::reuse_equal_verdicts). The
  // epoch names the working state: the node state's versions, the quota tree's generation and
  // a count of the cycle's other changes (failures recorded, preemptions found impossible,
  // reservations made or dropped). A verdict is kept only from a try that changed none of it,
  // and reused only while the epoch is the one it was found in.
  struct Epoch {
    uint64_t shape = 0, usage = 0, quota = 0, other = 0;
    bool operator==(const Epoch&) const = default;
  };
  Epoch CurrentEpoch() const {
    return {state_.shape_version(), state_.last_usage_version(), tree_.generation(), changes_};
  }
  struct VerdictKey {
    int queue = -1, shape = -1, ns = -1;
    int32_t priority = 0;
    bool can_preempt = false;
    int64_t runtime = 0;
    bool operator==(const VerdictKey&) const = default;
  };
  struct VerdictKeyHash {
    size_t operator()(const VerdictKey& k) const {
      const uint64_t words[] = {uint64_t(k.queue),    uint64_t(k.shape),       uint64_t(k.ns),
                                uint64_t(k.priority), uint64_t(k.can_preempt), uint64_t(k.runtime)};
      return HashWords(words);
    }
  };
  struct Verdict {
    Epoch epoch;
    std::string reason;
    QueuePlace::Fit fit = QueuePlace::Fit::kUnknown;
  };
  VerdictKey VerdictKeyOf(size_t idx);
  std::unordered_map<VerdictKey, Verdict, VerdictKeyHash> verdicts_;
  uint64_t changes_ = 0;
  std::unordered_map<std::string, int> shapes_;
  struct WordsHash {
    size_t operator()(const std::vector<uint64_t>& v) const { return HashWords(v); }
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

}  // namespace tessera::core::cycle

#endif  // TESSERA_CORE_CYCLE_RUN_H_
