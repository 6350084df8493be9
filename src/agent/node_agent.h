// A node's agent at work (`tessera agent`, and the one inside `tessera dev`): registers the
// node, renews its lease and rewrites the Node when its status moves, samples telemetry and
// health every second, runs what is bound to the node (agent/worker.h) and the commands run in
// its pods (agent/exec.h), fences itself when no heartbeat is accepted (agent/fence.h), and
// reports usage for kubectl top. src/cli parses the flags into AgentOptions and wires it.
#ifndef TESSERA_AGENT_NODE_AGENT_H_
#define TESSERA_AGENT_NODE_AGENT_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "agent/http_client.h"
#include "agent/node_object.h"
#include "agent/nvml.h"
#include "agent/telemetry.h"

namespace tessera::agent {

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
  std::string ignored_xids;  // "13,31,..."; empty: by NVIDIA's Xid catalog (core/xid.h)
  // Reset the GPUs the scheduling loop quarantined for a reset (agent/gpu_reset.h); off: never.
  bool allow_gpu_reset = false;
  std::string gpu_reset_command = "nvidia-smi --gpu-reset -i {index}";
  // BASE:COUNT, the uids of tasks without runAsUser when the agent is root (a uid per pod);
  // "none": they run as the agent's user.
  std::string task_uids = "2000000000:65536";
};

// What an agent found before it joins: its identity, its GPUs (and NVML when real), its Node.
struct AgentSetup {
  NodeIdentity id;
  std::unique_ptr<Nvml> nvml;
  NodeGpus gpus;
  nlohmann::json node;
};
// Samples as JSON (the Node's status.telemetry, `tessera agent --discover`).
nlohmann::json SampleJson(const std::vector<GpuSample>& samples);

// The wall clock, ms since the epoch.
int64_t NowMs();

// Registers, heartbeats and runs work until `stop_fd` becomes readable (asked to stop);
// returns the exit code (2: a bad option, 1: refused by the server).
int AgentLoop(const AgentOptions& opts, const Endpoint& ep, AgentSetup& setup, int stop_fd,
              std::ostream& out, std::ostream& err);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_NODE_AGENT_H_
