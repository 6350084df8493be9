// Per-node placement results reused across cycles, in the spirit of kube-scheduler's pod
// signatures: for pods of one PlacementSignature, a node whose version (NodeUsage::version) has
// not changed gets the same filter verdict, the same device candidate and the same node-local
// raw scores as when they were computed. Busy clusters place long runs of pods of a few shapes
// (a job's replicas, a trace's popular task types) while each placement changes one node, so a
// cycle mostly looks results up instead of recomputing them.
#ifndef TESSERA_CORE_RESULT_CACHE_H_
#define TESSERA_CORE_RESULT_CACHE_H_

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster_state.h"
#include "core/framework.h"

namespace tessera::core {

// One row per signature, one entry per node in a row: at most `max_rows` rows and, on large
// clusters, fewer, so that rows x nodes stays within `max_entries`. A new signature takes the
// row with the fewest recent hits (every row's count is halved at each eviction), so rows that
// pay stay while rare signatures take turns in the others: unlike least-recently-used, a cycle
// over one signature more than there are rows still hits. Only feasible nodes with a single
// candidate are kept.
class NodeResultCache {
 public:
  NodeResultCache(int num_scores, size_t max_rows, size_t max_entries);

  // Chooses the row of `signature` for this cycle. Every row is dropped when the cluster's shape
  // or the score plugins' generations differ from those the rows were filled under.
  void Begin(const std::string& signature, const ClusterState& state,
             std::span<const uint64_t> generations);
  // The candidate kept for `id` in this cycle's row when it was computed at `version`, else
  // nullptr.
  const Candidate* Find(NodeId id, uint64_t version) {
    const Entry& e = row_->entries[id.value()];
    if (e.version != version || e.tag != row_->tag) return nullptr;
    ++row_->hits;
    return &e.candidate;
  }
  // Raw score of score plugin `p` for the candidate Find returned.
  int64_t Score(NodeId id, int p) const { return row_->scores[id.value() * num_scores_ + p]; }
  // Keeps `c` (on node c.node, at `version`) in this cycle's row; its raw scores are then set
  // with SetScore.
  void Store(uint64_t version, const Candidate& c);
  void SetScore(NodeId id, int p, int64_t raw) { row_->scores[id.value() * num_scores_ + p] = raw; }

  size_t rows() const { return rows_.size(); }

 private:
  struct Entry {
    uint64_t version = 0;  // 0: empty (versions start at 1)
    uint64_t tag = 0;      // the row's tag when stored
    Candidate candidate;
  };
  struct Row {
    std::string signature;
    uint64_t tag = 0;   // unique per signature the row has held; entries of other tags are stale
    uint64_t hits = 0;  // halved at every eviction
    std::vector<Entry> entries;   // per node
    std::vector<int64_t> scores;  // per node x score plugin
  };

  int num_scores_;
  size_t max_rows_;
  size_t max_entries_;
  uint64_t shape_version_ = 0;
  std::vector<uint64_t> generations_;
  uint64_t next_tag_ = 0;
  std::vector<Row> rows_;
  std::unordered_map<std::string, size_t> by_signature_;
  Row* row_ = nullptr;
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_RESULT_CACHE_H_
