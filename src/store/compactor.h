// Periodic compaction of a store's history, as kube-apiserver compacts etcd's: every
// `interval`, to the revision the store was at one interval before, so that a watch or a list at
// a revision can reach back at least one interval. Only while `leading()` says so: with several
// replicas on one etcd, the elected one compacts, one compactor at a time.
#ifndef TESSERA_STORE_COMPACTOR_H_
#define TESSERA_STORE_COMPACTOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "store/store.h"

namespace tessera::store {

class Compactor {
 public:
  Compactor(Store& store, std::function<bool()> leading, std::chrono::milliseconds interval);
  ~Compactor();
  Compactor(const Compactor&) = delete;
  Compactor& operator=(const Compactor&) = delete;

  // The revision of the last compaction (0: none yet).
  int64_t compacted();

 private:
  void Run();

  Store& store_;
  const std::function<bool()> leading_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t compacted_ = 0;
  std::thread runner_;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_COMPACTOR_H_
