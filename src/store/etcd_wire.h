// What the binary knows of etcd without its client: where etcd is (EtcdOptions, from the store's
// URL) and the JSON of etcd's messages in protobuf's JSON mapping, as its gateway speaks them:
// keys and values in base64, 64-bit integers as strings. The client, the store and the election
// speak gRPC (libgrpc++, libprotobuf and abseil: 47 shared libraries), so they live in a module
// of their own, loaded only by a command that reaches etcd (store/etcd_module.h).
#ifndef TESSERA_STORE_ETCD_WIRE_H_
#define TESSERA_STORE_ETCD_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::store {

// Where etcd is and how to reach it.
struct EtcdOptions {
  std::vector<std::string> endpoints;  // host:port of each member
  bool tls = false;                    // https:// (etcds:// in the URL)
  std::string ca_file;                 // PEM bundle that verifies the members' certificates
  std::string cert_file, key_file;     // a client certificate, for --client-cert-auth
  std::string prefix = "/tessera/";    // every key Tessera writes starts with it
  // etcd's limits on one request: --max-txn-ops (128) and --max-request-bytes (1.5 MiB).
  size_t max_txn_ops = 128;
  size_t max_request_bytes = 1536 * 1024;
};

// An object store on etcd (store/etcd_store.h).
struct EtcdStoreOptions {
  EtcdOptions etcd;
  size_t retained_changes = 16'384;  // in memory, for watches
  int64_t wait_ms = 10'000;          // how long ChangesAfter waits for this store's own commit
};

// Where the election (store/etcd_election.h) keeps the leader of `name`, and each replica's record
// (read by `tessera store status`).
inline std::string EtcdElectionKey(const EtcdOptions& etcd, const std::string& name) {
  return etcd.prefix + "_election/" + name;
}
inline std::string EtcdReplicasPrefix(const EtcdOptions& etcd) {
  return etcd.prefix + "_replicas/";
}

// etcd's API, one call at a time: the client (store/etcd_client.h), as `tessera store status`
// reaches it through the etcd module (store/etcd_module.h).
class EtcdCaller {
 public:
  virtual ~EtcdCaller() = default;
  virtual Result<nlohmann::json> Call(std::string_view method, const nlohmann::json& request) = 0;
};

// "etcd://h1:2379,h2:2379" (etcds:// for TLS), with an optional path as the key prefix
// ("etcd://h1:2379/team-cluster" -> "/team-cluster/").
Result<EtcdOptions> ParseEtcdUrl(std::string_view url);

// Bytes in base64 (standard alphabet, padded) and back, as the mapping writes a bytes field.
std::string Base64(std::string_view bytes);
Result<std::string> Unbase64(std::string_view text);

// The pieces of a transaction: a comparison of a key's mod_revision (0: the key is absent), a
// put, a delete.
nlohmann::json EtcdModIs(const std::string& key, int64_t revision);
nlohmann::json EtcdPut(const std::string& key, const std::string& value);
nlohmann::json EtcdDelete(const std::string& key);
// A base64 field of the gateway's messages (a key, a value), decoded; "" when absent.
std::string EtcdText(const nlohmann::json& kv, const char* field);
// A 64-bit integer of the gateway: a string of digits, a number, or absent (0).
int64_t EtcdInt(const nlohmann::json& message, const char* field);
// The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(std::string prefix);

}  // namespace tessera::store

#endif  // TESSERA_STORE_ETCD_WIRE_H_
