// A client of etcd's v3 API through its JSON gateway (POST /v3/kv/range, /v3/kv/txn,
// /v3/kv/compaction, /v3/watch, /v3/lease/*, /v3/maintenance/status), over Tessera's HTTP client
// (net/http_client.h). The gateway speaks the gRPC messages as JSON: keys and values in base64,
// 64-bit integers as strings, fields at their default value left out.
//
// Several endpoints (the members of one etcd cluster): a call goes to the one that answered
// last and, when it cannot be reached, to the next. What etcd refuses comes back with its
// message: a compacted revision as FailedPrecondition, a revision in the future as
// InvalidArgument, no quorum or no member reachable as Unavailable.
#ifndef TESSERA_STORE_ETCD_CLIENT_H_
#define TESSERA_STORE_ETCD_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "net/http_client.h"

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

// "etcd://h1:2379,h2:2379" (etcds:// for TLS), with an optional path as the key prefix
// ("etcd://h1:2379/team-cluster" -> "/team-cluster/").
Result<EtcdOptions> ParseEtcdUrl(std::string_view url);

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

class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  const EtcdOptions& options() const { return options_; }

  // POST /v3/`method` ("kv/range", "kv/txn", ...) with `request`; etcd's answer.
  Result<nlohmann::json> Call(std::string_view method, const nlohmann::json& request);

  // A watch (POST /v3/watch with `create_request`): `on_response` gets each WatchResponse
  // (the "result" of each message) until it returns false, the stream ends (Unavailable) or
  // `cancel` is cancelled (Ok).
  Status Watch(const nlohmann::json& create_request,
               const std::function<bool(const nlohmann::json&)>& on_response,
               net::StreamCancel* cancel = nullptr);
  // Any of etcd's streams (POST /v3/`method`: "watch", "lease/keepalive") with one request.
  Status Stream(std::string_view method, const nlohmann::json& request,
                const std::function<bool(const nlohmann::json&)>& on_response,
                net::StreamCancel* cancel = nullptr);

 private:
  struct Pool;
  net::Endpoint EndpointAt(size_t i) const;
  EtcdOptions options_;
  std::atomic<size_t> current_{0};            // the member that answered last
  std::vector<std::unique_ptr<Pool>> pools_;  // kept connections, one pool per member
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_ETCD_CLIENT_H_
