// `tessera dev`: the control plane and a node agent in one process, on this machine, with state
// in ./.tessera/: real GPUs when NVML finds them, else simulated ones, clearly labelled. It
// writes ~/.tessera/config so that the client commands work with no flags.
#ifndef TESSERA_CLI_DEV_CMD_H_
#define TESSERA_CLI_DEV_CMD_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/server_cmd.h"

namespace tessera::cli {

struct DevOptions {
  std::string data_dir = ".tessera";
  std::string listen = "127.0.0.1:8443";
  std::string fake_gpus;  // empty: NVML, falling back to 8xH100-80GB
  std::string policy = "fragpack";
  store::SqliteOptions store;  // --fsync-every-commit
  bool write_config = true;
  bool plain_http = false;  // serve HTTP instead of HTTPS with the own CA
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string container_runtime;  // empty: the first of podman, docker, nerdctl on PATH
  std::string share_isolation = "interposer";  // the agent's --share-isolation
  AccountingFlags accounting;
  QueueingFlags queueing;
};

CLI::App* AddDevCommand(CLI::App& app, DevOptions& opts);
int RunDev(const DevOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_DEV_CMD_H_
