// The control plane's state: what the HTTP layer (ApiServer) and the scheduling loop share.
// It owns the data directory (locked), the object store handed in by the composition root, the
// change feed over it, the parsed-object cache, the node lease book, the tokens, the open exec
// sessions, the accounting ledger and the scheduler's metrics; and it is the one way to commit.
// Both layers depend on it; neither reaches through the other.
#ifndef TESSERA_SERVER_CONTROL_PLANE_H_
#define TESSERA_SERVER_CONTROL_PLANE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/auth.h"
#include "server/change_feed.h"
#include "server/exec_hub.h"
#include "server/files.h"
#include "server/lease_book.h"
#include "server/metrics.h"
#include "server/object_cache.h"
#include "server/queue_order_book.h"
#include "store/store.h"

namespace tessera::server {

class Accountant;
class EventCache;

class ControlPlane {
 public:
  // Opens the object store once the data directory is this control plane's (locked).
  using StoreOpener =
      std::function<Result<std::unique_ptr<store::Store>>(const std::string& data_dir)>;
  // The SQLite store at <data_dir>/state.db with `options`.
  static StoreOpener Sqlite(store::SqliteOptions options = {});
  // Creates and locks `data_dir`, opens the store with `open_store` (the server and dev
  // commands choose its options; tests hand in a fault-injecting MemoryStore) and the
  // accounting ledger (<data_dir>/usage.db), and on first start writes the admin token to
  // <data_dir>/admin.token (mode 0600).
  static Result<std::unique_ptr<ControlPlane>> Open(const std::string& data_dir,
                                                    StoreOpener open_store = Sqlite());
  ~ControlPlane();

  const std::string& data_dir() const { return data_dir_; }
  store::Store& store() { return *store_; }
  // Every commit, in order, for watches and the loop's wake-ups (change_feed.h).
  ChangeFeed& feed() { return feed_; }
  // What a change means for watches (the nodes a Job is bound to ...), computed once.
  EventCache& events() { return *events_; }
  // Parsed stored objects, for readers inside the server.
  ObjectCache& objects() { return objects_; }
  // Node lease renewals held in memory (lease_book.h): liveness is read through it.
  LeaseBook& leases() { return leases_; }
  // Where the waiting Jobs stand in their queues, as this replica's last cycle ordered them.
  QueueOrderBook& queue_order() { return queue_order_; }
  TokenAuthority& tokens() { return tokens_; }
  // The open `tessera exec` sessions (exec_hub.h); the scheduling loop expires them.
  ExecHub& exec() { return exec_; }
  Accountant& accounting() { return *accounting_; }
  SchedulerMetrics& metrics() { return metrics_; }

  // Commits `writes` and lets watchers see them: the one way writers inside the server write.
  // Each write was checked before against the versions it read, which the store checks again.
  // On a store of one replica (SQLite) the store's commits are serialized; on a shared one
  // (etcd) they run concurrently, so that etcd takes them in one transaction where they fit.
  // With `fence` (the scheduler's leadership, on etcd), nothing is written once it no longer
  // holds (FailedPrecondition).
  Result<std::vector<int64_t>> Commit(std::span<const store::Write> writes,
                                      const store::Fence* fence = nullptr);
  // Holds commits off while the lock lives: for a read then a write that does not go through
  // Commit (an exec token made for a Job as it was read).
  std::unique_lock<std::shared_mutex> HoldCommits() {
    return std::unique_lock<std::shared_mutex>(write_mu_);
  }

  // Revokes the exec tokens (MPI launchers') of Jobs not among `running` ("ns/name/uid"): a
  // finished or deleted Job's launcher needs none. Returns how many went.
  Result<int> RevokeExecTokens(const std::set<std::string>& running);

 private:
  ControlPlane(std::string data_dir, DirLock owner, std::unique_ptr<store::Store> store);

  const std::string data_dir_;
  DirLock owner_;  // of the data directory; released last
  std::unique_ptr<store::Store> store_;
  TokenAuthority tokens_;
  ChangeFeed feed_;
  std::unique_ptr<EventCache> events_;
  ObjectCache objects_;
  LeaseBook leases_;
  QueueOrderBook queue_order_;
  ExecHub exec_;
  SchedulerMetrics metrics_;
  std::unique_ptr<Accountant> accounting_;
  // Held by Commit for the store's commit only: exclusively, or shared on a shared store.
  std::shared_mutex write_mu_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CONTROL_PLANE_H_
