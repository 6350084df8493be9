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

#include "agent/bindings.h"
#include "agent/cdi.h"
#include "agent/cgroups.h"
#include "agent/container_runtime.h"
#include "agent/exec.h"
#include "agent/fake_gpus.h"
#include "agent/fence.h"
#include "agent/health.h"
#include "agent/mps.h"
#include "agent/node_object.h"
#include "agent/nvml.h"
#include "agent/process_tree.h"
#include "agent/telemetry.h"
#include "agent/usage.h"
#include "agent/waker.h"
#include "agent/worker.h"
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

json SampleJson(const std::vector<agent::GpuSample>& samples) {
  json out = json::array();
  for (const agent::GpuSample& s : samples) {
    json procs = json::array();
    for (const agent::ProcessUse& p : s.processes) {
      procs.push_back({{"pid", p.pid}, {"usedMiB", p.used_memory_mib}});
    }
    out.push_back({{"index", s.index},
                   {"utilizationPct", s.utilization_pct},
                   {"memoryUtilizationPct", s.memory_utilization_pct},
                   {"memoryUsedMiB", s.memory_used_mib},
                   {"memoryFreeMiB", s.memory_free_mib},
                   {"temperatureC", s.temperature_c},
                   {"powerMw", s.power_mw},
                   {"smClockMhz", s.sm_clock_mhz},
                   {"eccCorrected", s.ecc_corrected},
                   {"eccUncorrected", s.ecc_uncorrected},
                   {"processes", procs}});
    if (s.nvlink_data_kib) out.back()["nvlinkDataKiB"] = *s.nvlink_data_kib;
  }
  return out;
}

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

// The agent's ApiClient: the CLI's HTTP(S) client on the resolved endpoint.
class HttpApi : public agent::ApiClient {
 public:
  // With `kept`, calls go over one connection kept open, one at a time (the work loop's many
  // small calls); without, each call has a connection of its own (long polls beside others).
  explicit HttpApi(Endpoint ep, bool kept = false)
      : ep_(std::move(ep)), kept_(kept ? std::make_unique<Connection>(ep_) : nullptr) {}
  Result<Reply> Call(const std::string& method, const std::string& target, const std::string& body,
                     const std::string& content_type) override {
    auto r = kept_ ? OnKept(method, target, body, content_type)
                   : Request(ep_, method, target, body, content_type);
    if (!r.ok()) return r.status();
    return Reply{r->status, std::move(r->body)};
  }
  Result<int> Stream(const std::string& target,
                     const std::function<void(std::string_view)>& on_data) override {
    std::string error_body;
    return RequestStream(ep_, target, on_data, &error_body);
  }

 private:
  Result<Response> OnKept(const std::string& method, const std::string& target,
                          const std::string& body, const std::string& content_type) {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_->Request(method, target, body, content_type);
  }

  Endpoint ep_;
  std::mutex mu_;
  const std::unique_ptr<Connection> kept_;
};

// Samples as the Node's status.telemetry, each process named by the pod it belongs to when it
// is one this agent runs.
json TelemetryJson(const std::vector<agent::GpuSample>& samples, const agent::Runner& runner) {
  std::map<pid_t, std::string> pod_of;
  for (const std::string& key : runner.Keys()) pod_of[runner.Pid(key)] = key;
  json out = SampleJson(samples);
  for (json& s : out) {
    for (json& p : s["processes"]) {
      const pid_t pgid = getpgid(static_cast<pid_t>(p.value("pid", 0)));
      auto it = pod_of.find(pgid);
      if (it != pod_of.end()) p["pod"] = it->second;
    }
  }
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Measures the node and its pods (agent/usage.h) and reports the usage over the window since
// the last beat, for metrics.k8s.io. A pod in a container is not measured: its processes are
// the runtime's, outside the pod's process tree and group.
void ReportUsage(const Endpoint& ep, const std::string& node, const agent::Worker& worker,
                 agent::UsageMeter* meter, std::ostream& err) {
  const int64_t at = NowMs();
  const auto node_usage = meter->Observe("", at, agent::ReadNodeUsage());
  std::vector<agent::PodProcesses> pods;
  std::vector<std::string> live = {""};
  for (const std::string& key : worker.runner().Keys()) {
    auto spec = worker.exec_targets().Get(key);
    if (spec && !spec->container.empty()) continue;
    pods.push_back({key, worker.runner().Pid(key), worker.runner().Cgroup(key)});
    live.push_back(key);
  }
  std::map<std::string, agent::UsageMeter::Usage> pod_usage;
  for (const auto& [key, c] : agent::ReadPodUsage(pods)) {
    if (auto u = meter->Observe(key, at, c)) pod_usage[key] = *u;
  }
  meter->Keep(live);
  if (!node_usage) return;
  auto r = Request(ep, "PUT", "/apis/tessera.io/v1/nodes/" + node + "/usage",
                   agent::UsageReport(*node_usage, pod_usage).dump(), "application/json");
  if (!r.ok()) {
    err << "warning: usage report: " << r.status().message() << "\n";
  } else if (r->status != 200) {
    err << "warning: usage report refused: " << r->body << "\n";
  }
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
                  "XIDs that do not make a GPU unhealthy (default 13,31,43,45,68,109)");
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
  setup->node = agent::NodeObject(id, setup->gpus, server::FormatTime(NowMs()));
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
      if (sample.ok()) report["telemetry"] = SampleJson(*sample);
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

// How often the Node is written even when its status has not changed.
constexpr int64_t kNodeRefreshMs = 60'000;

// Renews node `name`'s Lease (the server stamps renewTime), creating it if missing.
Result<Response> RenewLease(const Endpoint& ep, const std::string& name) {
  const json lease = {{"apiVersion", "tessera.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", name}}},
                      {"spec", {{"holderIdentity", name}}}};
  auto r =
      Request(ep, "PUT", "/apis/tessera.io/v1/leases/" + name, lease.dump(), "application/json");
  if (r.ok() && r->status == 404) {
    r = Request(ep, "POST", "/apis/tessera.io/v1/leases", lease.dump(), "application/json");
  }
  return r;
}

int AgentLoop(const AgentOptions& o, const Endpoint& endpoint, AgentSetup& setup, int stop_fd,
              std::ostream& out, std::ostream& err) {
  const Endpoint* ep = &endpoint;
  const agent::NodeIdentity& id = setup.id;
  const agent::NodeGpus* gpus = &setup.gpus;
  const json& node = setup.node;
  out << "node " << id.name << ": " << gpus->gpus.size() << " GPUs (" << gpus->source << ")"
      << std::endl;
  // Each beat reads the node and writes it back with a fresh status, based on the version read:
  // the first beat also sets the labels and taints this agent was given; what others set
  // (a cordon, labels added by an admin) is kept. The worker runs what is bound here as soon
  // as the binding shows in the agent's watch, and reports a pod's end as soon as it comes;
  // telemetry is sampled every second.
  HttpApi api(*ep, /*kept=*/true);
  agent::WorkerOptions wo;
  wo.node = id.name;
  wo.root = o.work_dir.empty() ? ".tessera/agent-" + id.name : o.work_dir;
  {
    std::error_code ec;
    wo.launcher_access.tessera = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    wo.launcher_access.server = (ep->tls ? "https://" : "http://") + ep->host + ":" + ep->port;
    if (!ep->ca_file.empty()) {
      wo.launcher_access.ca_file = std::filesystem::absolute(ep->ca_file, ec).string();
    }
  }
  if (o.mps_control != "none") wo.mps_control = o.mps_control;
  wo.notice = [&out](const std::string& line) { out << line << std::endl; };
  if (o.share_isolation == "interposer") {
    wo.share_interposer = agent::ShareInterposerLibrary();
    if (wo.share_interposer.empty()) {
      out << "warning: libtessera-share.so is not beside the tessera executable: fractional "
             "GPU shares are not held to their memory"
          << std::endl;
    } else {
      out << "fractional GPU shares: held to their memory by " << wo.share_interposer << std::endl;
    }
  }
  const char* search = std::getenv("PATH");
  wo.container_runtime = agent::FindContainerRuntime(o.container_runtime, search ? search : "");
  if (wo.container_runtime.empty()) {
    out << "no container runtime (looked for " << agent::RuntimesLookedFor()
        << " on PATH): tasks with an image fail; name one with --container-runtime" << std::endl;
  } else {
    out << "container runtime: " << wo.container_runtime << std::endl;
    // The runtime gives containers GPUs by CDI name: make sure the names resolve.
    if (gpus->source == "nvml") {
      auto cdi = agent::EnsureCdiSpec(*gpus, "", search ? search : "");
      if (cdi.ok()) {
        out << *cdi << std::endl;
      } else {
        out << "warning: no CDI spec for the GPUs (" << cdi.status().message()
            << "): containers cannot be given GPUs" << std::endl;
      }
    }
  }
  wo.stop_grace_ms = int64_t{o.stop_grace_seconds} * 1000;
  if (o.task_uids != "none") {
    const size_t colon = o.task_uids.find(':');
    int64_t base = -1, count = -1;
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      size_t used = 0;
      base = std::stoll(o.task_uids.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument("base");
      count = std::stoll(o.task_uids.substr(colon + 1), &used);
      if (used != o.task_uids.size() - colon - 1) throw std::invalid_argument("count");
    } catch (const std::exception&) {
      base = -1;
    }
    if (base < 1 || count <= agent::kMpsTaskUids || base + count > 4294967294LL) {
      err << "error: --task-uids: \"" << o.task_uids
          << "\" is not BASE:COUNT with BASE at least 1 and COUNT over " << agent::kMpsTaskUids
          << " (or none)\n";
      return 2;
    }
    wo.task_uid_base = base;
    wo.task_uid_count = count;
    if (geteuid() == 0) {
      // Tasks reach their working directories under --work-dir as other users: every directory
      // above it must let them pass.
      namespace fs = std::filesystem;
      std::error_code ec;
      for (fs::path d = fs::absolute(wo.root, ec).parent_path(); !d.empty(); d = d.parent_path()) {
        const fs::file_status st = fs::status(d, ec);
        if (!ec && fs::exists(st) &&
            (st.permissions() & fs::perms::others_exec) == fs::perms::none) {
          err << "error: --work-dir " << wo.root << ": tasks run as users of their own and cannot "
              << "pass through " << d.string() << " (no search permission for others); allow "
              << "it (chmod o+x " << d.string() << "), choose another --work-dir, or give "
              << "--task-uids none to run tasks as the agent's user\n";
          return 2;
        }
        if (d == d.parent_path()) break;
      }
      out << "tasks without securityContext.runAsUser run as a uid of their Job's own, " << base
          << " to " << base + count - 1 << std::endl;
    }
  }
  if (geteuid() != 0) {
    out << "warning: the agent is not root: its tasks run as its own user and can read what it "
           "can, its token included; run the agent as root (tasks then run as uids of their "
           "own) or as a user that holds nothing else"
        << std::endl;
  }
  if (!o.cgroup_root.empty()) {
    auto root = agent::FindCgroupRoot(o.cgroup_root);
    if (root.ok()) {
      wo.cgroup_root = *root;
      // Agents sharing a machine keep their groups apart: by node and work directory.
      std::error_code ec;
      const std::string where = std::filesystem::absolute(wo.root, ec).string();
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>()(where));
      wo.cgroup_agent = id.name + "-" + std::string(hash, 8);
      out << "pods run in cgroups under " << wo.cgroup_root << "/tessera/" << wo.cgroup_agent
          << ": stops and fences reach every process of a pod" << std::endl;
    } else {
      out << "warning: no cgroups for pods (" << root.status().message()
          << "): stops and fences reach a pod's processes through its monitor (a child "
             "subreaper) and process group; a process that leaves the pod's tree some other "
             "way (a daemon started through another service) can outlive a fence, so a pod "
             "may run twice after its node is fenced"
          << std::endl;
    }
  }
  if (o.fence_seconds <= o.heartbeat_seconds) {
    err << "error: --fence-seconds (" << o.fence_seconds << ") must exceed --heartbeat-seconds ("
        << o.heartbeat_seconds << ")\n";
    return 2;
  }
  // Fencing (agent/fence.h): the keeper stops the pods when no heartbeat was accepted for the
  // fence period, whatever becomes of this process; this loop does the same itself so that it
  // takes those stops for what they are. The node tells the server when its pods are surely
  // stopped: fence period + stop grace + the keeper's and this loop's check intervals.
  const std::string state_dir = wo.root + "/run";
  const int64_t fence_ms = int64_t{o.fence_seconds} * 1000;
  agent::KeeperProcess keeper("/proc/self/exe", state_dir, fence_ms, wo.stop_grace_ms);
  if (Status s = keeper.Ensure(); !s.ok()) {
    err << "error: " << s.message() << "\n";
    return 1;
  }
  setup.node["status"]["fenceSeconds"] = o.fence_seconds + o.stop_grace_seconds + 2;
  int64_t renewed = agent::ReadLease(state_dir);  // a predecessor's, for what it adopted
  agent::Worker worker(api, *gpus, wo);
  // Commands run in this node's pods (tessera exec), on threads of their own.
  agent::ExecOptions exec_options;
  exec_options.node = id.name;
  agent::ExecAgent exec(std::make_shared<HttpApi>(*ep), worker.exec_targets(), exec_options);
  exec.Start();
  bool registered = false;
  const std::string path = "/apis/tessera.io/v1/nodes/" + id.name;
  int64_t next_beat = 0;
  agent::HealthOptions health_options;
  health_options.quiet_ms = int64_t{o.health_quiet_seconds} * 1000;
  if (!o.ignored_xids.empty()) {
    health_options.ignored_xids.clear();
    std::stringstream list(o.ignored_xids);
    for (std::string x; std::getline(list, x, ',');) {
      uint64_t xid = 0;
      auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), xid);
      if (ec != std::errc() || end != x.data() + x.size()) {
        err << "error: --ignore-xids: \"" << x << "\" is not an XID number\n";
        return 2;
      }
      health_options.ignored_xids.insert(xid);
    }
  }
  agent::HealthTracker health(health_options);
  std::map<uint32_t, uint64_t> xid_counts;  // since the agent started
  json& status = setup.node["status"];
  int64_t event_seq = 0;
  // What wakes the loop besides its deadlines: a change in what is bound here, a pod's end
  // (Runner::ExitFds) and a stop.
  agent::Waker waker;
  agent::BindingWatch bindings(std::make_shared<HttpApi>(*ep), [&waker] { waker.Notify(); });
  worker.FollowBindings([&bindings] { return bindings.Items(); });
  bindings.Start();
  int64_t next_sample = 0;
  agent::UsageMeter meter;  // CPU and memory of the node and its pods, for kubectl top
  json status_written;      // the Node's status as last written
  int64_t node_written_at = 0;
  for (bool first = true;; first = false) {
    if (!first) {
      int64_t until = std::min(next_sample, next_beat);
      if (const int64_t kill_at = worker.runner().NextDeadline(); kill_at >= 0) {
        until = std::min(until, kill_at);
      }
      std::vector<int> fds = worker.runner().ExitFds();
      fds.push_back(stop_fd);
      waker.Wait(static_cast<int>(std::clamp<int64_t>(until - NowMs(), 0, 1000)), fds);
    }
    if (agent::Readable(stop_fd)) break;
    if (renewed >= 0 && agent::BootMs() - renewed > fence_ms && !worker.fenced()) {
      out << "fenced: no heartbeat accepted for " << o.fence_seconds
          << " s; stopping this node's pods" << std::endl;
      worker.Fence(NowMs());
    }
    if (registered) {
      if (Status s = worker.Tick(NowMs()); !s.ok()) err << "warning: " << s.message() << "\n";
    }
    if (NowMs() < next_sample && NowMs() < next_beat) continue;
    next_sample = NowMs() + 1000;
    // Telemetry and health, every second; a health change is written at once.
    std::vector<agent::GpuSample> samples;
    std::vector<std::pair<uint32_t, uint64_t>> xids;
    if (setup.nvml) {
      if (auto s = setup.nvml->Sample(); s.ok()) samples = std::move(s).value();
      for (const agent::Nvml::Xid& x : setup.nvml->PollXids(0)) xids.emplace_back(x.gpu, x.xid);
    } else {
      for (const agent::GpuInfo& g : gpus->gpus) {
        agent::GpuSample s;
        s.index = g.index;
        s.memory_free_mib = g.memory_mib;
        samples.push_back(s);
      }
    }
    for (const auto& [gpu, xid] : xids) ++xid_counts[gpu];
    status["telemetry"] = TelemetryJson(samples, worker.runner());
    for (json& t : status["telemetry"]) t["xidCount"] = xid_counts[t.value("index", 0u)];
    for (const agent::HealthChange& c : health.Observe(NowMs(), samples, xids)) {
      for (json& g : status["gpus"]) {
        if (g.value("index", -1) == static_cast<int>(c.gpu))
          g["health"] = c.healthy ? "Healthy" : "Unhealthy";
      }
      const std::string message = "GPU " + std::to_string(c.gpu) + " is " +
                                  (c.healthy ? "healthy again: " : "unhealthy: ") + c.reason;
      out << message << std::endl;
      const json e = api::EventObject(
          "tessera-system",
          id.name + "." + std::to_string(NowMs()) + "-" + std::to_string(++event_seq),
          c.healthy ? "Normal" : "Warning", c.healthy ? "GpuRecovered" : "GpuUnhealthy", message,
          server::FormatTime(NowMs()), "Node", id.name);
      (void)Request(*ep, "POST", "/apis/tessera.io/v1/apply", e.dump(), "application/json");
      next_beat = 0;  // tell the scheduler now
    }
    if (NowMs() < next_beat) continue;
    next_beat = NowMs() + int64_t{o.heartbeat_seconds} * 1000;
    if (Status s = keeper.Ensure(); !s.ok()) err << "warning: " << s.message() << "\n";
    const int64_t sent = agent::BootMs();  // the server stamps the beat no earlier than this
    // A beat renews the node's Lease; the Node is written only at registration, when its
    // status changed (health, telemetry) and at least once a minute, so that beats neither
    // rewrite the Node nor wake the scheduling loop.
    const bool write_node = !registered || agent::StatusMoved(status_written, status) ||
                            NowMs() - node_written_at >= kNodeRefreshMs;
    Result<Response> got = write_node ? Request(*ep, "GET", path) : RenewLease(*ep, id.name);
    Result<Response> r = got;
    if (!write_node) {
      // r is the renewal's answer.
    } else if (got.ok() && got->status == 404) {
      json beat = node;
      beat["status"] = status;
      beat["status"]["heartbeat"] = server::FormatTime(NowMs());
      r = Request(*ep, "POST", "/apis/tessera.io/v1/nodes", beat.dump(), "application/json");
    } else if (got.ok() && got->status == 200) {
      json current = json::parse(got->body, nullptr, false);
      if (!current.is_object()) current = node;
      if (!registered) {
        // Registered before: the agent updates the labels it reports (what it discovered of
        // the GPUs); the node's other labels and its taints are the admin's now, as a
        // kubelet's --node-labels and --register-with-taints count at registration only.
        for (const auto& [k, v] : node["metadata"]["labels"].items()) {
          if (api::AgentReportedNodeLabel(k)) {
            current["metadata"]["labels"][k] = v;
          } else if (current["metadata"]["labels"].value(k, json()) != v) {
            err << "warning: --labels " << k << "=" << v.get<std::string>() << ": node " << id.name
                << " is registered; its labels are the admin's (kubectl label node)\n";
          }
        }
        const json& taints = api::Member(api::Member(current, "spec"), "taints");
        if (node["spec"].value("taints", json::array()) !=
            (taints.is_array() ? taints : json::array())) {
          err << "warning: --taints: node " << id.name
              << " is registered; its taints are the admin's (kubectl taint node)\n";
        }
      }
      current["status"] = status;
      current["status"]["heartbeat"] = server::FormatTime(NowMs());
      r = Request(*ep, "PUT", path, current.dump(), "application/json");
    }
    if (!r.ok()) {
      err << "warning: " << r.status().message() << "\n";
    } else if (r->status != 200 && r->status != 201) {
      err << "error: the server refused the node" << (write_node ? "" : "'s lease") << ": "
          << r->body << "\n";
      // A refusal that retrying cannot change (bad token, invalid node) ends the agent.
      if (r->status >= 400 && r->status < 500 && r->status != 409 && r->status != 429) return 1;
    } else {
      if (write_node) {
        status_written = status;
        node_written_at = NowMs();
      }
      if (Status s = agent::WriteLease(state_dir, sent); !s.ok()) {
        err << "warning: " << s.message() << "\n";
      } else {
        renewed = sent;
        if (worker.fenced()) {
          worker.Unfence();
          out << "heartbeat accepted again: fence lifted" << std::endl;
        }
      }
      if (!registered) {
        registered = true;
        out << "registered with " << ep->host << ":" << ep->port << std::endl;
      }
      ReportUsage(*ep, id.name, worker, &meter, err);
    }
  }
  out << "stopped" << std::endl;
  return 0;
}

}  // namespace tessera::cli
