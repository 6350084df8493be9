// The stream of committed changes that watches follow: recent changes kept in memory, older
// ones read from the store's log, and wake-ups for watchers waiting for the next change.
// Thread-safe.
#ifndef TESSERA_SERVER_CHANGE_FEED_H_
#define TESSERA_SERVER_CHANGE_FEED_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/store.h"

namespace tessera::server {

class ChangeFeed {
 public:
  // A published change, shared by every reader (not copied per watcher), with its routes (see
  // set_router) when they were worked out at publication (`routed`: a router is set and routed
  // waiters were waiting).
  struct Published {
    store::Change change;
    std::vector<std::string> routes;
    bool routed = false;
  };
  using Shared = std::shared_ptr<const Published>;

  explicit ChangeFeed(store::Store& store, size_t kept = 16384)
      : store_(store), kept_(kept), head_(store.Revision()), index_from_(head_) {}

  // Reads what was committed since the last call from the store's log and wakes the watchers
  // waiting for it. Call after every commit (any writer).
  void CatchUp();

  // Changes with revision > `after`, oldest first, at most `limit`; FailedPrecondition when
  // they were compacted away.
  Result<std::vector<store::Change>> After(int64_t after, size_t limit);
  // The same without copying the changes: a thousand watches reading one burst share it.
  // Changes read from the store's log (older than those kept) come without routes.
  Result<std::vector<Shared>> AfterShared(int64_t after, size_t limit);

  // Registers `wake` to be called once, on the publishing thread (inside CatchUp, with no lock
  // of the feed held), when a change after `after` is published. Never calls `wake` itself: when
  // such a change already exists it registers nothing and returns nullopt, and the caller reads
  // it (so a caller may hold its own lock while subscribing). Otherwise an id for Unsubscribe.
  // With `kind`, only a change of that kind wakes it (a watch of Jobs sleeps through the
  // nodes' lease renewals); it reads the others along with the next one that does.
  std::optional<uint64_t> Subscribe(int64_t after, std::function<void()> wake,
                                    std::string kind = "");
  // As Subscribe for `kind`, but only a change whose routes (set_router) include one of
  // `routes` wakes it (a node agent's watch sleeps through the changes of Jobs bound
  // elsewhere), or, so that it moves on, the head passing `after` by kRoutedCatchUp. It is
  // found through its routes: a commit costs nothing for the routed waiters it does not
  // concern. Without a router, or when a call published more than is kept, every routed
  // waiter wakes.
  std::optional<uint64_t> SubscribeRouted(int64_t after, std::function<void()> wake,
                                          std::string kind, std::vector<std::string> routes);
  static constexpr int64_t kRoutedCatchUp = 4096;
  // A routed reader's read: the changes after `after` on any of `routes`, oldest first, at most
  // `limit` (more where the last revision's changes, one etcd transaction's, go beyond it), found
  // through an index of the kept changes by route, so that reading costs what concerns the reader
  // and not every change since its last read (a thousand agents' watches each reading the whole
  // cluster's changes cost the server more than the changes themselves). `through`: every change up
  // to it on those routes is in `changes`. Nullopt when the routes of some change after `after` are
  // not known (published while no routed waiter waited, or no longer kept): the reader reads them
  // all (AfterShared) and sorts them itself.
  struct RoutedChanges {
    std::vector<Shared> changes;
    int64_t through = 0;
  };
  std::optional<RoutedChanges> AfterRoutes(int64_t after, const std::vector<std::string>& routes,
                                           size_t limit);
  // What a change concerns, as routes (for a Job, the nodes it is bound to and itself); called
  // once per published change while routed waiters wait, on the publishing thread with the
  // feed's lock held: it must neither block nor call the feed. Set before any subscription.
  void set_router(std::function<std::vector<std::string>(const store::Change&)> router) {
    router_ = std::move(router);
  }
  void Unsubscribe(uint64_t id);

  // Test seam: called at the start of every Subscribe, before the feed's lock is taken, so a
  // test can land a commit between a reader's After and its Subscribe deterministically.
  void set_before_subscribe_for_test(std::function<void()> hook) {
    before_subscribe_ = std::move(hook);
  }

  int64_t head() const;
  size_t subscribers() const;

 private:
  store::Store& store_;
  const size_t kept_;
  mutable std::mutex mu_;
  std::deque<Shared> recent_;  // the newest kept_ changes
  int64_t head_;               // revision of the newest change published
  uint64_t next_id_ = 1;
  struct Waiter {
    int64_t after = 0;
    std::string kind;  // empty: any
    std::function<void()> wake;
    std::vector<std::string> routes;  // routed waiters only
  };
  // Takes routed waiter `id` out of every index and queues its wake-up.
  void WakeRouted(uint64_t id, std::vector<std::function<void()>>* wake);
  void EraseRouted(std::map<uint64_t, Waiter>::iterator it);
  // Waiters by the kind they wait for ("" for any), so that a commit looks only at those
  // waiting for its kinds (a thousand agents' watches of Jobs sleep through Lease renewals
  // without being looked at).
  std::map<std::string, std::map<uint64_t, Waiter>, std::less<>> waiting_;
  std::map<uint64_t, std::string> kind_of_;  // id -> its key in waiting_
  std::map<uint64_t, Waiter> routed_;
  std::unordered_map<std::string, std::set<uint64_t>> by_route_;
  std::set<std::pair<int64_t, uint64_t>> by_after_;  // routed waiters by `after`
  // The kept changes by route (AfterRoutes), each route's oldest first. Every kept change after
  // index_from_ is in it under each of its routes; entries at or before it are dropped as
  // routes are read, and all of them every kept_ publications.
  std::unordered_map<std::string, std::deque<Shared>> route_log_;
  int64_t index_from_;
  size_t since_sweep_ = 0;
  void SweepRoutes();
  std::function<std::vector<std::string>(const store::Change&)> router_;
  std::function<void()> before_subscribe_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CHANGE_FEED_H_
