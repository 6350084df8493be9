// A Store in memory, for tests: the same contract as the SQLite store (tests/store runs one
// suite against both), and faults on demand, in the spirit of LevelDB's fault-injecting Env:
// the next commits or reads fail with a chosen error and change nothing. Nothing survives the
// object; it is no store for a server.
#ifndef TESSERA_STORE_MEMORY_STORE_H_
#define TESSERA_STORE_MEMORY_STORE_H_

#include <deque>
#include <map>
#include <mutex>

#include "store/store.h"

namespace tessera::store {

class MemoryStore : public Store {
 public:
  // Keeps the newest `retained_changes` changes for watches, as SqliteOptions does.
  explicit MemoryStore(int64_t retained_changes = 100'000);

  Result<std::vector<int64_t>> Commit(std::span<const Write> writes) override;
  Result<std::optional<StoredObject>> Get(const ObjectKey& key) override;
  Result<std::vector<StoredObject>> List(std::string_view kind,
                                         std::optional<std::string_view> ns) override;
  Result<std::vector<std::string>> ListKinds() override;
  Result<std::vector<Change>> ChangesAfter(int64_t after, size_t limit) override;
  int64_t Revision() override;
  Result<std::vector<StoredObject>> ListAt(std::string_view kind,
                                           std::optional<std::string_view> ns,
                                           int64_t revision) override;
  Result<std::optional<StoredObject>> GetAt(const ObjectKey& key, int64_t revision) override;
  Status Compact(int64_t revision) override;

  // The next `n` commits fail with `why` and write nothing (a full disk, a lost leader).
  void FailCommits(int n, Status why);
  // The next `n` reads (Get, List, ChangesAfter) fail with `why`.
  void FailReads(int n, Status why);
  // Commits attempted so far, failed ones included.
  int commits() const;

 private:
  // The injected error for one more call, if any is left (mu_ held).
  static std::optional<Status> TakeFault(int* left, const Status& why);
  // Of the objects matching `match`: their last change at or before `revision`, for those
  // changed after it (mu_ held).
  template <typename Match>
  std::vector<Change> ChangedSince(int64_t revision, Match match) const;
  void CompactLocked(int64_t revision);

  mutable std::mutex mu_;
  const int64_t retained_;
  std::map<ObjectKey, StoredObject> objects_;
  std::deque<Change> changes_;
  int64_t revision_ = 0;
  int64_t compacted_ = 0;
  int commits_ = 0;
  int failing_commits_ = 0, failing_reads_ = 0;
  Status commit_error_ = Status::Ok(), read_error_ = Status::Ok();
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_MEMORY_STORE_H_
