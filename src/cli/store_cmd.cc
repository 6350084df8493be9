#include "cli/store_cmd.h"

#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "server/files.h"
#include "store/etcd_store.h"
#include "store/store.h"

namespace tessera::cli {

CLI::App* AddStoreCommand(CLI::App& app, StoreCopyOptions& o, CLI::App** copy) {
  CLI::App* store = app.add_subcommand("store", "The control plane's state store");
  store->require_subcommand(1);
  *copy = store->add_subcommand(
      "copy", "Copy a stopped server's state (SQLite) to etcd, where replicas share it");
  (*copy)
      ->add_option("--from", o.from, "The server's data directory (sqlite:DIR or DIR)")
      ->required();
  (*copy)
      ->add_option("--to", o.to, "etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS)")
      ->required();
  (*copy)->add_option("--etcd-ca-file", o.etcd_ca_file,
                      "PEM CA bundle that verifies etcd's members");
  (*copy)->add_option("--etcd-cert-file", o.etcd_cert_file, "PEM client certificate for etcd");
  (*copy)->add_option("--etcd-key-file", o.etcd_key_file, "The client certificate's key (PEM)");
  return store;
}

namespace {

// The objects of `kind` in both stores, compared by key and body.
Status Same(store::Store& from, store::Store& to, const std::string& kind, size_t* count) {
  auto a = from.List(kind, std::nullopt);
  if (!a.ok()) return a.status();
  auto b = to.List(kind, std::nullopt);
  if (!b.ok()) return b.status();
  std::map<store::ObjectKey, const std::string*> copied;
  for (const store::StoredObject& o : *b) copied[o.key] = &o.body;
  for (const store::StoredObject& o : *a) {
    auto it = copied.find(o.key);
    if (it == copied.end() || *it->second != o.body) {
      return Internal("the copy of " + store::Describe(o.key) + " differs from the original");
    }
  }
  if (a->size() != b->size())
    return Internal(kind + ": the copy holds objects the original does not");
  *count = a->size();
  return Status::Ok();
}

Status Copy(const StoreCopyOptions& o, std::ostream& out) {
  std::string dir = o.from;
  if (dir.starts_with("sqlite:")) dir = dir.substr(7);
  const std::string db = dir + "/state.db";
  if (!std::filesystem::exists(db)) return InvalidArgument("--from: no state database at " + db);
  // The server must be stopped: it holds the directory while it runs.
  auto owner = server::DirLock::Acquire(dir);
  if (!owner.ok()) return FailedPrecondition("--from: " + owner.status().message());
  auto from = store::OpenSqliteStore(db);
  if (!from.ok()) return from.status();
  auto etcd = store::ParseEtcdUrl(o.to);
  if (!etcd.ok()) return InvalidArgument("--to: " + etcd.status().message());
  etcd->ca_file = o.etcd_ca_file;
  etcd->cert_file = o.etcd_cert_file;
  etcd->key_file = o.etcd_key_file;
  auto to = store::OpenEtcdStore({.etcd = *etcd});
  if (!to.ok()) return to.status();
  auto there = (*to)->ListKinds();
  if (!there.ok()) return there.status();
  if (!there->empty()) {
    return FailedPrecondition("--to: " + etcd->prefix + " holds objects already (" + (*there)[0] +
                              "...): copy into an empty prefix");
  }
  auto kinds = (*from)->ListKinds();
  if (!kinds.ok()) return kinds.status();
  size_t total = 0;
  for (const std::string& kind : *kinds) {
    auto objects = (*from)->List(kind, std::nullopt);
    if (!objects.ok()) return objects.status();
    // Within etcd's limits per transaction: at most 100 keys and about 1 MiB.
    std::vector<store::Write> batch;
    size_t bytes = 0;
    auto flush = [&]() -> Status {
      if (batch.empty()) return Status::Ok();
      auto r = (*to)->Commit(batch);
      batch.clear();
      bytes = 0;
      return r.ok() ? Status::Ok() : r.status();
    };
    for (store::StoredObject& obj : *objects) {
      if (batch.size() >= 100 || bytes + obj.body.size() > (1 << 20)) {
        TESSERA_RETURN_IF_ERROR(flush());
      }
      bytes += obj.body.size();
      batch.push_back({store::Write::Op::kCreate, std::move(obj.key), std::move(obj.body), {}});
    }
    TESSERA_RETURN_IF_ERROR(flush());
    size_t n = 0;
    TESSERA_RETURN_IF_ERROR(Same(**from, **to, kind, &n));
    out << kind << ": " << n << "\n";
    total += n;
  }
  out << "copied " << total << " objects of " << kinds->size() << " kinds from " << db << " to "
      << o.to << ", each checked against the original\n";
  out << "not copied: the accounting ledger (" << dir
      << "/usage.db) stays with this directory; tokens were copied, and admin.token works on "
         "every replica\n";
  return Status::Ok();
}

}  // namespace

int RunStoreCopy(const StoreCopyOptions& o, std::ostream& out, std::ostream& err) {
  Status s = Copy(o, out);
  if (s.ok()) return 0;
  err << "error: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace tessera::cli
