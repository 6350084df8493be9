#include "server/metrics.h"

#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include <charconv>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/json_read.h"
#include "api/kinds.h"
#include "server/json_names.h"

namespace tessera::server {

SchedulerMetrics::SchedulerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  cycle_seconds_ = &prometheus::BuildHistogram()
                        .Name("tessera_scheduling_cycle_duration_seconds")
                        .Help("Duration of one scheduling cycle (read, admit, write back)")
                        .Register(*registry_)
                        .Add({}, prometheus::Histogram::BucketBoundaries{
                                     0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5});
  cycles_ = &prometheus::BuildCounter()
                 .Name("tessera_scheduling_cycles_total")
                 .Help("Scheduling cycles run")
                 .Register(*registry_)
                 .Add({});
  admissions_ = &prometheus::BuildCounter()
                     .Name("tessera_admissions_total")
                     .Help("Workloads admitted (bound to devices)")
                     .Register(*registry_)
                     .Add({});
  preemptions_ = &prometheus::BuildCounter()
                      .Name("tessera_preemptions_total")
                      .Help("Workloads preempted")
                      .Register(*registry_)
                      .Add({});
  latency_ = &prometheus::BuildHistogram()
                  .Name("tessera_scheduling_latency_seconds")
                  .Help("Seconds from a workload's creation to its admission, per queue")
                  .Register(*registry_);
  pending_ = &prometheus::BuildGauge()
                  .Name("tessera_pending_workloads_last_cycle")
                  .Help("Workloads the last cycle looked at and left pending or admitted")
                  .Register(*registry_)
                  .Add({});
  leader_ = &prometheus::BuildGauge()
                 .Name("tessera_leader")
                 .Help("1 while this replica runs the scheduling loop (elected on etcd), else 0")
                 .Register(*registry_)
                 .Add({});
  leader_->Set(1);
  transitions_ = &prometheus::BuildGauge()
                      .Name("tessera_leader_transitions")
                      .Help("Times this replica became the scheduler's leader or stopped being it")
                      .Register(*registry_)
                      .Add({});
  commit_seconds_ =
      &prometheus::BuildHistogram()
           .Name("tessera_store_commit_duration_seconds")
           .Help(
               "Seconds one commit to the store took: SQLite's write, or etcd's transaction "
               "(with the read before it when one was needed)")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                            0.025, 0.05, 0.1, 0.25, 1, 5});
  commit_failures_ = &prometheus::BuildCounter()
                          .Name("tessera_store_commit_failures_total")
                          .Help(
                              "Commits the store refused or could not make (a conflict, "
                              "etcd without a quorum, a deposed leader's write)")
                          .Register(*registry_)
                          .Add({});
  watch_lag_ = &prometheus::BuildGauge()
                    .Name("tessera_store_watch_lag_revisions")
                    .Help(
                        "Revisions the store holds that this replica's change feed (its watch, "
                        "on etcd) has not delivered yet, at the scrape")
                    .Register(*registry_)
                    .Add({});
}

void SchedulerMetrics::ObserveCommit(double seconds, bool failed) {
  commit_seconds_->Observe(seconds);
  if (failed) commit_failures_->Increment();
}

void SchedulerMetrics::SetWatchLag(int64_t revisions) {
  watch_lag_->Set(static_cast<double>(revisions));
}

void SchedulerMetrics::SetLeader(bool leading, int64_t transitions) {
  leader_->Set(leading ? 1 : 0);
  transitions_->Set(static_cast<double>(transitions));
}

void SchedulerMetrics::ObserveAdmission(const std::string& queue, double seconds_waited) {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 86400};
  latency_->Add({{"queue", queue}}, kBuckets).Observe(seconds_waited);
}

void SchedulerMetrics::SetCycleGauges(CycleGauges g) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_ = std::move(g);
}

CycleGauges SchedulerMetrics::cycle_gauges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gauges_;
}

void SchedulerMetrics::ObserveCycle(double seconds, int admitted, int preempted, int pending) {
  cycle_seconds_->Observe(seconds);
  cycles_->Increment();
  admissions_->Increment(admitted);
  preemptions_->Increment(preempted);
  pending_->Set(pending);
}

namespace {

// The objects of `kind`, parsed; none when the store cannot list them.
std::vector<StoredJson> Items(ObjectCache& objects, const char* kind) {
  auto list = objects.List(kind);
  return list.ok() ? std::move(list).value() : std::vector<StoredJson>{};
}

struct Holder {
  std::string ns, job, task;
};

// A label value in the text format: backslash, double quote and newline escaped.
void AppendEscaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
}

// "# HELP name help\n# TYPE name type\n".
std::string FamilyHeader(const char* name, const char* help, const char* type) {
  return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// Prometheus's text rendering of a sample value: integers as such, others shortest round-trip.
void AppendValue(std::string& out, double v) {
  char buf[32];
  std::to_chars_result r;
  if (v == static_cast<double>(static_cast<int64_t>(v))) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v);
  }
  out.append(buf, r.ptr);
}

// Who holds each GPU (by UUID), and the GPU equivalents held in all, from the Jobs' bindings.
struct Allocation {
  std::map<std::string, std::vector<Holder>> holders;
  double milli = 0;
};

prometheus::Family<prometheus::Gauge>& Gauge(prometheus::Registry& r, const char* name,
                                             const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

// Work and allocation: jobs per queue and phase, GPUs held per queue and namespace.
Allocation AddJobFamilies(ObjectCache& store, prometheus::Registry& r) {
  auto& workloads = Gauge(r, "tessera_workloads", "Jobs per queue and phase");
  auto& queue_gpus =
      Gauge(r, "tessera_queue_gpus_allocated", "GPU equivalents held by admitted jobs, per queue");
  auto& ns_gpus = Gauge(r, "tessera_namespace_gpus_allocated",
                        "GPU equivalents held by admitted jobs, per namespace");
  Allocation a;
  std::map<std::pair<std::string, std::string>, double> by_queue_phase;
  std::map<std::string, double> queue_milli, ns_milli;
  for (const StoredJson& stored : Items(store, "Job")) {
    const json& job = stored.obj();
    const json& status = Member(job, "status");
    const json& meta = Member(job, "metadata");
    std::string phase = Str(status, "phase");
    if (phase.empty()) phase = "New";
    std::string queue = Str(status, "queue");
    if (queue.empty()) queue = Str(Member(job, "spec"), "queue");
    by_queue_phase[{queue, phase}] += 1;
    if (phase != "Admitted") continue;
    const std::string ns = Str(meta, "namespace"), name = Str(meta, "name");
    for (const json& pod : ListOf(Member(status, "pods"))) {
      if (!pod.is_object()) continue;
      const std::string pod_name = Str(pod, "name");
      const std::string task = pod_name.substr(0, pod_name.rfind('-'));
      for (const json& d : ListOf(Member(pod, "devices"))) {
        const double milli = Num(d, "gpuMilli");
        queue_milli[queue] += milli;
        ns_milli[ns] += milli;
        a.milli += milli;
        a.holders[Str(d, "uuid")].push_back({ns, name, task});
      }
    }
  }
  for (const auto& [qp, n] : by_queue_phase) {
    workloads.Add({{"queue", qp.first}, {"phase", qp.second}}).Set(n);
  }
  for (const auto& [q, m] : queue_milli) queue_gpus.Add({{"queue", q}}).Set(m / 1000);
  for (const auto& [ns, m] : ns_milli) ns_gpus.Add({{"namespace", ns}}).Set(m / 1000);
  return a;
}

// From the last cycle: fragmentation, quotas and objects the scheduler could not read.
void AddCycleFamilies(const CycleGauges& cg, prometheus::Registry& r) {
  Gauge(r, "tessera_cluster_gpu_fragmentation_ratio",
        "Free GPU capacity on partly taken GPUs over all free GPU capacity (last cycle)")
      .Add({})
      .Set(cg.fragmentation.ratio());
  auto& free_gpus = Gauge(r, "tessera_cluster_gpus_free",
                          "Free GPU equivalents, and those on partly taken GPUs (last cycle)");
  free_gpus.Add({{"state", "free"}}).Set(cg.fragmentation.free_milli / 1000.0);
  free_gpus.Add({{"state", "fragmented"}}).Set(cg.fragmentation.fragmented_milli / 1000.0);
  auto& nominal = Gauge(r, "tessera_queue_nominal_quota",
                        "A queue's nominal quota per flavor: GPUs, CPU cores or memory bytes");
  for (const CycleGauges::Quota& q : cg.quotas) {
    nominal.Add({{"queue", q.queue}, {"flavor", q.flavor}, {"resource", q.resource}})
        .Set(q.nominal);
  }
  auto& undecodable = Gauge(r, "tessera_undecodable_objects",
                            "Stored objects the scheduler cannot read and skips (last cycle)");
  for (const CycleGauges::Undecodable& u : cg.undecodable) {
    undecodable.Add({{"kind", u.kind}, {"namespace", u.ns}, {"name", u.name}}).Set(1);
  }
  Gauge(r, "tessera_gpus_quarantined", "GPUs quarantined for an Xid (last cycle)")
      .Add({})
      .Set(static_cast<double>(cg.gpus_quarantined));
  Gauge(r, "tessera_nodes_reboot_required", "Nodes marked for reboot for an Xid (last cycle)")
      .Add({})
      .Set(static_cast<double>(cg.nodes_to_reboot));
  Gauge(r, "tessera_quarantine_circuit_breaker_open",
        "1 while the quarantine's circuit breaker stops automatic quarantine (last cycle)")
      .Add({})
      .Set(cg.quarantine_breaker_open ? 1 : 0);
}

// Pods holding GPUs idle for the idle window.
void AddIdleFamilies(std::span<const core::IdlePod> idle, int64_t now_ms, prometheus::Registry& r) {
  auto& idle_gpus = Gauge(r, "tessera_idle_gpus_allocated",
                          "GPU equivalents held by a pod whose GPUs stayed below the idle "
                          "threshold for the idle window");
  auto& idle_seconds = Gauge(r, "tessera_idle_seconds",
                             "Seconds since the pod's GPUs went below the idle threshold");
  for (const core::IdlePod& p : idle) {
    const prometheus::Labels labels = {
        {"namespace", p.ns}, {"job", p.job}, {"pod", p.pod}, {"queue", p.queue}};
    idle_gpus.Add(labels).Set(p.gpu_milli / 1000.0);
    idle_seconds.Add(labels).Set((now_ms - p.idle_since_ms) / 1000.0);
  }
}

// A DCGM field as the exporter names it, and where the agent's telemetry holds it.
struct Field {
  const char* name;
  const char* help;
  const char* key;
  double scale;
  const char* type = "gauge";
};
const Field kFields[] = {
    {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "utilizationPct", 1},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "memoryUtilizationPct", 1},
    {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "memoryUsedMiB", 1},
    {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "memoryFreeMiB", 1},
    {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "temperatureC", 1},
    {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "powerMw", 0.001},
    {"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "smClockMhz", 1},
    {"DCGM_FI_DEV_XID_ERRORS", "XID errors seen by the node agent.", "xidCount", 1},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
     "NVLink data sent and received over all links since the driver loaded (in KiB).",
     "nvlinkDataKiB", 1, "counter"},
};

// The per-node and per-GPU families. They are the bulk of a scrape (a series per GPU and holder
// per field), so they are written straight into the text format.
struct NodeText {
  std::vector<StoredJson> nodes;  // `series` points into these documents
  std::string heartbeats, unhealthy;
  struct Series {
    std::string labels;  // {...} rendered, sorted by name as Prometheus prints them
    const json* telemetry;
  };
  std::vector<Series> series;
  double gpus_total = 0;
};

constexpr char kHeartbeatAge[] = "tessera_node_heartbeat_age_seconds";
constexpr char kUnhealthy[] = "tessera_gpu_unhealthy";

// One DCGM label set per holder of the GPU (one with empty holder labels when nobody holds it).
void AddTelemetrySeries(const std::string& host, const json& status, const Allocation& alloc,
                        NodeText& t) {
  std::map<int, const json*> gpu_by_index;
  for (const json& g : ListOf(Member(status, "gpus"))) {
    gpu_by_index[static_cast<int>(Num(g, "index"))] = &g;
    ++t.gpus_total;
    t.unhealthy += kUnhealthy;
    t.unhealthy += "{Hostname=\"";
    AppendEscaped(t.unhealthy, host);
    t.unhealthy += "\",UUID=\"";
    AppendEscaped(t.unhealthy, Str(g, "uuid"));
    t.unhealthy += "\",gpu=\"" + std::to_string(static_cast<int>(Num(g, "index"))) + "\"} ";
    t.unhealthy += Str(g, "health") == "Unhealthy" ? "1\n" : "0\n";
  }
  for (const json& tel : ListOf(Member(status, "telemetry"))) {
    const int index = static_cast<int>(Num(tel, "index"));
    auto found = gpu_by_index.find(index);
    static const json kUnknown = json::object();
    const json& g = found == gpu_by_index.end() ? kUnknown : *found->second;
    const std::string uuid = Str(g, "uuid");
    auto held = alloc.holders.find(uuid);
    static const std::vector<Holder> kNobody = {Holder{}};
    const std::vector<Holder>& who = held == alloc.holders.end() ? kNobody : held->second;
    for (const Holder& h : who) {
      std::string l = "{Hostname=\"";
      AppendEscaped(l, host);
      l += "\",UUID=\"";
      AppendEscaped(l, uuid);
      l += "\",device=\"nvidia" + std::to_string(index) + "\",gpu=\"" + std::to_string(index) +
           "\",job=\"";
      AppendEscaped(l, h.job);
      l += "\",modelName=\"";
      AppendEscaped(l, Str(g, "model"));
      l += "\",namespace=\"";
      AppendEscaped(l, h.ns);
      l += "\",task=\"";
      AppendEscaped(l, h.task);
      l += "\"} ";
      t.series.push_back({std::move(l), &tel});
    }
  }
}

NodeText RenderNodes(ObjectCache& store, LeaseBook& leases, const Allocation& alloc,
                     int64_t now_ms) {
  NodeText t;
  t.heartbeats =
      FamilyHeader(kHeartbeatAge, "Seconds since the node's agent last reported", "gauge");
  t.unhealthy = FamilyHeader(kUnhealthy, "1 when the agent marked the GPU unhealthy", "gauge");
  t.nodes = Items(store, "Node");
  const std::vector<StoredJson> stored_leases = Items(store, "Lease");
  std::map<std::string, const json*> lease_of;  // node -> its Lease
  for (const StoredJson& l : stored_leases) {
    lease_of[Str(Member(l.obj(), "metadata"), "name")] = &l.obj();
  }
  for (const StoredJson& stored_node : t.nodes) {
    const json& node = stored_node.obj();
    const std::string host = Str(Member(node, "metadata"), "name");
    const auto lease = lease_of.find(host);
    const int64_t beat = leases.LastBeat(node, lease == lease_of.end() ? nullptr : lease->second);
    if (beat >= 0) {
      t.heartbeats += kHeartbeatAge;
      t.heartbeats += "{node=\"";
      AppendEscaped(t.heartbeats, host);
      t.heartbeats += "\"} ";
      AppendValue(t.heartbeats, (now_ms - beat) / 1000.0);
      t.heartbeats += '\n';
    }
    AddTelemetrySeries(host, Member(node, "status"), alloc, t);
  }
  return t;
}

// The DCGM families, one after the other; a GPU without a field (no NVLink, say) has no series.
void AppendDcgmFamilies(const NodeText& t, std::string& out) {
  out.reserve(out.size() + t.series.size() * std::size(kFields) * 160);
  for (const Field& f : kFields) {
    out += FamilyHeader(f.name, f.help, f.type);
    for (const NodeText::Series& s : t.series) {
      if (!s.telemetry->contains(f.key)) continue;
      out += f.name;
      out += s.labels;
      AppendValue(out, Num(*s.telemetry, f.key) * f.scale);
      out += '\n';
    }
  }
}

}  // namespace

std::string RenderMetrics(ObjectCache& store, LeaseBook& leases, SchedulerMetrics& scheduler,
                          std::span<const core::IdlePod> idle, int64_t now_ms) {
  prometheus::Registry state;
  const Allocation alloc = AddJobFamilies(store, state);
  AddCycleFamilies(scheduler.cycle_gauges(), state);
  AddIdleFamilies(idle, now_ms, state);
  const NodeText nodes = RenderNodes(store, leases, alloc, now_ms);
  auto& cluster =
      Gauge(state, "tessera_cluster_gpus", "GPUs in the cluster, and GPU equivalents allocated");
  cluster.Add({{"state", "total"}}).Set(nodes.gpus_total);
  cluster.Add({{"state", "allocated"}}).Set(alloc.milli / 1000);
  Gauge(state, "tessera_cluster_gpu_allocation_ratio",
        "Allocated GPU equivalents over the cluster's GPUs")
      .Add({})
      .Set(nodes.gpus_total > 0 ? alloc.milli / 1000 / nodes.gpus_total : 0);

  prometheus::TextSerializer text;
  std::string out = text.Serialize(scheduler.registry().Collect());
  out += text.Serialize(state.Collect());
  out += nodes.heartbeats;
  out += nodes.unhealthy;
  AppendDcgmFamilies(nodes, out);
  return out;
}

}  // namespace tessera::server
