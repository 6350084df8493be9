#include "server/control_plane.h"

#include <chrono>
#include <filesystem>

#include "server/accountant.h"
#include "server/watch.h"
#include "store/usage_store.h"

namespace tessera::server {

ControlPlane::ControlPlane(std::string data_dir, DirLock owner, std::unique_ptr<store::Store> store)
    : data_dir_(std::move(data_dir)),
      owner_(std::move(owner)),
      store_(std::move(store)),
      tokens_(*store_),
      feed_(*store_),
      events_(std::make_unique<EventCache>()),
      objects_(*store_, feed_),
      // Replicas share their renewals through the store: each is written, as Kubernetes' are.
      leases_(store_->shared() ? 0 : 60'000) {
  // A Job's change concerns the nodes it is bound to (their agents' watches) and the Job.
  feed_.set_router([events = events_.get()](const store::Change& c) {
    std::vector<std::string> routes;
    if (c.object.key.kind != "Job") return routes;
    routes.push_back(JobRoute(c.object.key.ns, c.object.key.name));
    for (const std::string& node : events->Get(c)->nodes) routes.push_back(NodeRoute(node));
    return routes;
  });
  // Another replica's writes (on etcd) reach this one's watchers and caches as its own do.
  store_->OnChange([this] { feed_.CatchUp(); });
}

ControlPlane::~ControlPlane() { store_->OnChange({}); }

ControlPlane::StoreOpener ControlPlane::Sqlite(store::SqliteOptions options) {
  return [options](const std::string& data_dir) {
    return store::OpenSqliteStore(data_dir + "/state.db", options);
  };
}

Result<std::unique_ptr<ControlPlane>> ControlPlane::Open(const std::string& data_dir,
                                                         StoreOpener open_store) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) return FailedPrecondition("cannot create data dir " + data_dir + ": " + ec.message());
  auto owner = DirLock::Acquire(data_dir);
  if (!owner.ok()) return owner.status();
  auto store = open_store(data_dir);
  if (!store.ok()) return store.status();
  std::unique_ptr<ControlPlane> plane(
      new ControlPlane(data_dir, std::move(owner).value(), std::move(store).value()));
  // The ledger goes with the state: in etcd beside an etcd store, else in its own SQLite file.
  auto ledger = plane->store_->OwnLedger();
  if (ledger.ok() && *ledger == nullptr) ledger = store::UsageStore::Open(data_dir + "/usage.db");
  if (!ledger.ok()) return ledger.status();
  auto accounting = Accountant::Open(std::move(ledger).value());
  if (!accounting.ok()) return accounting.status();
  plane->accounting_ = std::move(accounting).value();
  // The state is the server's alone: tasks on this machine run as other users (a `tessera dev`
  // node's, say). The directory is passed (its tls/ca.crt is public), not listed.
  fs::permissions(data_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                  ec);
  for (const char* db : {"state.db", "usage.db"}) {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string file = data_dir + "/" + db + suffix;
      if (fs::exists(file, ec)) {
        fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, ec);
      }
    }
  }
  auto admin = plane->tokens_.EnsureAdmin();
  if (!admin.ok()) return admin.status();
  if (admin->has_value()) {
    TESSERA_RETURN_IF_ERROR(WriteFileDurably(data_dir + "/admin.token", **admin + "\n", 0600));
  }
  return plane;
}

Result<std::vector<int64_t>> ControlPlane::Commit(std::span<const store::Write> writes,
                                                  const store::Fence* fence) {
  Result<std::vector<int64_t>> r = std::vector<int64_t>();
  {
    std::unique_lock<std::shared_mutex> alone(write_mu_, std::defer_lock);
    std::shared_lock<std::shared_mutex> together(write_mu_, std::defer_lock);
    if (store_->shared()) {
      together.lock();
    } else {
      alone.lock();
    }
    const auto started = std::chrono::steady_clock::now();
    r = fence ? store_->CommitIf(writes, *fence) : store_->Commit(writes);
    metrics_.ObserveCommit(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), !r.ok());
    if (!r.ok()) return r;
    for (size_t i = 0; i < writes.size(); ++i) {
      const store::Write& w = writes[i];
      if (w.key.kind != "Lease") continue;
      leases_.Stored(w.key.name, w.op == store::Write::Op::kDelete ? nullptr : &w.body, (*r)[i]);
    }
  }
  feed_.CatchUp();
  return r;
}

Result<int> ControlPlane::RevokeExecTokens(const std::set<std::string>& running) {
  auto tokens = tokens_.List();
  if (!tokens.ok()) return tokens.status();
  int revoked = 0;
  for (const TokenInfo& t : *tokens) {
    if (t.role != Principal::Role::kExec || running.contains(t.ns + "/" + t.job)) continue;
    if (tokens_.Revoke(t.id).ok()) ++revoked;
  }
  if (revoked > 0) feed_.CatchUp();
  return revoked;
}

}  // namespace tessera::server
