// etcd's client, store, ledger and election live in a module of their own,
// libtessera-etcd.so beside the `tessera` binary, loaded (dlopen) only by a command that reaches
// etcd: `tessera server --store etcd://...` and `tessera store`. What they need (gRPC, protobuf
// and abseil: 47 shared libraries) cost every other command most of its start-up, measured in
// docs/BENCHMARKS.md. The module is built with the binary from the same sources; the table below
// is all the binary sees of it.
#ifndef TESSERA_STORE_ETCD_MODULE_H_
#define TESSERA_STORE_ETCD_MODULE_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"
#include "store/election.h"
#include "store/etcd_wire.h"
#include "store/store.h"
#include "store/usage_store.h"

namespace tessera::store {

// Bumped whenever the table or a type it passes changes shape.
inline constexpr int kEtcdModuleVersion = 1;

struct EtcdModule {
  int version = kEtcdModuleVersion;
  Result<std::unique_ptr<Store>> (*open_store)(EtcdStoreOptions options);
  Result<std::unique_ptr<UsageStore>> (*open_usage_store)(const EtcdOptions& etcd);
  // Campaigns as `id` for `name` (store/etcd_election.h).
  std::unique_ptr<Election> (*open_election)(const EtcdOptions& etcd, const std::string& name,
                                             const std::string& id, int ttl_seconds);
  std::unique_ptr<EtcdCaller> (*open_caller)(const EtcdOptions& etcd);
};

// The module's table (loaded once, kept for the process's life); FailedPrecondition naming the
// file and the loader's reason when it cannot be loaded.
Result<const EtcdModule*> LoadEtcdModule();

}  // namespace tessera::store

// The module's one exported symbol.
extern "C" const tessera::store::EtcdModule* tessera_etcd_module();

#endif  // TESSERA_STORE_ETCD_MODULE_H_
