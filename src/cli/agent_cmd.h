// `tessera agent`: discovers the node's GPUs (NVML, or --fake-gpus), registers the node with the
// control plane, keeps its heartbeat, and runs the pods the scheduler binds to it; `--discover`
// prints what it found and exits.
#ifndef TESSERA_CLI_AGENT_CMD_H_
#define TESSERA_CLI_AGENT_CMD_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "agent/gpu_info.h"
#include "agent/node_object.h"
#include "agent/nvml.h"
#include "cli/client.h"

namespace tessera::cli {

struct AgentOptions {
  std::string server;  // else TESSERA_ADDR / ~/.tessera/config
  // Credentials come from files readable by their owner only, never from the command line or
  // the environment (tasks could read those). The node's own token is kept in `token_file`
  // (default <work-dir>/node.token); on first start it is obtained with the join token.
  std::string join_token_file;
  std::string token_file;
  std::string ca_file;
  std::string name;  // default: the host name
  std::string fake_gpus;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string labels;
  std::string taints;
  std::string config_file;  // labels and taints from YAML
  int64_t reserved_cpu_milli = 1000;
  int64_t reserved_memory_mib = 2048;
  int heartbeat_seconds = 5;      // also how often telemetry is published
  std::string advertise_address;  // empty: this host's first non-loopback IPv4 address
  bool discover = false;
  std::string work_dir;           // default: ./.tessera/agent-<name>
  std::string container_runtime;  // docker | podman | a compatible command; empty: none
  // How fractional shares are held to their memory: "interposer" (libtessera-share.so beside
  // the executable, preloaded into their tasks) or "none".
  std::string share_isolation = "interposer";
  // nvidia-cuda-mps-control, run per card for shares through MPS (GpuSharingConfig shared.mps);
  // "none": MPS off.
  std::string mps_control = "nvidia-cuda-mps-control";
  int stop_grace_seconds = 10;
  // Seconds without an accepted heartbeat after which the node's pods are stopped (fence.h).
  int fence_seconds = 20;
  int health_quiet_seconds = 300;
  // The cgroup v2 hierarchy for pods' groups ("auto": found; empty: none, see cgroups.h).
  std::string cgroup_root = "auto";
  std::string ignored_xids;  // "13,31,..."; empty: the default list
  // BASE:COUNT, the uids of tasks without runAsUser when the agent is root (a uid per pod);
  // "none": they run as the agent's user.
  std::string task_uids = "2000000000:65536";
};

CLI::App* AddAgentCommand(CLI::App& app, AgentOptions& opts);
int RunAgent(const AgentOptions& opts, std::ostream& out, std::ostream& err);

// What an agent found before it joins: its identity, its GPUs (and NVML when real), its Node.
struct AgentSetup {
  agent::NodeIdentity id;
  std::unique_ptr<agent::Nvml> nvml;
  agent::NodeGpus gpus;
  nlohmann::json node;
};
// Discovers the GPUs and builds the Node; returns an exit code (0: ready).
int PrepareAgent(const AgentOptions& opts, AgentSetup* setup, std::ostream& err);
// The agent's credential: the node token in its token file, or, when there is none yet, one
// obtained with the join token and written there (mode 0600).
Result<std::string> AgentToken(const AgentOptions& opts, const std::string& node, Endpoint ep);
// The contents of a secret file, trimmed; an error when the file is readable by group or others.
Result<std::string> ReadSecretFile(const std::string& path);
// `tessera fence-keeper` (started by the agent, not by hand): see agent/fence.h.
struct FenceKeeperOptions {
  std::string state_dir;
  int64_t fence_ms = 0;
  int64_t stop_grace_ms = 0;
  int agent_pid = 0;
};
CLI::App* AddFenceKeeperCommand(CLI::App& app, FenceKeeperOptions& opts);

// Registers, heartbeats and runs work until `stop_fd` becomes readable (asked to stop).
int AgentLoop(const AgentOptions& opts, const Endpoint& ep, AgentSetup& setup, int stop_fd,
              std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_AGENT_CMD_H_
