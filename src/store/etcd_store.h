// The Store on etcd (store/etcd_client.h), for a control plane of several replicas: objects
// under a key prefix (<prefix><kind>/<namespace>/<name>), each object's version its key's
// mod_revision, the store's revision etcd's.
//
// A Commit reads the keys it touches, checks each write against them as every store does
// (CheckWrite; a put of the same body changes nothing), and writes the changed keys in one etcd
// transaction guarded by a comparison of each touched key's mod_revision with what was read: a
// concurrent write elsewhere makes it read and check again. The first read is the cache's (below),
// so a commit usually costs one round trip; what fails there is tried again on etcd's own read. The
// writes of one commit share its revision, as etcd gives one revision per transaction. A commit
// etcd cannot take in one transaction (more keys than --max-txn-ops, more bytes than
// --max-request-bytes) is refused as TooLarge; nothing of it is written.
//
// Concurrent commits share etcd transactions where they fit (store/txn_group.h): one raft entry
// and one fsync for several writes.
//
// Changes come from one watch of the prefix, running from the revision the store opened at, into
// an in-memory log of the newest `retained_changes`: ChangesAfter serves them (waiting, briefly,
// for this store's own commits to arrive), and a revision before the log is FailedPrecondition
// (list again), as kube-apiserver's watch cache answers 410. The same watch keeps a cache of
// every object, read whole at open (and again when a compaction cut the watch), as
// kube-apiserver's watch cache does: Get and List read it once it holds this store's own
// commits, so a replica reads what it acknowledged; another replica's writes reach it within the
// watch's delay. A read never makes a write wrong: commits compare versions in etcd itself. When
// the cache is not current (the watch down), reads go to etcd. Reads at a revision are etcd's
// own; Compact is etcd's compaction.
#ifndef TESSERA_STORE_ETCD_STORE_H_
#define TESSERA_STORE_ETCD_STORE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/etcd_client.h"
#include "store/store.h"
#include "store/txn_group.h"

namespace tessera::store {

// The leader's fence in an etcd transaction: a comparison that its key is still the one created
// at its revision; and what a write refused by it returns.
nlohmann::json FenceHolds(const Fence& fence);
Status NotLeading(const Fence& fence);
// The create_revision of the key in a range response (a fence's key read back); 0 when absent.
int64_t FenceRevision(const nlohmann::json& range_response);

// Connects (the members are asked for their status), reads every object into the cache and
// starts the watch.
Result<std::unique_ptr<Store>> OpenEtcdStore(EtcdStoreOptions options);

class EtcdStore : public Store {
 public:
  EtcdStore(EtcdStoreOptions options, int64_t opened_at);
  ~EtcdStore() override;
  // Loads the cache and starts the watch (OpenEtcdStore calls it).
  void Start();

  Result<std::vector<int64_t>> Commit(std::span<const Write> writes) override;
  Result<std::vector<int64_t>> CommitIf(std::span<const Write> writes, const Fence& fence) override;
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

  // Called (from a thread of its own, never the watch's, no lock held) when changes arrive:
  // another replica's writes reach this one's watchers so. The watch goes on meanwhile, so a
  // listener may wait for what it brings.
  void OnChange(std::function<void()> listener) override;
  bool shared() const override { return true; }
  // The ledger in etcd, beside the state (store/etcd_usage_store.h).
  Result<std::unique_ptr<UsageStore>> OwnLedger() const override;
  const EtcdOptions& etcd_options() const { return options_.etcd; }

 private:
  std::string KeyOf(const ObjectKey& key) const;
  std::string KindPrefix(std::string_view kind, std::optional<std::string_view> ns) const;
  // Every object under `prefix` at `revision` (0: the latest), read in pages at one revision
  // (set in `read_at`).
  Result<std::vector<StoredObject>> Range(const std::string& prefix, int64_t revision,
                                          int64_t* read_at = nullptr);
  // With mu_ held: waits (briefly) until the watch has delivered this store's own commits; true
  // when the cache then serves reads.
  bool CacheCurrent(std::unique_lock<std::mutex>& lock);
  // Applies one change to the cache (mu_ held).
  void Cache(const Change& c);
  // Reads every object into the cache when it is not valid: at the revision opened at the first
  // time, at the latest after a compaction cut the watch.
  void LoadCache();
  Result<std::optional<StoredObject>> GetKey(const ObjectKey& key, int64_t revision);
  Result<std::vector<int64_t>> CommitGuarded(std::span<const Write> writes, const Fence* fence);
  // What one key holds, as read (version: its mod_revision, 0 when absent), and whether the
  // commit being checked changes it.
  struct KeyState {
    bool exists = false;
    int64_t version = 0;
    std::string body;
    bool changed = false;
  };
  // The keys as the cache holds them; nullopt when it is not current.
  std::optional<std::vector<KeyState>> CachedStates(const std::vector<std::string>& keys);
  // The keys as etcd holds them, in one read with the fence's key (NotLeading when it is not
  // the fence's any more).
  Result<std::vector<KeyState>> ReadStates(const std::vector<std::string>& keys,
                                           const Fence* fence);
  // Checks `writes` against `was` (CheckWrite; a put of the same body changes nothing) and
  // writes what changed in one txn comparing every key's version with `was`: the versions,
  // nullopt when a comparison failed.
  Result<std::optional<std::vector<int64_t>>> TryCommit(std::span<const Write> writes,
                                                        const std::vector<std::string>& keys,
                                                        const std::map<std::string, size_t>& index,
                                                        const std::vector<KeyState>& was,
                                                        const Fence* fence);
  // Creates and deletes at a version, in one txn with no read first; nullopt when the writes are
  // not all such, or a comparison failed (CommitGuarded reads and says why).
  Result<std::optional<std::vector<int64_t>>> BlindCommit(std::span<const Write> writes,
                                                          const Fence* fence);
  // One txn of `ops` under `compare` (and `fence`): its revision, nullopt when a comparison
  // failed. Concurrent ones go to etcd together where they fit (store/txn_group.h).
  Result<std::optional<int64_t>> Txn(nlohmann::json compare, nlohmann::json ops,
                                     const Fence* fence);
  // Sends one txn as it is; records its revision as this store's latest commit.
  Result<std::optional<int64_t>> SendTxn(nlohmann::json compare, nlohmann::json ops,
                                         const Fence* fence);
  // InvalidArgument for a revision this store has not reached.
  Status Reached(int64_t revision);
  void WatchLoop();
  void NotifyLoop();
  // Appends one WatchResponse's events; false when the watch must stop (compacted).
  bool Take(const nlohmann::json& response);

  EtcdStoreOptions options_;
  EtcdClient client_;
  TxnGroup group_;

  std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<Change> log_;
  int64_t log_from_;   // the log holds every change after it
  int64_t head_;       // the newest revision the watch has delivered
  int64_t committed_;  // the newest revision this store committed
  // Every object, by etcd key, as of head_, kept by the watch: Get and List read it.
  std::map<std::string, StoredObject> cache_;
  bool cache_valid_ = false;   // false: reads go to etcd
  bool cache_loaded_ = false;  // loaded once
  bool stopping_ = false;
  std::function<void()> listener_;
  int calling_ = 0;            // listener calls running
  bool arrived_news_ = false;  // changes arrived since the listener was last called
  StreamCancel cancel_;
  std::thread watcher_;
  std::thread notifier_;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_ETCD_STORE_H_
