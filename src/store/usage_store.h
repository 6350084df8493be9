// The accounting ledger's durable side: usage segments (core/accounting.h), so that a restarted
// server loses no accounting and keeps counting the holdings that were open. A single server
// keeps them in an SQLite database of their own (WAL, <data-dir>/usage.db); replicas on etcd keep
// them in etcd (store/etcd_usage_store.h), where any replica reads them and the next leader goes
// on from them.
#ifndef TESSERA_STORE_USAGE_STORE_H_
#define TESSERA_STORE_USAGE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/accounting.h"
#include "core/status.h"
#include "store/store.h"

namespace tessera::store {

class UsageStore {
 public:
  // Opens (creating when missing) the ledger at `path`.
  static Result<std::unique_ptr<UsageStore>> Open(const std::string& path);
  virtual ~UsageStore() = default;

  // The open segments, by id.
  virtual Result<std::vector<core::UsageSegment>> LoadOpen() = 0;

  // Stores `opened` (each gets its id, written back; one with an end time is stored closed) and
  // closes the segments with the given ids at the given end times. On SQLite in one
  // transaction; on etcd in as few as its limits allow (see there). With `fence` (the
  // scheduler's leadership), nothing is written once it no longer holds: FailedPrecondition.
  virtual Status Apply(std::vector<core::UsageSegment>* opened,
                       std::span<const std::pair<int64_t, int64_t>> closed,
                       const Fence* fence = nullptr) = 0;

  // Segments overlapping [since_ms, until_ms), of namespace `ns` only when given, by id.
  virtual Result<std::vector<core::UsageSegment>> Overlapping(
      int64_t since_ms, int64_t until_ms, std::optional<std::string_view> ns) = 0;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_USAGE_STORE_H_
