// kubectl-style commands against the control plane's REST API: apply, get, describe, delete,
// cordon, uncordon, drain, top (what is allocated, per node, GPU or queue), events, logs, exec,
// usage
// (GPU-hours and cost) and token create. Server and token come from --server/--token,
// TESSERA_ADDR/TESSERA_TOKEN or
// ~/.tessera/config. Exit codes: 0 done, 1 refused by the server, 2 bad usage or input,
// 3 server unreachable.
#ifndef TESSERA_CLI_RESOURCE_CMDS_H_
#define TESSERA_CLI_RESOURCE_CMDS_H_

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tessera::cli {

struct ResourceOptions {
  std::string server;
  std::string token;
  std::string ca_file;
  std::string ns = "default";
  bool all_namespaces = false;
  std::string output;  // get: "" (table), wide, json, yaml
  std::string selector;
  std::vector<std::string> files;  // apply -f
  std::string kind;                // get/delete
  std::string name;
  std::string gpu;  // cordon/uncordon --gpu: one card (index or UUID) instead of the node
  std::string token_namespace;  // token create --namespace
  bool token_agent = false;     // token create --agent [--node N]
  std::string token_node;
  bool token_metrics = false;  // token create --metrics
  std::string token_id;        // token revoke ID

  CLI::App* apply = nullptr;
  CLI::App* get = nullptr;
  CLI::App* del = nullptr;
  CLI::App* token_create = nullptr;
  CLI::App* token_list = nullptr;
  CLI::App* token_revoke = nullptr;
  CLI::App* describe = nullptr;
  CLI::App* cordon = nullptr;
  CLI::App* uncordon = nullptr;
  CLI::App* drain = nullptr;
  CLI::App* top = nullptr;
  CLI::App* events = nullptr;
  std::string top_what;  // nodes | gpus | queues
  CLI::App* logs = nullptr;
  std::string pod;
  int64_t tail = -1;
  bool follow = false;
  bool previous = false;  // logs: each pod's previous run of its container
  bool idle = false;      // get jobs --idle
  CLI::App* exec = nullptr;
  std::vector<std::string> command;  // exec JOB [-p POD] -- COMMAND...
  int exec_wait = 0;                 // exec --wait: seconds to wait for the pod to run
  CLI::App* usage = nullptr;
  std::string usage_by = "namespace";
  std::string since = "24h";
  std::string until;
  CLI::App* doctor = nullptr;
  struct Doctor {
    std::string target;  // "", node/N, gpu/N/I, job/J
    bool local = false;  // --local: this machine through NVML (and dcgmi when installed)
    std::string nvml_library = "libnvidia-ml.so.1";
    // On etcd: `tessera store status`'s view for the control-plane checks.
    std::string store, etcd_ca_file, etcd_cert_file, etcd_key_file;
  } doctor_flags;
};

void AddResourceCommands(CLI::App& app, ResourceOptions& opts);
// --server, --token and --ca-file on `cmd`.
void AddConnectionFlags(CLI::App* cmd, ResourceOptions& o);

// Runs whichever of the commands was parsed; -1 when none was.
int RunResourceCommand(const ResourceOptions& opts, std::istream& in, std::ostream& out,
                       std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_RESOURCE_CMDS_H_
