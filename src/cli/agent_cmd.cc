#include "cli/agent_cmd.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "agent/checkup.h"
#include "agent/fake_gpus.h"
#include "agent/fence.h"
#include "agent/node_object.h"
#include "agent/nvml.h"
#include "agent/process_tree.h"
#include "api/json_read.h"
#include "api/kinds.h"
#include "api/yaml.h"
#include "cli/client.h"
#include "cli/server_cmd.h"
#include "server/api_server.h"
#include "server/files.h"

namespace tessera::cli {

using nlohmann::json;

namespace {

json InventoryJson(const agent::NodeGpus& gpus) {
  json list = json::array();
  for (const agent::GpuInfo& g : gpus.gpus) {
    json migs = json::array();
    for (const agent::MigDeviceInfo& m : g.mig_devices) {
      migs.push_back({{"uuid", m.uuid},
                      {"memoryMiB", m.memory_mib},
                      {"gpuInstanceId", m.gpu_instance_id},
                      {"computeInstanceId", m.compute_instance_id}});
    }
    list.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"name", g.name},
                    {"product", g.product},
                    {"memoryMiB", g.memory_mib},
                    {"pciBusId", g.pci_bus_id},
                    {"numaNode", g.numa_node},
                    {"migCapable", g.mig_capable},
                    {"migEnabled", g.mig_enabled},
                    {"migDevices", migs},
                    {"eccEnabled", g.ecc_enabled},
                    {"computeMode", agent::ComputeModeName(g.compute_mode)},
                    {"nvlinkPeers", g.nvlink_peers}});
  }
  return {{"source", gpus.source},
          {"driverVersion", gpus.driver_version},
          {"nvmlVersion", gpus.nvml_version},
          {"gpus", list}};
}

}  // namespace

CLI::App* AddAgentCommand(CLI::App& app, AgentOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("agent", "Run the node agent: discover GPUs, register, heartbeat");
  cmd->add_option("--server", o.server, "Control plane HOST:PORT or URL (else TESSERA_ADDR)");
  cmd->add_option("--join-token-file", o.join_token_file,
                  "File holding the join token (mode 0600), used once to obtain the node's token");
  cmd->add_option("--token-file", o.token_file,
                  "File holding this node's agent token (mode 0600; default "
                  "<work-dir>/node.token, written on first join)");
  cmd->add_option("--ca-file", o.ca_file, "PEM CA bundle for an https:// server");
  cmd->add_option("--name", o.name, "Node name (default: the host name)");
  cmd->add_option("--advertise-address", o.advertise_address,
                  "Address other nodes reach this one at, given to distributed jobs as "
                  "MASTER_ADDR and host lists (default: the first non-loopback IPv4 address)");
  cmd->add_option("--fake-gpus", o.fake_gpus,
                  "Synthetic GPUs instead of NVML, e.g. 8xH100-80GB,2xT4");
  cmd->add_option("--nvml-library", o.nvml_library, "Path of libnvidia-ml")->capture_default_str();
  cmd->add_option("--labels", o.labels, "Extra node labels: k=v,k2=v2");
  cmd->add_option("--config", o.config_file, "YAML file with labels (a map) and taints (a list)");
  cmd->add_option("--taints", o.taints, "Node taints: key=value:NoSchedule,...");
  cmd->add_option("--reserved-cpu", o.reserved_cpu_milli, "Millicores kept for the system")
      ->capture_default_str();
  cmd->add_option("--reserved-memory", o.reserved_memory_mib, "MiB kept for the system")
      ->capture_default_str();
  cmd->add_option("--heartbeat-seconds", o.heartbeat_seconds, "Seconds between heartbeats")
      ->capture_default_str();
  cmd->add_flag("--discover", o.discover,
                "Print the GPUs found (and one telemetry sample) and exit");
  cmd->add_option("--work-dir", o.work_dir,
                  "Working directories and logs of the tasks (default ./.tessera/agent-NAME)");
  cmd->add_option("--container-runtime", o.container_runtime,
                  "Command that runs tasks with an image (default: podman, docker or nerdctl, "
                  "the first on PATH; none: such tasks fail)");
  cmd->add_option("--share-isolation", o.share_isolation,
                  "How fractional GPU shares are held to their memory: interposer "
                  "(libtessera-share.so preloaded into their tasks; docs/ISOLATION.md) or none")
      ->check(CLI::IsMember({"interposer", "none"}))
      ->capture_default_str();
  cmd->add_option("--mps-control", o.mps_control,
                  "The MPS control command, run per card whose GpuSharingConfig says shared.mps "
                  "(needs the card in Exclusive_Process mode; the agent never changes it); none: "
                  "such shares take the interposer")
      ->capture_default_str();
  cmd->add_option("--cgroup-root", o.cgroup_root,
                  "cgroup v2 hierarchy for a group per pod: stops and fences reach every process "
                  "through it, and CPU and memory are limited where its controllers allow (auto: "
                  "/sys/fs/cgroup, else /sys/fs/cgroup/unified; empty: none)")
      ->capture_default_str();
  cmd->add_option("--task-uids", o.task_uids,
                  "BASE:COUNT: when the agent is root, a task without securityContext.runAsUser "
                  "runs as a uid of this range of its pod's own, never as root (none: as the "
                  "agent's user)")
      ->capture_default_str();
  cmd->add_option("--health-quiet-seconds", o.health_quiet_seconds,
                  "Seconds without new XID/ECC errors before an unhealthy GPU is healthy again")
      ->capture_default_str();
  cmd->add_option("--ignore-xids", o.ignored_xids,
                  "XIDs that do not make a GPU unhealthy, comma-separated (default: those "
                  "NVIDIA's Xid catalog gives RESTART_APP or IGNORE: 13,31,43,63,68,92,94)");
  cmd->add_flag("--allow-gpu-reset", o.allow_gpu_reset,
                "Reset a GPU the server quarantined for an Xid whose action is RESET_GPU, once "
                "no process uses it (default: never reset; the quarantine's event says what to "
                "run)");
  cmd->add_option("--gpu-reset-command", o.gpu_reset_command,
                  "With --allow-gpu-reset: the command that resets GPU {index}, run without a "
                  "shell")
      ->capture_default_str();
  cmd->add_option("--stop-grace-seconds", o.stop_grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when a task is stopped")
      ->capture_default_str();
  cmd->add_option("--fence-seconds", o.fence_seconds,
                  "Seconds without an accepted heartbeat after which this node stops its pods "
                  "(the server's --node-grace-seconds must exceed this plus the stop grace)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  return cmd;
}

CLI::App* AddFenceKeeperCommand(CLI::App& app, FenceKeeperOptions& o) {
  CLI::App* cmd = app.add_subcommand("fence-keeper",
                                     "Stops a node's pods when its agent's lease "
                                     "expires (started by the agent)");
  cmd->group("");  // not for people
  cmd->add_option("--state-dir", o.state_dir)->required();
  cmd->add_option("--fence-ms", o.fence_ms)->required();
  cmd->add_option("--stop-grace-ms", o.stop_grace_ms)->required();
  cmd->add_option("--agent-pid", o.agent_pid)->required();
  return cmd;
}

int PrepareAgent(const AgentOptions& o, AgentSetup* setup, std::ostream& err) {
  agent::NodeIdentity& id = setup->id;
  id.name = o.name;
  if (id.name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    id.name = host;
    for (char& c : id.name) c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '-';
  }
  auto labels = agent::ParseLabels(o.labels);
  auto taints = agent::ParseTaints(o.taints);
  if (!labels.ok() || !taints.ok()) {
    err << "error: " << (labels.ok() ? taints.status() : labels.status()).message() << "\n";
    return 2;
  }
  id.labels = *labels;
  id.taints = *taints;
  id.address = o.advertise_address.empty() ? agent::NodeAddress() : o.advertise_address;
  if (!o.config_file.empty()) {
    // labels: {k: v}; taints: [{key, value, effect}]; flags add to the file's.
    std::ifstream in(o.config_file);
    std::stringstream text;
    text << in.rdbuf();
    auto docs = api::ParseYamlDocuments(text.str());
    if (!in || !docs.ok() || docs->size() != 1 || !(*docs)[0].is_object()) {
      err << "error: --config " << o.config_file << ": "
          << (docs.ok() ? "expected a map with labels and taints" : docs.status().message())
          << "\n";
      return 2;
    }
    const json& cfg = (*docs)[0];
    for (const auto& [k, v] : cfg.items()) {
      const bool ok = (k == "labels" && v.is_object()) || (k == "taints" && v.is_array());
      if (!ok) {
        err << "error: --config " << o.config_file << ": " << k
            << ": expected labels (a map) or taints (a list)\n";
        return 2;
      }
    }
    const json file_labels = cfg.value("labels", json::object());
    for (const auto& [k, v] : file_labels.items()) {
      if (!v.is_string()) {
        err << "error: --config " << o.config_file << ": labels." << k << ": must be a string\n";
        return 2;
      }
      if (!id.labels.contains(k)) id.labels[k] = v.get<std::string>();
    }
    for (const json& t : cfg.value("taints", json::array())) id.taints.push_back(t);
  }
  agent::MachineCapacity(o.reserved_cpu_milli, o.reserved_memory_mib, &id);
  id.boot_id = agent::BootId();

  Result<agent::NodeGpus> gpus = agent::NodeGpus{};
  if (!o.fake_gpus.empty()) {
    gpus = agent::FakeGpus(o.fake_gpus, id.name);
  } else {
    auto loaded = agent::Nvml::Load(o.nvml_library);
    if (!loaded.ok()) {
      err << "error: " << loaded.status().message() << "\n";
      return 1;
    }
    setup->nvml = std::move(loaded).value();
    gpus = setup->nvml->Discover();
  }
  if (!gpus.ok()) {
    err << "error: " << gpus.status().message() << "\n";
    return gpus.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  setup->gpus = std::move(gpus).value();
  setup->node = agent::NodeObject(id, setup->gpus, server::FormatTime(agent::NowMs()));
  return 0;
}

int RunAgent(const AgentOptions& o, std::ostream& out, std::ostream& err) {
  agent::StandInForInit();  // as a container's PID 1, orphans are reaped by a stand-in
  AgentSetup setup;
  if (int code = PrepareAgent(o, &setup, err); code != 0) return code;
  const json& node = setup.node;
  if (o.discover) {
    const std::unique_ptr<agent::Nvml>& nvml = setup.nvml;
    const agent::NodeGpus* gpus = &setup.gpus;
    json report = {{"inventory", InventoryJson(*gpus)}, {"node", node}};
    if (nvml) {
      auto sample = nvml->Sample();
      if (sample.ok()) report["telemetry"] = agent::SampleJson(*sample);
      if (auto c = nvml->Checkup(); c.ok()) report["checkups"] = agent::CheckupJson(*c);
    }
    out << report.dump(2) << "\n";
    return 0;
  }

  // The token is never taken from TESSERA_TOKEN or ~/.tessera/config: only from files.
  auto ep = ResolveEndpoint(o.server, "(from a file)", o.ca_file);
  if (!ep.ok()) {
    err << "error: " << ep.status().message() << "\n";
    return 2;
  }
  auto token = AgentToken(o, setup.id.name, *ep);
  if (!token.ok()) {
    err << "error: " << token.status().message() << "\n";
    const StatusCode c = token.status().code();
    return c == StatusCode::kInvalidArgument || c == StatusCode::kFailedPrecondition ? 2 : 1;
  }
  ep->token = *token;
  sigset_t stop = BlockStopSignals();
  // Readable once a stop signal is pending (they are blocked, so they wait there).
  const int stop_fd = signalfd(-1, &stop, SFD_CLOEXEC);
  if (stop_fd < 0) {
    err << "error: signalfd: " << std::strerror(errno) << "\n";
    return 1;
  }
  const int code = AgentLoop(o, *ep, setup, stop_fd, out, err);
  close(stop_fd);
  return code;
}

Result<std::string> ReadSecretFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (st.st_mode & 077) != 0) {
    ::close(fd);
    return FailedPrecondition(path + ": must be readable by its owner only (chmod 600 " + path +
                              ")");
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < 65536;) {
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.erase(0, 1);
  if (text.empty()) return FailedPrecondition(path + ": empty");
  return text;
}

Result<std::string> AgentToken(const AgentOptions& o, const std::string& node, Endpoint ep) {
  const std::string work = o.work_dir.empty() ? ".tessera/agent-" + node : o.work_dir;
  const std::string path = o.token_file.empty() ? work + "/node.token" : o.token_file;
  auto have = ReadSecretFile(path);
  if (have.ok() || have.status().code() != StatusCode::kNotFound) return have;
  if (o.join_token_file.empty()) {
    return InvalidArgument("no node token in " + path +
                           " and no --join-token-file to obtain one (tessera token create "
                           "--agent makes a join token; --agent --node " +
                           node + " a node token)");
  }
  auto join = ReadSecretFile(o.join_token_file);
  if (!join.ok()) return join.status();
  ep.token = *join;
  const json body = {{"role", "agent"}, {"node", node}};
  auto r = Request(ep, "POST", "/apis/tessera.io/v1/tokens", body.dump(), "application/json");
  if (!r.ok()) return r.status();
  if (r->status != 201) {
    const json reply = json::parse(r->body, nullptr, false);
    const std::string why = reply.is_object() ? reply.value("message", r->body) : r->body;
    return PermissionDenied("the server refused to make node " + node + "'s token: " + why);
  }
  const json reply = json::parse(r->body, nullptr, false);
  const std::string token = reply.is_object() ? reply.value("token", "") : "";
  if (token.empty()) return Internal("the server's reply has no token");
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  TESSERA_RETURN_IF_ERROR(server::WriteFileDurably(path, token + "\n", 0600));
  return token;
}

}  // namespace tessera::cli
