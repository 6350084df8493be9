// The durable object store behind the control plane: objects addressed by (kind, namespace,
// name), each with the store revision of its last write as its resource version, and an ordered
// log of changes that watches read from. Every Commit is all-or-nothing.
//
// History, as etcd keeps it: the objects can be read as they were at any revision since the last
// compaction (ListAt, GetAt), and the changes after any such revision are in the log
// (ChangesAfter). Compaction forgets the history up to a revision, except what reading after it
// needs: each object's last change before it, when the object changed since.
#ifndef TESSERA_STORE_STORE_H_
#define TESSERA_STORE_STORE_H_

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::store {

struct ObjectKey {
  std::string kind;  // "Job", "Queue", ...
  std::string ns;    // empty for cluster-scoped kinds
  std::string name;
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;
};

// "Job ns/name" or "Queue name", for messages.
std::string Describe(const ObjectKey& key);

struct StoredObject {
  ObjectKey key;
  int64_t version = 0;  // the revision of its last write
  std::string body;     // JSON text, as the API layer wrote it
};

enum class ChangeType : uint8_t { kAdded, kModified, kDeleted };

struct Change {
  int64_t revision = 0;
  ChangeType type = ChangeType::kAdded;
  // The object after the change; for kDeleted its last body, with `version` the delete's
  // revision.
  StoredObject object;
};

// One write of a transaction.
struct Write {
  enum class Op : uint8_t {
    kCreate,  // fails with AlreadyExists when the object exists
    kPut,     // creates or replaces
    kDelete,  // fails with NotFound when the object does not exist
  };
  Op op = Op::kPut;
  ObjectKey key;
  std::string body;  // unused for kDelete
  // When set, the object's current version must equal it (0: must not exist), else Conflict.
  std::optional<int64_t> expected_version;
};

// A condition a commit holds under: a replica's leadership of the scheduler, held as long as
// the election's key (a key of the store's own, outside the objects) exists as it was created
// when the replica was elected (store/etcd_election.h).
struct Fence {
  std::string key;
  int64_t create_revision = 0;
};

// Whether write `w` may apply to its object, which `exists` at version `current` (0 when
// not): Conflict for a stale expected_version, AlreadyExists for a create, NotFound for a
// delete. Every Store implementation checks its writes with it.
Status CheckWrite(const Write& w, bool exists, int64_t current);

class UsageStore;  // store/usage_store.h

class Store {
 public:
  virtual ~Store() = default;

  // Applies `writes` in order as one transaction: all of them or, on the first error, none.
  // Each write gets its own revision, returned in order. A kPut whose body equals the stored
  // one changes nothing and returns the object's current version (idempotent apply).
  virtual Result<std::vector<int64_t>> Commit(std::span<const Write> writes) = 0;
  // Commit, in the same transaction as a check that `fence` holds: else FailedPrecondition and
  // nothing written. A store that one process alone writes has no election, and commits.
  virtual Result<std::vector<int64_t>> CommitIf(std::span<const Write> writes, const Fence& fence) {
    (void)fence;
    return Commit(writes);
  }

  virtual Result<std::optional<StoredObject>> Get(const ObjectKey& key) = 0;

  // Objects of `kind`, ordered by namespace and name; only namespace `ns` when given.
  virtual Result<std::vector<StoredObject>> List(std::string_view kind,
                                                 std::optional<std::string_view> ns) = 0;

  // The kinds of the objects stored, in order (a copy of the whole state lists each).
  virtual Result<std::vector<std::string>> ListKinds() = 0;

  // Changes with revision > `after`, oldest first, at most `limit`. FailedPrecondition when
  // changes after `after` were already compacted away (the caller must list again).
  virtual Result<std::vector<Change>> ChangesAfter(int64_t after, size_t limit) = 0;

  // The revision of the latest write (0 for an empty store).
  virtual int64_t Revision() = 0;

  // The objects of `kind` (only namespace `ns` when given) as they were at `revision`, ordered
  // by namespace and name, each with its version then. FailedPrecondition when the history up
  // to that revision was compacted (etcd's "required revision has been compacted"),
  // InvalidArgument when it is newer than Revision().
  virtual Result<std::vector<StoredObject>> ListAt(std::string_view kind,
                                                   std::optional<std::string_view> ns,
                                                   int64_t revision) = 0;
  // One object as it was at `revision` (nullopt: it did not exist then), with ListAt's errors.
  virtual Result<std::optional<StoredObject>> GetAt(const ObjectKey& key, int64_t revision) = 0;

  // Forgets the history up to `revision` (at most Revision()): reads at and watches from an
  // earlier revision fail with FailedPrecondition afterwards. The stores also compact on their
  // own, keeping the newest `retained_changes` changes.
  virtual Status Compact(int64_t revision) = 0;

  // Calls `listener` when changes written by another writer of the same state arrive (another
  // replica's, on etcd); none for a store this process alone writes. An empty listener stops
  // the calls: once OnChange returns, none is running.
  virtual void OnChange(std::function<void()> listener) { (void)listener; }
  // Whether other processes write the same state (replicas on etcd): what one replica holds in
  // memory, others do not see.
  virtual bool shared() const { return false; }
  // The accounting ledger kept with this state: etcd's beside an etcd store
  // (store/etcd_usage_store.h); null where the ledger is a file of its own (SQLite).
  virtual Result<std::unique_ptr<UsageStore>> OwnLedger() const;
};

// What ListAt and GetAt share. Whether a read at `revision` can be served, with the history
// kept from `history_from` (a compaction's revision) up to `latest`.
Status CheckReadAt(int64_t revision, int64_t history_from, int64_t latest);
// The objects at `revision` from those of now (`current`, ordered by namespace and name) and,
// for the objects changed since, their last change at or before it (`before`, any order).
std::vector<StoredObject> StateAt(std::vector<StoredObject> current,
                                  const std::vector<Change>& before, int64_t revision);

struct SqliteOptions {
  // fsync the log on every commit: survives power loss, not only a killed process. Off, a
  // commit survives kill -9 of the server (SQLite WAL, synchronous=NORMAL).
  bool fsync_every_commit = false;
  // Changes kept for watches; older ones are compacted away.
  int64_t retained_changes = 100'000;
};

// Opens (creating when missing) an SQLite database in WAL mode at `path`.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path, SqliteOptions options = {});

}  // namespace tessera::store

#endif  // TESSERA_STORE_STORE_H_
