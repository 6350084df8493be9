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
#include "agent/node_agent.h"
#include "agent/node_object.h"
#include "agent/nvml.h"
#include "cli/client.h"

namespace tessera::cli {

using agent::AgentLoop;
using agent::AgentOptions;
using agent::AgentSetup;

CLI::App* AddAgentCommand(CLI::App& app, AgentOptions& opts);
int RunAgent(const AgentOptions& opts, std::ostream& out, std::ostream& err);

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

}  // namespace tessera::cli

#endif  // TESSERA_CLI_AGENT_CMD_H_
