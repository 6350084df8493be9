#include "server/cycle_record.h"

#include <algorithm>

#include "api/job_array.h"
#include "api/json_read.h"
#include "api/queue_views.h"
#include "api/time.h"
#include "core/mig.h"
#include "core/workload.h"
#include "server/json_names.h"

namespace tessera::server {

using api::WorkloadCondition;

namespace {

json DevicesJson(const core::ClusterState& s, const core::Placement& p) {
  const core::NodeRecord& node = s.node(p.node);
  json devices = json::array();
  for (const core::DeviceAssignment& d : p.devices) {
    const core::GpuDevice& g = node.gpus[d.gpu];
    json j = {{"gpu", d.gpu},     {"index", g.index},
              {"uuid", g.uuid},   {"kind", std::string(core::DeviceKindName(d.kind))},
              {"milli", d.milli}, {"memoryMiB", d.memory_mib}};
    // What the device takes of its card in GPU equivalents (what quotas are charged).
    j["gpuMilli"] = s.DeviceGpuMilli(p.node, d);
    if (d.kind == core::DeviceKind::kMigInstance && d.mig_instance < g.sharing.mig.size()) {
      const core::MigGeometry* geo = core::FindMigGeometry(g.model);
      j["migInstance"] = d.mig_instance;
      if (geo)
        j["migProfile"] = std::string(geo->profiles[g.sharing.mig[d.mig_instance].profile].name);
    }
    if (d.kind == core::DeviceKind::kReplica) j["replicas"] = d.replicas;
    // The node runs this card's shares through MPS (GpuSharingConfig shared.mps).
    if (d.kind == core::DeviceKind::kShare && g.sharing.mps) j["mps"] = true;
    devices.push_back(std::move(j));
  }
  return devices;
}

// A pod's name within its Job: "<pod set>-<i>" (GangOf names it "<workload>/<pod set>-<i>").
std::string PodName(const std::string& name) { return name.substr(name.rfind('/') + 1); }

// A placed pod as the Job's status.pods records it: where it runs, what it holds, its devices,
// and the address its node is reached at.
json PodJson(const core::ClusterState& s, const std::string& name, const core::Placement& p,
             const std::map<std::string, std::string>& addresses) {
  json pod = {{"name", name},
              {"node", s.node(p.node).name},
              {"cpuMilli", p.resources.cpu_milli},
              {"memoryMiB", p.resources.memory_mib},
              {"devices", DevicesJson(s, p)}};
  if (auto it = addresses.find(s.node(p.node).name); it != addresses.end()) {
    pod["address"] = it->second;
  }
  return pod;
}

// "node-3 GPUs 0,1", "node-2 GPU 3 (MIG 1g.10gb)", "node-1 GPU 2 (share 500 milli, 4096 MiB)".
std::string Where(const core::ClusterState& s, const core::Placement& p) {
  const core::NodeRecord& node = s.node(p.node);
  std::string out = node.name;
  if (p.devices.empty()) return out;
  out += p.devices.size() == 1 ? " GPU " : " GPUs ";
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const core::DeviceAssignment& d = p.devices[i];
    out += (i ? "," : "") + std::to_string(node.gpus[d.gpu].index);
  }
  const core::DeviceAssignment& d = p.devices[0];
  const core::GpuDevice& g = node.gpus[d.gpu];
  if (d.kind == core::DeviceKind::kShare) {
    out += " (share " + (d.milli > 0 ? std::to_string(d.milli) + " milli, " : std::string()) +
           std::to_string(d.memory_mib) + " MiB)";
  } else if (d.kind == core::DeviceKind::kMigInstance && d.mig_instance < g.sharing.mig.size()) {
    const core::MigGeometry* geo = core::FindMigGeometry(g.model);
    if (geo)
      out +=
          " (MIG " + std::string(geo->profiles[g.sharing.mig[d.mig_instance].profile].name) + ")";
  } else if (d.kind == core::DeviceKind::kReplica) {
    out += " (" + std::to_string(d.replicas) + " time-slice replica" +
           (d.replicas == 1 ? "" : "s") + ")";
  }
  return out;
}

// "main-0 to node-1 GPU 0; ...; and 3 more pods": the entries of `pods` (a Job's status.pods)
// placed this cycle, by index, with their placements; the first 8 named.
std::string PlacedList(const core::ClusterState& s, const json& pods,
                       const std::vector<std::pair<size_t, const core::Placement*>>& placed) {
  std::string out;
  for (size_t i = 0; i < placed.size(); ++i) {
    if (i == 8) return out + "; and " + std::to_string(placed.size() - 8) + " more pods";
    out += (out.empty() ? "" : "; ") + Str(pods[placed[i].first], "name") + " to " +
           Where(s, *placed[i].second);
  }
  return out;
}

// status.flavors: per resource, the flavor of the first pod set charged one; with
// status.podSetFlavors per pod set when the sets' flavors differ (else null).
std::pair<json, json> FlavorsJson(const core::AdmittedWorkload& a) {
  json flavors = json::object(), set_flavors = json::array();
  for (const auto& names : a.flavors) {
    json& set = set_flavors.emplace_back(json::object());
    for (int r = 0; r < core::kNumQuotaResources; ++r) {
      if (names[r].empty()) continue;
      const std::string res(core::QuotaResourceName(static_cast<core::QuotaResource>(r)));
      set[res] = names[r];
      if (!flavors.contains(res)) flavors[res] = names[r];
    }
  }
  const bool uniform = std::all_of(set_flavors.begin(), set_flavors.end(),
                                   [&](const json& set) { return set == set_flavors.front(); });
  return {std::move(flavors), uniform ? json() : std::move(set_flavors)};
}

// A job of several pods meets at its first placed pod: that node's address and a port reserved
// there, as the training operator and Volcano give MASTER_ADDR and MASTER_PORT. Each pod also
// gets a port of its own on its node (a TensorFlow server's, say): the first pod's is the
// master's. Returns status.rendezvous (null when no pod got a port); `ports` holds the ports
// taken on each node.
json Rendezvous(json& pods, size_t world_size, std::map<std::string, std::set<int64_t>>& ports,
                const json& about, CycleWrites& writes) {
  json rendezvous;
  for (json& pod : pods) {
    if (!pod.is_object()) continue;
    const std::string node = Str(pod, "node");
    std::set<int64_t>& used = ports[node];
    int64_t port = kFirstRendezvousPort;
    while (used.contains(port) && port < kFirstRendezvousPort + kRendezvousPorts) ++port;
    if (port >= kFirstRendezvousPort + kRendezvousPorts) {
      writes.Event(
          about,
          {"Warning", "NoRendezvousPort",
           "every rendezvous port of node " + node + " (" + std::to_string(kFirstRendezvousPort) +
               "-" + std::to_string(kFirstRendezvousPort + kRendezvousPorts - 1) +
               ") is held: pod " + Str(pod, "name") + " gets no port" +
               (rendezvous.is_null() ? ", and the pods no MASTER_ADDR or MASTER_PORT" : "")});
      continue;
    }
    used.insert(port);
    pod["port"] = port;
    if (!rendezvous.is_null()) continue;
    rendezvous = {{"masterNode", node},
                  {"masterAddr", Str(pod, "address").empty() ? node : Str(pod, "address")},
                  {"masterPort", port},
                  {"worldSize", world_size}};
  }
  return rendezvous;
}

// Rendezvous ports held on each node by the distributed jobs running there: the master's and
// each pod's own.
std::map<std::string, std::set<int64_t>> PortsInUse(const CycleSnapshot& snap) {
  std::map<std::string, std::set<int64_t>> ports;
  for (size_t j : snap.running_jobs) {
    const json& st = Member(snap.jobs[j].obj(), "status");
    const json& rv = Member(st, "rendezvous");
    if (Member(rv, "masterPort").is_number_integer()) {
      ports[Str(rv, "masterNode")].insert(rv["masterPort"].get<int64_t>());
    }
    for (const json& pod : ListOf(Member(st, "pods"))) {
      if (Member(pod, "port").is_number_integer()) {
        ports[Str(pod, "node")].insert(pod["port"].get<int64_t>());
      }
    }
  }
  return ports;
}

}  // namespace

void RefreshBudget::Refill(int64_t now_ms) {
  const int64_t cap = int64_t{per_s_} * 1000;
  milli_ =
      at_ms_ < 0 ? cap : std::min(cap, milli_ + std::max<int64_t>(0, now_ms - at_ms_) * per_s_);
  at_ms_ = now_ms;
}

bool RefreshBudget::Spend() {
  if (milli_ < 1000) return false;
  milli_ -= 1000;
  return true;
}

std::optional<json> DecisionWriter::TakeAdvanced(size_t job) {
  auto advanced = advanced_.find(job);
  if (advanced == advanced_.end()) return std::nullopt;
  json obj = std::move(advanced->second);
  advanced_.erase(advanced);
  return obj;
}

void DecisionWriter::KeepProgress(size_t job, json* to) {
  const std::optional<json> advanced = TakeAdvanced(job);
  api::KeepProgress(advanced ? (*advanced)["status"] : Member(snap_.jobs[job].obj(), "status"), to);
}

// A waiting job's reason is rewritten when it changes, but once it waits with a reason of its
// own (not one it was evicted for) at most once per pending_refresh_ms: reasons that name other
// work (the reservation's holder, the job that found no room for its shape) change every cycle
// while a long queue drains, and rewriting every waiting job (and an event each) every cycle
// would cost more than placing.
void DecisionWriter::SetPending(size_t job, const std::string& message) {
  const StoredJson& s = snap_.jobs[job];
  const ObjectView& fields = *snap_.views[job];
  if (fields.phase == "Pending") {
    if (fields.message != nullptr && *fields.message == message) return;
    // Only a reason of the same kind waits (not one after a preemption, say).
    const int64_t since = fields.pending_since;
    if (since >= 0 && (now_ms_ - since < options_.pending_refresh_ms || !budget_.Spend())) return;
  }
  json obj = s.obj();
  // A preempted job keeps saying why it was evicted while it waits again.
  json conditions = json::array();
  for (const json& c : ListOf(Member(Member(s.obj(), "status"), "conditions"))) {
    if (Str(c, "type") == "Evicted" || Str(c, "type") == "Preempted") conditions.push_back(c);
  }
  conditions.push_back(WorkloadCondition("QuotaReserved", false, "Pending", message, now_ms_));
  obj["status"] = {{"phase", "Pending"}, {"message", message}, {"conditions", conditions}};
  // A preempted job keeps standing aside for its preemptor while that one holds the quota.
  if (const json& by = Member(Member(s.obj(), "status"), "preemptedBy"); by.is_object()) {
    obj["status"]["preemptedBy"] = by;
  }
  KeepProgress(job, &obj["status"]);
  writes_.Put(obj, s.version, CycleWrites::Note{"Normal", "Pending", message});
}

void DecisionWriter::HoldBack() {
  for (size_t j : snap_.suspended) {
    SetPending(j, "suspended (spec.suspend is true): nothing runs until it is false");
  }
  for (const auto& [j, why] : snap_.gated) SetPending(j, why);
}

Recorded DecisionWriter::Decisions(const core::CycleResult& result) {
  Recorded out;
  std::map<std::string, std::set<int64_t>> ports = PortsInUse(snap_);
  for (const core::Admission& a : result.admissions) Admit(a, ports, out);
  for (const core::Preemption& p : result.preemptions) Preempt(p, out);
  // Members of running gangs placed after admission, and why the others still wait.
  std::map<size_t,
           std::pair<std::vector<const core::Growth*>, std::vector<const core::WaitingPod*>>>
      grown;
  for (const core::Growth& g : result.growths) grown[g.running_index].first.push_back(&g);
  for (const core::WaitingPod& w : result.waiting) grown[w.running_index].second.push_back(&w);
  for (const auto& [ri, change] : grown) Grow(ri, change.first, change.second, out);
  return out;
}

void DecisionWriter::Admit(const core::Admission& a,
                           std::map<std::string, std::set<int64_t>>& ports, Recorded& out) {
  const size_t job = snap_.pending_jobs[a.pending_index];
  const StoredJson& s = snap_.jobs[job];
  const core::ClusterState& state = snap_.state;
  json pods = json::array();
  const core::GangPods members = core::GangOf(a.admitted.workload);
  for (size_t i = 0; i < a.admitted.placements.size(); ++i) {
    const std::optional<core::Placement>& p = a.admitted.placements[i];
    pods.push_back(p ? PodJson(state, PodName(members.Name(i)), *p, snap_.addresses) : json());
  }
  auto [flavors, set_flavors] = FlavorsJson(a.admitted);
  const auto array = snap_.arrays.find(job);
  json rendezvous;
  if (a.admitted.placements.size() > 1 && array == snap_.arrays.end()) {
    rendezvous = Rendezvous(pods, a.admitted.placements.size(), ports, s.obj(), writes_);
  }
  json obj = s.obj();
  // Kueue's admission of a suspended Job: it starts now.
  if (obj.contains("spec") && obj["spec"].is_object() && obj["spec"].value("suspend", false)) {
    obj["spec"]["suspend"] = false;
  }
  obj["status"] = {
      {"phase", "Admitted"},
      {"queue", a.admitted.queue},
      {"flavors", flavors},
      {"priority", a.admitted.priority},
      {"admittedAt", FormatTime(now_ms_)},
      {"pods", pods},
      {"conditions",
       {WorkloadCondition("QuotaReserved", true, "QuotaReserved",
                          "Quota reserved in queue " + a.admitted.queue, now_ms_),
        WorkloadCondition("Admitted", true, "Admitted", "The workload is admitted", now_ms_)}}};
  if (!set_flavors.is_null()) obj["status"]["podSetFlavors"] = std::move(set_flavors);
  if (!rendezvous.is_null()) obj["status"]["rendezvous"] = std::move(rendezvous);
  if (array != snap_.arrays.end()) {
    KeepProgress(job, &obj["status"]);
    api::AssignIndexes(array->second.first, array->second.second, &obj["status"]);
    out.follow_up = true;
  }
  // Named as written (an array's pods by the index they run).
  std::vector<std::pair<size_t, const core::Placement*>> placed;
  for (size_t i = 0; i < a.admitted.placements.size(); ++i) {
    if (a.admitted.placements[i] && obj["status"]["pods"][i].is_object()) {
      placed.emplace_back(i, &*a.admitted.placements[i]);
    }
  }
  const std::string where = PlacedList(state, obj["status"]["pods"], placed);
  writes_.Put(obj, s.version,
              CycleWrites::Note{"Normal", "Scheduled",
                                a.admitted.placements.size() == 1 && a.admitted.placements[0]
                                    ? "Scheduled to " + Where(state, *a.admitted.placements[0])
                                    : "Scheduled " + where});
  out.waits.emplace_back(
      a.admitted.queue,
      std::max<int64_t>(0, now_ms_ - std::max<int64_t>(a.admitted.workload.created_ms, 0)) /
          1000.0);
  ++out.admitted;
}

void DecisionWriter::Preempt(const core::Preemption& p, Recorded& out) {
  const size_t job = snap_.running_jobs[p.running_index];
  const StoredJson& s = snap_.jobs[job];
  out.released.insert(NamespaceOf(s.obj()) + "/" + NameOf(s.obj()));
  json obj = s.obj();
  const std::string cause(core::PreemptionCauseName(p.cause));
  // Kueue's conditions: evicted by preemption (with the preemption's reason), or evicted because
  // its ClusterQueue was stopped.
  const bool stopped = p.cause == core::PreemptionCause::kClusterQueueStopped;
  json conditions = {
      WorkloadCondition("Evicted", true, stopped ? cause : "Preempted", p.reason, now_ms_)};
  if (!stopped) {
    conditions.push_back(WorkloadCondition("Preempted", true, cause, p.reason, now_ms_));
  }
  conditions.push_back(
      WorkloadCondition("QuotaReserved", false, stopped ? cause : "Preempted", p.reason, now_ms_));
  conditions.push_back(WorkloadCondition("Admitted", false, "NoReservation", p.reason, now_ms_));
  obj["status"] = {{"phase", "Pending"}, {"message", p.reason}, {"conditions", conditions}};
  if (!stopped) {
    obj["status"]["preemptedBy"] = {
        {"workload", p.preemptor},
        {"holdUntil", FormatTime(now_ms_ + options_.preemption_hold_ms)}};
  }
  KeepProgress(job, &obj["status"]);  // an array keeps what it has done
  out.follow_up = true;
  writes_.Put(obj, s.version,
              CycleWrites::Note{"Warning", stopped ? "Evicted" : "Preempted",
                                p.reason + " [" + cause + "]"});
  ++out.preempted;
}

void DecisionWriter::Grow(size_t running_index, const std::vector<const core::Growth*>& growths,
                          const std::vector<const core::WaitingPod*>& waiting_pods, Recorded& out) {
  const size_t job = snap_.running_jobs[running_index];
  const StoredJson& s = snap_.jobs[job];
  const core::GangPods pods = core::GangOf(snap_.running[running_index].workload);
  const auto array = snap_.arrays.find(job);
  // Why the others wait: a run of pods with one reason is one entry, named by its first pod,
  // with its `count` (a large job's thousands of alike pods wait for one reason).
  json waiting;
  size_t slots = 0;
  for (const core::WaitingPod* w : waiting_pods) {
    // An array's waiting slots have no index yet: they are named as such.
    const std::string name = array == snap_.arrays.end()
                                 ? PodName(pods.Name(w->pod_index))
                                 : array->second.second + "-pending-" + std::to_string(slots);
    slots += w->count;
    json& entry = waiting.emplace_back(json{{"name", name}, {"reason", w->reason}});
    if (w->count > 1) entry["count"] = w->count;
  }
  const json& stored_waiting = Member(Member(s.obj(), "status"), "waitingPods");
  if (growths.empty() && !advanced_.contains(job) && stored_waiting == waiting) return;
  std::optional<json> advanced = TakeAdvanced(job);
  json obj = advanced ? std::move(*advanced) : s.obj();
  json& status = obj["status"];
  if (!growths.empty()) out.follow_up = true;
  for (const core::Growth* g : growths) {
    status["pods"][g->pod_index] =
        PodJson(snap_.state, PodName(pods.Name(g->pod_index)), g->placement, snap_.addresses);
    status["pods"][g->pod_index]["boundAt"] = FormatTime(now_ms_);
  }
  if (array != snap_.arrays.end()) {
    api::AssignIndexes(array->second.first, array->second.second, &status);
  }
  std::vector<std::pair<size_t, const core::Placement*>> placed;
  for (const core::Growth* g : growths) {
    if (status["pods"][g->pod_index].is_object()) placed.emplace_back(g->pod_index, &g->placement);
  }
  const std::string where = PlacedList(snap_.state, status["pods"], placed);
  if (growths.empty() && stored_waiting == waiting && obj == s.obj()) return;
  if (waiting.is_null()) {
    status.erase("waitingPods");
  } else {
    status["waitingPods"] = waiting;
  }
  // A write that lost to an agent's report is made again next cycle: the event with it.
  writes_.Put(obj, s.version,
              where.empty()
                  ? std::nullopt
                  : std::optional(CycleWrites::Note{"Normal", "Scheduled", "Scheduled " + where}));
}

std::vector<std::string> DecisionWriter::Statuses(
    const core::CycleResult& result, const std::map<std::string, std::string>& inactive) {
  // The waiting jobs' reasons, the longest unrefreshed first (a refresh spends the budget).
  std::vector<uint8_t> admitted(snap_.pending.size(), 0);
  for (const core::Admission& a : result.admissions) admitted[a.pending_index] = 1;
  std::vector<size_t> waiting_order;
  for (size_t i = 0; i < snap_.pending.size(); ++i) {
    if (!admitted[i]) waiting_order.push_back(i);
  }
  std::vector<std::string> reasons(snap_.pending.size());
  auto since = [&](size_t i) { return snap_.views[snap_.pending_jobs[i]]->pending_since; };
  std::stable_sort(waiting_order.begin(), waiting_order.end(),
                   [&](size_t a, size_t b) { return since(a) < since(b); });
  for (size_t i : waiting_order) {
    std::string reason = result.pending_reasons[i];
    // "queue X (of local queue ns/l) does not exist" for a queue dropped as invalid.
    for (const auto& [name, why] : inactive) {
      if (reason.rfind("queue " + name + " (of local queue", 0) == 0) {
        reason = "queue " + name + " is inactive: " + why;
      }
    }
    SetPending(snap_.pending_jobs[i], reason);
    reasons[i] = std::move(reason);
  }
  // Arrays whose ended tasks were counted and that nothing else rewrote this cycle.
  for (auto& [j, obj] : advanced_) writes_.Put(obj, snap_.jobs[j].version);
  advanced_.clear();
  // Each Queue says whether it is active, and why not.
  for (const StoredJson& s : snap_.queues) {
    auto it = inactive.find(NameOf(s.obj()));
    json status = {{"active", it == inactive.end()}};
    if (it != inactive.end()) status["message"] = it->second;
    if (Member(s.obj(), "status") == status) continue;
    json obj = s.obj();
    obj["status"] = status;
    writes_.Put(obj, s.version);
  }
  return reasons;
}

}  // namespace tessera::server
