// `tessera store copy`: moves a single server's state to etcd, for running replicas over it.
// `tessera store status`: the replicas on etcd (the leader, each one's watch behind etcd's
// revision) and etcd's members (database size against the quota, alarms).
#ifndef TESSERA_CLI_STORE_CMD_H_
#define TESSERA_CLI_STORE_CMD_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace tessera::cli {

struct StoreCopyOptions {
  std::string from;  // a data directory (sqlite:DIR or DIR), its server stopped
  std::string to;    // etcd://HOST:PORT[,HOST:PORT...][/PREFIX], an empty prefix
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
};

struct StoreStatusOptions {
  std::string store;  // etcd://HOST:PORT[,HOST:PORT...][/PREFIX]
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
  int64_t quota_bytes = int64_t{2} << 30;  // etcd's --quota-backend-bytes (its default: 2 GiB)
  std::string output;                      // "" (text) or "json"
};

// What `tessera store status` reports: the leader, each replica's record and lag, each etcd
// member's status and database size against the quota, etcd's alarms (as JSON).
Result<nlohmann::json> StoreStatus(const StoreStatusOptions& o);

// Returns the `store` command; its `copy` and `status` subcommands are `*copy` and `*status`.
CLI::App* AddStoreCommand(CLI::App& app, StoreCopyOptions& o, CLI::App** copy,
                          StoreStatusOptions& s, CLI::App** status);

// Copies every object (tokens included) and checks the copy; the exit code.
int RunStoreCopy(const StoreCopyOptions& o, std::ostream& out, std::ostream& err);

// Prints the status; the exit code (1 when etcd cannot be reached).
int RunStoreStatus(const StoreStatusOptions& o, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_STORE_CMD_H_
