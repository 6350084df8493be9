#include "agent/node_agent.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "agent/bindings.h"
#include "agent/cdi.h"
#include "agent/cgroups.h"
#include "agent/checkup.h"
#include "agent/container_runtime.h"
#include "agent/exec.h"
#include "agent/fence.h"
#include "agent/gpu_reset.h"
#include "agent/health.h"
#include "agent/mps.h"
#include "agent/telemetry.h"
#include "agent/usage.h"
#include "agent/waker.h"
#include "agent/worker.h"
#include "api/gpu_quarantine.h"
#include "api/json_read.h"
#include "api/kinds.h"
#include "api/object.h"
#include "api/time.h"

namespace tessera::agent {

using nlohmann::json;

json SampleJson(const std::vector<GpuSample>& samples) {
  json out = json::array();
  for (const GpuSample& s : samples) {
    json procs = json::array();
    for (const ProcessUse& p : s.processes) {
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
    if (s.nvlink_kib_per_s) out.back()["nvlinkKiBps"] = *s.nvlink_kib_per_s;
    if (s.pcie_tx_kib_per_s) out.back()["pcieTxKiBps"] = *s.pcie_tx_kib_per_s;
    if (s.pcie_rx_kib_per_s) out.back()["pcieRxKiBps"] = *s.pcie_rx_kib_per_s;
  }
  return out;
}

// Samples as the Node's status.telemetry, each process named by the pod it belongs to when it
// is one this agent runs.
int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

json TelemetryJson(const std::vector<GpuSample>& samples, const Runner& runner) {
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

// Measures the node and its pods (agent/usage.h) and reports the usage over the window since
// the last beat, for metrics.k8s.io. A pod in a container is not measured: its processes are
// the runtime's, outside the pod's process tree and group.
void ReportUsage(const Endpoint& ep, const std::string& node, const Worker& worker,
                 UsageMeter* meter, std::ostream& err) {
  const int64_t at = NowMs();
  const auto node_usage = meter->Observe("", at, ReadNodeUsage());
  std::vector<PodProcesses> pods;
  std::vector<std::string> live = {""};
  for (const std::string& key : worker.runner().Keys()) {
    auto spec = worker.exec_targets().Get(key);
    if (spec && !spec->container.empty()) continue;
    pods.push_back({key, worker.runner().Pid(key), worker.runner().Cgroup(key)});
    live.push_back(key);
  }
  std::map<std::string, UsageMeter::Usage> pod_usage;
  for (const auto& [key, c] : ReadPodUsage(pods)) {
    if (auto u = meter->Observe(key, at, c)) pod_usage[key] = *u;
  }
  meter->Keep(live);
  if (!node_usage) return;
  auto r = Request(ep, "PUT", "/apis/tessera.io/v1/nodes/" + node + "/usage",
                   UsageReport(*node_usage, pod_usage).dump(), "application/json");
  if (!r.ok()) {
    err << "warning: usage report: " << r.status().message() << "\n";
  } else if (r->status != 200) {
    err << "warning: usage report refused: " << r->body << "\n";
  }
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

// The worker's options from the agent's flags, with what they mean on this node said on `out`;
// an exit code (2: a bad flag) after saying why on `err`, 0 when usable.
int WorkerOptionsFor(const AgentOptions& o, const Endpoint& ep, const NodeGpus& gpus,
                     const std::string& node, WorkerOptions* wo, std::ostream& out,
                     std::ostream& err) {
  wo->node = node;
  wo->root = o.work_dir.empty() ? ".tessera/agent-" + node : o.work_dir;
  {
    std::error_code ec;
    wo->launcher_access.tessera = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    wo->launcher_access.server = (ep.tls ? "https://" : "http://") + ep.host + ":" + ep.port;
    if (!ep.ca_file.empty()) {
      wo->launcher_access.ca_file = std::filesystem::absolute(ep.ca_file, ec).string();
    }
  }
  if (o.mps_control != "none") wo->mps_control = o.mps_control;
  wo->notice = [&out](const std::string& line) { out << line << std::endl; };
  if (o.share_isolation == "interposer") {
    wo->share_interposer = ShareInterposerLibrary();
    if (wo->share_interposer.empty()) {
      out << "warning: libtessera-share.so is not beside the tessera executable: fractional "
             "GPU shares are not held to their memory"
          << std::endl;
    } else {
      out << "fractional GPU shares: held to their memory by " << wo->share_interposer << std::endl;
    }
  }
  const char* search = std::getenv("PATH");
  wo->container_runtime = FindContainerRuntime(o.container_runtime, search ? search : "");
  if (wo->container_runtime.empty()) {
    out << "no container runtime (looked for " << RuntimesLookedFor()
        << " on PATH): tasks with an image fail; name one with --container-runtime" << std::endl;
  } else {
    out << "container runtime: " << wo->container_runtime << std::endl;
    // The runtime gives containers GPUs by CDI name: make sure the names resolve.
    if (gpus.source == "nvml") {
      auto cdi = EnsureCdiSpec(gpus, "", search ? search : "");
      if (cdi.ok()) {
        out << *cdi << std::endl;
      } else {
        out << "warning: no CDI spec for the GPUs (" << cdi.status().message()
            << "): containers cannot be given GPUs" << std::endl;
      }
    }
  }
  wo->stop_grace_ms = int64_t{o.stop_grace_seconds} * 1000;
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
    if (base < 1 || count <= kMpsTaskUids || base + count > 4294967294LL) {
      err << "error: --task-uids: \"" << o.task_uids
          << "\" is not BASE:COUNT with BASE at least 1 and COUNT over " << kMpsTaskUids
          << " (or none)\n";
      return 2;
    }
    wo->task_uid_base = base;
    wo->task_uid_count = count;
    if (geteuid() == 0) {
      // Tasks reach their working directories under --work-dir as other users: every directory
      // above it must let them pass.
      namespace fs = std::filesystem;
      std::error_code ec;
      for (fs::path d = fs::absolute(wo->root, ec).parent_path(); !d.empty(); d = d.parent_path()) {
        const fs::file_status st = fs::status(d, ec);
        if (!ec && fs::exists(st) &&
            (st.permissions() & fs::perms::others_exec) == fs::perms::none) {
          err << "error: --work-dir " << wo->root << ": tasks run as users of their own and cannot "
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
    auto root = FindCgroupRoot(o.cgroup_root);
    if (root.ok()) {
      wo->cgroup_root = *root;
      // Agents sharing a machine keep their groups apart: by node and work directory.
      std::error_code ec;
      const std::string where = std::filesystem::absolute(wo->root, ec).string();
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>()(where));
      wo->cgroup_agent = node + "-" + std::string(hash, 8);
      out << "pods run in cgroups under " << wo->cgroup_root << "/tessera/" << wo->cgroup_agent
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
  return 0;
}

// The GPU health tracker's options from the agent's flags (2: a bad --ignore-xids).
int HealthOptionsFor(const AgentOptions& o, HealthOptions* h, std::ostream& err) {
  h->quiet_ms = int64_t{o.health_quiet_seconds} * 1000;
  if (!o.ignored_xids.empty()) {
    h->ignored_xids.emplace();
    std::stringstream list(o.ignored_xids);
    for (std::string x; std::getline(list, x, ',');) {
      uint64_t xid = 0;
      auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), xid);
      if (ec != std::errc() || end != x.data() + x.size()) {
        err << "error: --ignore-xids: \"" << x << "\" is not an XID number\n";
        return 2;
      }
      h->ignored_xids->insert(xid);
    }
  }
  return 0;
}

// A GPU's change told: a line on `out` and an Event about the node (Normal when `good`).
void TellGpu(const AgentSetup& setup, const Endpoint& ep, bool good, const char* reason,
             const std::string& message, int64_t* event_seq, std::ostream& out) {
  out << message << std::endl;
  const json e = api::EventObject(
      "tessera-system",
      setup.id.name + "." + std::to_string(NowMs()) + "-" + std::to_string(++*event_seq),
      good ? "Normal" : "Warning", reason, message, api::FormatTime(NowMs()), "Node",
      setup.id.name);
  (void)Request(ep, "POST", "/apis/tessera.io/v1/apply", e.dump(), "application/json");
}

// Samples the GPUs' telemetry and health into the Node's status (setup.node), telling each
// health change (an Event, a line on `out`). True when the health changed.
bool Observe(AgentSetup& setup, const Runner& runner, const Endpoint& ep, HealthTracker& health,
             std::map<uint32_t, uint64_t>* xid_counts, XidLog* xid_log, int64_t* event_seq,
             std::vector<GpuSample>* seen, std::ostream& out) {
  json& status = setup.node["status"];
  bool changed = false;
  std::vector<GpuSample> samples;
  std::vector<std::pair<uint32_t, uint64_t>> xids;
  if (setup.nvml) {
    if (auto s = setup.nvml->Sample(); s.ok()) samples = std::move(s).value();
    for (const Nvml::Xid& x : setup.nvml->PollXids(0)) xids.emplace_back(x.gpu, x.xid);
  } else {
    for (const GpuInfo& g : setup.gpus.gpus) {
      GpuSample s;
      s.index = g.index;
      s.memory_free_mib = g.memory_mib;
      samples.push_back(s);
    }
  }
  for (const auto& [gpu, xid] : xids) {
    ++(*xid_counts)[gpu];
    xid_log->Add(gpu, xid, api::FormatTime(NowMs()));
  }
  if (!xids.empty()) status["xids"] = xid_log->Json();
  if (setup.nvml) {
    if (auto c = setup.nvml->Checkup(); c.ok()) status["checkups"] = CheckupJson(*c);
  }
  status["telemetry"] = TelemetryJson(samples, runner);
  *seen = samples;
  for (json& t : status["telemetry"]) t["xidCount"] = (*xid_counts)[t.value("index", 0u)];
  for (const HealthChange& c : health.Observe(NowMs(), samples, xids)) {
    for (json& g : status["gpus"]) {
      if (g.value("index", -1) == static_cast<int>(c.gpu))
        g["health"] = c.healthy ? "Healthy" : "Unhealthy";
    }
    TellGpu(setup, ep, c.healthy, c.healthy ? "GpuRecovered" : "GpuUnhealthy",
            "GPU " + std::to_string(c.gpu) + " is " +
                (c.healthy ? "healthy again: " : "unhealthy: ") + c.reason,
            event_seq, out);
    changed = true;
  }
  return changed;
}

// How often an agent allowed to reset GPUs reads its Node for the resets the loop requests.
constexpr int64_t kResetCheckMs = 2000;

// Resets the GPUs the scheduling loop quarantined for a reset (agent/gpu_reset.h), read from the
// Node's annotation; a GPU reset successfully is healthy again. True when something was tried
// (status.resets changed: worth writing at once).
bool ResetRequested(AgentSetup& setup, const Endpoint& ep, GpuResetter& resetter,
                    HealthTracker& health, const std::vector<GpuSample>& samples,
                    int64_t* event_seq, std::ostream& out) {
  auto got = Request(ep, "GET", "/apis/tessera.io/v1/nodes/" + setup.id.name);
  if (!got.ok() || got->status != 200) return false;
  const json node = json::parse(got->body, nullptr, false);
  auto q = api::QuarantineOf(node);
  if (!q.ok() || q->gpus.empty()) return false;
  const std::vector<ResetOutcome> done = resetter.Step(*q, samples, NowMs());
  if (done.empty()) return false;
  json& status = setup.node["status"];
  status["resets"] = resetter.Json();
  for (const ResetOutcome& r : done) {
    if (r.ok) {
      (void)health.Reset(static_cast<uint32_t>(r.gpu));
      for (json& g : status["gpus"]) {
        if (g.value("index", int64_t{-1}) == r.gpu) g["health"] = "Healthy";
      }
    }
    TellGpu(setup, ep, r.ok, r.ok ? "GpuReset" : "GpuResetFailed",
            "GPU " + std::to_string(r.gpu) + (r.ok ? " reset: " : " reset failed: ") + r.message,
            event_seq, out);
  }
  return true;
}

// Writes the Node: created with `status` when the server has none, else read and written back
// with it, based on the version read. Before this agent `registered`, labels and taints the
// admin changed are kept (and the difference told on `err`).
Result<Response> WriteNode(const Endpoint& ep, const std::string& node_name, const json& node,
                           const json& status, bool registered, std::ostream& err) {
  const std::string path = "/apis/tessera.io/v1/nodes/" + node_name;
  Result<Response> got = Request(ep, "GET", path);
  Result<Response> r = got;
  if (got.ok() && got->status == 404) {
    json beat = node;
    beat["status"] = status;
    beat["status"]["heartbeat"] = api::FormatTime(NowMs());
    r = Request(ep, "POST", "/apis/tessera.io/v1/nodes", beat.dump(), "application/json");
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
          err << "warning: --labels " << k << "=" << v.get<std::string>() << ": node " << node_name
              << " is registered; its labels are the admin's (kubectl label node)\n";
        }
      }
      const json& taints = api::Member(api::Member(current, "spec"), "taints");
      if (node["spec"].value("taints", json::array()) !=
          (taints.is_array() ? taints : json::array())) {
        err << "warning: --taints: node " << node_name
            << " is registered; its taints are the admin's (kubectl taint node)\n";
      }
    }
    current["status"] = status;
    current["status"]["heartbeat"] = api::FormatTime(NowMs());
    r = Request(ep, "PUT", path, current.dump(), "application/json");
  }
  return r;
}

// What the heartbeat keeps from one beat to the next.
struct BeatState {
  bool registered = false;
  int64_t renewed = -1;  // boot time of the last beat the server accepted, -1: none
  json status_written;   // the Node's status as last written
  int64_t node_written_at = 0;
  UsageMeter meter;  // CPU and memory of the node and its pods, for kubectl top
};

// One heartbeat. It renews the node's Lease; the Node is written only at registration, when its
// status changed (health, telemetry) and at least once a minute, so that beats neither rewrite
// the Node nor wake the scheduling loop. An accepted beat is recorded for the keeper and lifts
// a fence. Returns the agent's exit code when a refusal that retrying cannot change (bad token,
// invalid node) ends it, else -1.
int Beat(const Endpoint& ep, const std::string& node_name, AgentSetup& setup,
         const std::string& state_dir, Worker& worker, BeatState& b, std::ostream& out,
         std::ostream& err) {
  const json& status = setup.node["status"];
  const int64_t sent = BootMs();  // the server stamps the beat no earlier than this
  const bool write_node = !b.registered || StatusMoved(b.status_written, status) ||
                          NowMs() - b.node_written_at >= kNodeRefreshMs;
  Result<Response> r = write_node ? WriteNode(ep, node_name, setup.node, status, b.registered, err)
                                  : RenewLease(ep, node_name);
  // The scheduling loop wrote the Node between this agent's read and write (its quarantine
  // annotation, say): read it again and write on top, once.
  if (write_node && r.ok() && r->status == 409) {
    r = WriteNode(ep, node_name, setup.node, status, b.registered, err);
  }
  if (!r.ok()) {
    err << "warning: " << r.status().message() << "\n";
    return -1;
  }
  if (r->status == 409 && write_node) {
    err << "warning: the node kept changing; it is written again at the next beat\n";
    return -1;
  }
  if (r->status != 200 && r->status != 201) {
    err << "error: the server refused the node" << (write_node ? "" : "'s lease") << ": " << r->body
        << "\n";
    return r->status >= 400 && r->status < 500 && r->status != 409 && r->status != 429 ? 1 : -1;
  }
  if (write_node) {
    b.status_written = status;
    b.node_written_at = NowMs();
  }
  if (Status s = WriteLease(state_dir, sent); !s.ok()) {
    err << "warning: " << s.message() << "\n";
  } else {
    b.renewed = sent;
    if (worker.fenced()) {
      worker.Unfence();
      out << "heartbeat accepted again: fence lifted" << std::endl;
    }
  }
  if (!b.registered) {
    b.registered = true;
    out << "registered with " << ep.host << ":" << ep.port << std::endl;
  }
  ReportUsage(ep, node_name, worker, &b.meter, err);
  return -1;
}

}  // namespace

int AgentLoop(const AgentOptions& o, const Endpoint& endpoint, AgentSetup& setup, int stop_fd,
              std::ostream& out, std::ostream& err) {
  const Endpoint* ep = &endpoint;
  const NodeIdentity& id = setup.id;
  const NodeGpus* gpus = &setup.gpus;
  out << "node " << id.name << ": " << gpus->gpus.size() << " GPUs (" << gpus->source << ")"
      << std::endl;
  // Each beat reads the node and writes it back with a fresh status, based on the version read:
  // the first beat also sets the labels and taints this agent was given; what others set
  // (a cordon, labels added by an admin) is kept. The worker runs what is bound here as soon
  // as the binding shows in the agent's watch, and reports a pod's end as soon as it comes;
  // telemetry is sampled every second.
  HttpApi api(*ep, /*kept=*/true);
  WorkerOptions wo;
  if (int code = WorkerOptionsFor(o, *ep, *gpus, id.name, &wo, out, err); code != 0) return code;
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
  KeeperProcess keeper("/proc/self/exe", state_dir, fence_ms, wo.stop_grace_ms);
  if (Status s = keeper.Ensure(); !s.ok()) {
    err << "error: " << s.message() << "\n";
    return 1;
  }
  setup.node["status"]["fenceSeconds"] = o.fence_seconds + o.stop_grace_seconds + 2;
  Worker worker(api, *gpus, wo);
  // Commands run in this node's pods (tessera exec), on threads of their own.
  ExecOptions exec_options;
  exec_options.node = id.name;
  ExecAgent exec(std::make_shared<HttpApi>(*ep), worker.exec_targets(), exec_options);
  exec.Start();
  BeatState beat;
  beat.renewed = ReadLease(state_dir);  // a predecessor's, for what it adopted
  int64_t next_beat = 0;
  HealthOptions health_options;
  if (int code = HealthOptionsFor(o, &health_options, err); code != 0) return code;
  HealthTracker health(health_options);
  std::map<uint32_t, uint64_t> xid_counts;  // since the agent started
  XidLog xid_log;
  int64_t event_seq = 0;
  std::vector<GpuSample> samples;  // the last second's
  std::optional<GpuResetter> resetter;
  if (o.allow_gpu_reset) {
    auto command = ParseResetCommand(o.gpu_reset_command);
    if (!command.ok()) {
      err << "error: " << command.status().message() << "\n";
      return 2;
    }
    resetter.emplace(GpuResetOptions{.command = *command});
  }
  int64_t next_reset_check = 0;
  // What wakes the loop besides its deadlines: a change in what is bound here, a pod's end
  // (Runner::ExitFds) and a stop.
  Waker waker;
  BindingWatch bindings(std::make_shared<HttpApi>(*ep), [&waker] { waker.Notify(); });
  worker.FollowBindings([&bindings] { return bindings.Items(); });
  bindings.Start();
  int64_t next_sample = 0;
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
    if (Readable(stop_fd)) break;
    if (beat.renewed >= 0 && BootMs() - beat.renewed > fence_ms && !worker.fenced()) {
      out << "fenced: no heartbeat accepted for " << o.fence_seconds
          << " s; stopping this node's pods" << std::endl;
      worker.Fence(NowMs());
    }
    if (beat.registered) {
      if (Status s = worker.Tick(NowMs()); !s.ok()) err << "warning: " << s.message() << "\n";
    }
    if (NowMs() < next_sample && NowMs() < next_beat) continue;
    next_sample = NowMs() + 1000;
    // Telemetry and health, every second; a health change is written at once.
    if (Observe(setup, worker.runner(), *ep, health, &xid_counts, &xid_log, &event_seq, &samples,
                out)) {
      next_beat = 0;  // tell the scheduler now
    }
    if (resetter && NowMs() >= next_reset_check) {
      next_reset_check = NowMs() + kResetCheckMs;
      if (ResetRequested(setup, *ep, *resetter, health, samples, &event_seq, out)) next_beat = 0;
    }
    if (NowMs() < next_beat) continue;
    next_beat = NowMs() + int64_t{o.heartbeat_seconds} * 1000;
    if (Status s = keeper.Ensure(); !s.ok()) err << "warning: " << s.message() << "\n";
    if (const int code = Beat(*ep, id.name, setup, state_dir, worker, beat, out, err); code >= 0) {
      return code;
    }
  }
  out << "stopped" << std::endl;
  return 0;
}

}  // namespace tessera::agent
