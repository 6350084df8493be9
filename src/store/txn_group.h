// Group commit for etcd transactions. etcd makes each transaction durable with one raft entry
// and one fsync of its log, so a replica that sends concurrent writes one transaction each waits
// an fsync per write. TxnGroup sends them together: while one transaction is in flight, those
// that arrive queue; the next sender takes every queued one that fits into one transaction (its
// comparisons and operations concatenated) and sends it.
//
// Only transactions that can share one are merged: no key written by two of them (etcd refuses
// a transaction that puts one key twice), the same fence (the leader key's comparison), and
// within etcd's limits (operations and comparisons per transaction, bytes per request). A merged
// transaction succeeds or fails whole: on success every member gets its revision; when a
// comparison failed, each member is sent again alone, so that each learns its own outcome. An
// error (etcd unreachable, no quorum) reaches every member of the transaction that met it.
#ifndef TESSERA_STORE_TXN_GROUP_H_
#define TESSERA_STORE_TXN_GROUP_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "store/store.h"

namespace tessera::store {

class TxnGroup {
 public:
  // Sends one transaction: its revision, nullopt when a comparison failed.
  using Send = std::function<Result<std::optional<int64_t>>(
      nlohmann::json compare, nlohmann::json ops, const Fence* fence)>;

  TxnGroup(Send send, size_t max_ops, size_t max_bytes);

  // Runs one transaction, merged with concurrent ones where they fit. Its revision, or nullopt
  // when one of its own comparisons failed.
  Result<std::optional<int64_t>> Run(nlohmann::json compare, nlohmann::json ops,
                                     const Fence* fence);

  // Transactions sent to etcd, and transactions run: their ratio is the grouping achieved.
  int64_t sent() const;
  int64_t run() const;

 private:
  struct Queued;
  // Takes from the queue, front first, every transaction that fits with the first.
  std::vector<Queued*> TakeBatch();
  void SendBatch(const std::vector<Queued*>& batch);

  const Send send_;
  const size_t max_ops_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::deque<Queued*> queue_;
  bool sending_ = false;
  int64_t sent_ = 0;
  int64_t run_ = 0;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_TXN_GROUP_H_
