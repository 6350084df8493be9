#include "core/result_cache.h"

#include <algorithm>

namespace tessera::core {

NodeResultCache::NodeResultCache(int num_scores, size_t max_rows, size_t max_entries)
    : num_scores_(num_scores), max_rows_(max_rows), max_entries_(max_entries) {}

void NodeResultCache::Begin(const std::string& signature, const ClusterState& state,
                            std::span<const uint64_t> generations) {
  if (state.shape_version() != shape_version_ ||
      !std::equal(generations.begin(), generations.end(), generations_.begin(),
                  generations_.end())) {
    rows_.clear();
    by_signature_.clear();
    shape_version_ = state.shape_version();
    generations_.assign(generations.begin(), generations.end());
  }
  const size_t nodes = state.size();
  const size_t limit = std::clamp<size_t>(max_entries_ / std::max<size_t>(1, nodes), 1, max_rows_);
  auto it = by_signature_.find(signature);
  if (it == by_signature_.end()) {
    size_t r = rows_.size();
    if (r < limit) {
      rows_.emplace_back();
    } else {
      // The first of the rows with the fewest hits.
      r = std::min_element(rows_.begin(), rows_.end(),
                           [](const Row& a, const Row& b) { return a.hits < b.hits; }) -
          rows_.begin();
      by_signature_.erase(rows_[r].signature);
      for (Row& row : rows_) row.hits /= 2;
      rows_[r].hits = 0;
    }
    rows_[r].signature = signature;
    rows_[r].tag = ++next_tag_;
    it = by_signature_.emplace(rows_[r].signature, r).first;
  }
  row_ = &rows_[it->second];
  // Nodes are only ever added (ids are stable within one shape), so growing is enough.
  if (row_->entries.size() < nodes) {
    row_->entries.resize(nodes);
    row_->scores.resize(nodes * num_scores_);
  }
}

void NodeResultCache::Store(uint64_t version, const Candidate& c) {
  Entry& e = row_->entries[c.node.value()];
  e.version = version;
  e.tag = row_->tag;
  e.candidate = c;
}

}  // namespace tessera::core
