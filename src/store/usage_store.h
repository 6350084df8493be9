// The accounting ledger's durable side: usage segments (core/accounting.h) in an SQLite database
// of their own (WAL), so that a restarted server loses no accounting and keeps counting the
// holdings that were open.
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

namespace tessera::store {

class UsageStore {
 public:
  // Opens (creating when missing) the ledger at `path`.
  static Result<std::unique_ptr<UsageStore>> Open(const std::string& path);
  virtual ~UsageStore() = default;

  // The open segments, by id.
  virtual Result<std::vector<core::UsageSegment>> LoadOpen() = 0;

  // In one transaction: stores `opened` (each gets its id, written back) and closes the segments
  // with the given ids at the given end times.
  virtual Status Apply(std::vector<core::UsageSegment>* opened,
                       std::span<const std::pair<int64_t, int64_t>> closed) = 0;

  // Segments overlapping [since_ms, until_ms), of namespace `ns` only when given, by id.
  virtual Result<std::vector<core::UsageSegment>> Overlapping(
      int64_t since_ms, int64_t until_ms, std::optional<std::string_view> ns) = 0;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_USAGE_STORE_H_
