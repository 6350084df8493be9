// `tessera store copy`: moves a single server's state to etcd, for running replicas over it.
#ifndef TESSERA_CLI_STORE_CMD_H_
#define TESSERA_CLI_STORE_CMD_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace tessera::cli {

struct StoreCopyOptions {
  std::string from;  // a data directory (sqlite:DIR or DIR), its server stopped
  std::string to;    // etcd://HOST:PORT[,HOST:PORT...][/PREFIX], an empty prefix
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
};

// Returns the `store` command; its `copy` subcommand is `*copy`.
CLI::App* AddStoreCommand(CLI::App& app, StoreCopyOptions& o, CLI::App** copy);

// Copies every object (tokens included) and checks the copy; the exit code.
int RunStoreCopy(const StoreCopyOptions& o, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_STORE_CMD_H_
