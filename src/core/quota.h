// Quota arithmetic over the cohort tree, with Kueue's hierarchical semantics:
//
// - A node (queue or cohort) has per flavor and resource a nominal quota, an optional borrowing
//   limit and an optional lending limit. Its subtree quota is its nominal plus what its children
//   put in the pool; the part of a child's subtree quota above its lending limit is guaranteed to
//   the child and never lent.
// - A cohort's usage is what its children use beyond their guaranteed part.
// - What a queue may still take is its unused guaranteed quota plus what its parent has
//   available, capped by its borrowing limit; a root has its subtree quota minus its usage.
//
// Fair sharing uses the weighted dominant-resource share of a queue: the largest fraction, over
// resources, of the parent's pool that the queue uses beyond its own quota, divided by its weight.
#ifndef TESSERA_CORE_QUOTA_H_
#define TESSERA_CORE_QUOTA_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/queue_spec.h"
#include "core/status.h"

namespace tessera::core {

inline constexpr int kNoFlavor = -1;

// What a workload charges: amounts of quota resources, each in a flavor. A resource the queue
// does not cover is not charged (and not limited by the queue). A workload's pod sets may be
// charged to different flavors of one resource.
struct QuotaCharge {
  struct Part {
    int flavor = kNoFlavor;
    QuotaResource resource = QuotaResource::kGpu;
    int64_t amount = 0;
  };
  // One per flavor and resource, in the order first added.
  std::vector<Part> parts;

  // Adds `amount` of `r` in `flavor` (nothing for kNoFlavor).
  void Add(int flavor, QuotaResource r, int64_t amount);
  // Adds every part of `other`.
  void Add(const QuotaCharge& other);
  // Whether some amount of `r` is charged in `flavor`.
  bool Charges(int flavor, QuotaResource r) const;
  // Whether any resource is charged in `flavor` (amount 0 included).
  bool UsesFlavor(int flavor) const;
};

// Formats an amount of a quota resource for people: "2.5 GPUs", "16 CPUs", "64 GiB".
std::string FormatQuota(QuotaResource r, int64_t amount);

class QuotaTree {
 public:
  // Compiles a validated config (see ValidateQueueConfig, which this runs first).
  static Result<QuotaTree> Build(const QueueConfig& config);

  int num_queues() const { return static_cast<int>(queues_.size()); }
  int num_flavors() const { return static_cast<int>(flavors_.size()); }
  const QueueSpec& queue(int q) const { return queues_[q]; }
  const ResourceFlavor& flavor(int f) const { return flavors_[f]; }
  // -1 when unknown.
  int FindQueue(std::string_view name) const;
  int FindFlavor(std::string_view name) const;
  // Index of the root of the queue's cohort tree; -1 for a queue without a cohort.
  int RootOf(int q) const;

  // Adds (sign +1) or removes (-1) a charge to a queue's usage and its ancestors'.
  void AddUsage(int q, const QuotaCharge& c, int sign);
  // Counts AddUsage calls: what callers derive from usage holds while it is unchanged.
  uint64_t generation() const { return generation_; }
  // True when every charged amount fits in what the queue may still take.
  bool Fits(int q, const QuotaCharge& c) const;
  // True when admitting `c` puts some charged flavor/resource of the queue above nominal.
  bool WouldBorrow(int q, const QuotaCharge& c) const;
  // True when the queue uses more than its quota of this flavor/resource (Kueue's
  // ClusterQueue.Borrowing(fr)).
  bool BorrowingIn(int q, int flavor, QuotaResource r) const;
  // True when the queue uses less than its nominal quota of this flavor/resource.
  bool UnderNominal(int q, int flavor, QuotaResource r) const;
  // The queue's nominal quota of this flavor/resource.
  int64_t Nominal(int q, int flavor, QuotaResource r) const;
  // How much of its nominal quota of this flavor/resource the queue does not use (>= 0).
  int64_t UnusedNominal(int q, int flavor, QuotaResource r) const;
  // Why `c` does not fit: "queue team-a: nvidia.com/gpu in flavor h100 needs 8 GPUs, 4 GPUs
  // available (uses 12 GPUs of nominal 16 GPUs; ...)". Empty when it fits.
  std::string Explain(int q, const QuotaCharge& c) const;

  // Weighted dominant-resource share in thousandths, with `extra` added to the queue's usage.
  int64_t ShareMilli(int q, const QuotaCharge* extra = nullptr) const;

  // The cohort tree as nodes: node q is queue q, cohorts follow. A root (or a queue without a
  // cohort) has parent -1; children are listed queues first, then cohorts, by index.
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  bool IsQueueNode(int node) const { return node < num_queues(); }
  int ParentOf(int node) const { return nodes_[node].parent; }
  const std::vector<int>& ChildrenOf(int node) const { return children_[node]; }
  const std::string& NodeName(int node) const {
    return IsQueueNode(node) ? queues_[node].name : cohort_names_[node - num_queues()];
  }
  // Kueue's DominantResourceShare of any node, queue or cohort, at its current usage: per
  // resource, what it uses above its subtree quota relative to its parent's subtree quota,
  // the largest of them over its weight; 0 for a root or a node that does not borrow.
  int64_t NodeShareMilli(int node) const;

  // What the queue may still take of a flavor/resource.
  int64_t Available(int q, int flavor, QuotaResource r) const;

  // A node's figures for one flavor/resource (-1: no limit), and its fair-sharing weight.
  struct Figures {
    int64_t nominal = 0, borrowing_limit = -1, lending_limit = -1;
    int64_t subtree = 0;  // its quota and its children's, less what they keep from it
    int64_t usage = 0;    // a queue's: what it holds; a cohort's: its children's above theirs
  };
  Figures FiguresOf(int node, int flavor, QuotaResource r) const;
  int64_t WeightMilli(int node) const { return nodes_[node].weight_milli; }

 private:
  static constexpr int64_t kNoLimit = -1;
  struct Node {
    int parent = -1;  // node index of the parent cohort
    int64_t weight_milli = 1000;
    // Per flavor * kNumQuotaResources + resource.
    std::vector<int64_t> nominal, borrowing, lending, subtree, usage;
  };

  int Fr(int flavor, QuotaResource r) const {
    return flavor * kNumQuotaResources + static_cast<int>(r);
  }
  int64_t Guaranteed(const Node& n, int fr) const;
  int64_t Share(int node, const QuotaCharge* extra) const;
  int64_t AvailableAt(int node, int fr) const;
  void AddAt(int node, int fr, int64_t delta);

  std::vector<ResourceFlavor> flavors_;
  std::vector<QueueSpec> queues_;
  std::vector<std::string> cohort_names_;
  // Queues first (node q is queue q), then cohorts.
  std::vector<Node> nodes_;
  std::vector<std::vector<int>> children_;
  uint64_t generation_ = 0;
  std::unordered_map<std::string, int> queue_index_, flavor_index_;
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_QUOTA_H_
