// The table the etcd module exports (store/etcd_module.h): its one entry point.
#include <memory>

#include "store/etcd_client.h"
#include "store/etcd_election.h"
#include "store/etcd_module.h"
#include "store/etcd_store.h"
#include "store/etcd_usage_store.h"

namespace tessera::store {
namespace {

constexpr EtcdModule kModule = {
    .version = kEtcdModuleVersion,
    .open_store = OpenEtcdStore,
    .open_usage_store = OpenEtcdUsageStore,
    .open_election = [](const EtcdOptions& etcd, const std::string& name, const std::string& id,
                        int ttl_seconds) -> std::unique_ptr<Election> {
      return std::make_unique<EtcdElection>(etcd, name, id, ttl_seconds);
    },
    .open_caller = [](const EtcdOptions& etcd) -> std::unique_ptr<EtcdCaller> {
      return std::make_unique<EtcdClient>(etcd);
    },
};

}  // namespace
}  // namespace tessera::store

extern "C" __attribute__((visibility("default"))) const tessera::store::EtcdModule*
tessera_etcd_module() {
  return &tessera::store::kModule;
}
