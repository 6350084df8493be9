// Longer than 800 lines for now: SchedulingLoop::Cycle still reads, decides, writes and reports
// in one function over the control plane's state. It splits into typed stages (read: a snapshot;
// decide: the core; write: decisions, statuses, events; report: metrics, accounting), each in its
// own file, once that state is a layer the loop is handed.
#include "server/scheduling_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "api/job_array.h"
#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/queue_views.h"
#include "api/status_schema.h"
#include "api/time.h"
#include "core/mig.h"
#include "core/workload.h"
#include "server/accountant.h"

namespace tessera::server {

using api::FormatTime;
using api::ListOf;
using api::Member;
using api::Num;
using api::ParseTime;
using api::Str;

using nlohmann::json;

// What a cycle reads of one stored version of an object, beyond its document.
struct SchedulingLoop::View {
  std::shared_ptr<const json> doc;
  std::optional<Status> readable;  // its envelope and status, checked
  // Of a Job: its spec, decoded; its creation time; and the time of its QuotaReserved=False
  // condition with reason Pending, the latest where several (-1: none).
  std::optional<Result<api::JobSpec>> job;
  int64_t created_ms = -1;
  int64_t pending_since = -1;
  // Of a Job, read once per version: status.phase and status.message (a pointer into `doc`;
  // null when it has none), whether it ended (Succeeded or Failed), when an ended Job is to be
  // deleted (ttlSecondsAfterFinished; -1: never), and whether its end was given to the
  // accountant.
  bool status_read = false;
  std::string phase;
  const std::string* message = nullptr;
  bool ended = false;
  int64_t delete_at_ms = -1;
  bool accounted = false;
};

namespace {

using api::WorkloadCondition;

constexpr char kUnqueued[] = "tessera-unqueued";

using Stored = StoredJson;

std::string NameOf(const json& obj) { return Str(Member(obj, "metadata"), "name"); }
// Whether the object's annotation `key` is "true" (set by the manifest translation).
bool Annotated(const json& obj, const char* key) {
  return Str(Member(Member(obj, "metadata"), "annotations"), key) == "true";
}
std::string NamespaceOf(const json& obj) { return Str(Member(obj, "metadata"), "namespace"); }

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

// A placed pod as a Job's status.pods entry: where it runs, what it holds, its devices.
// A placed pod as the Job's status records it; `address` is where its node is reached.
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

// The ports rendezvous of distributed jobs take on each node: [kFirstRendezvousPort, +1000).
constexpr int64_t kFirstRendezvousPort = 29500;
constexpr int64_t kRendezvousPorts = 1000;

Result<core::Placement> PlacementFromJson(const core::ClusterState& s, const json& pod) {
  auto node = s.FindNode(pod.value("node", ""));
  if (!node.ok()) return node.status();
  core::Placement p;
  p.node = *node;
  p.resources = {pod.value("cpuMilli", int64_t{0}), pod.value("memoryMiB", int64_t{0})};
  const size_t gpus = s.node(*node).gpus.size();
  for (const json& d : pod.value("devices", json::array())) {
    core::DeviceAssignment a;
    const int64_t pos = d.value("gpu", int64_t{-1});
    if (pos < 0 || static_cast<size_t>(pos) >= gpus) return NotFound("GPU position out of range");
    a.gpu = static_cast<uint8_t>(pos);
    const std::string kind = d.value("kind", "");
    bool known = false;
    for (core::DeviceKind k : {core::DeviceKind::kWhole, core::DeviceKind::kShare,
                               core::DeviceKind::kMigInstance, core::DeviceKind::kReplica}) {
      if (core::DeviceKindName(k) == kind) {
        a.kind = k;
        known = true;
      }
    }
    if (!known) return InvalidArgument("unknown device kind " + kind);
    a.milli = static_cast<int32_t>(d.value("milli", int64_t{0}));
    a.memory_mib = d.value("memoryMiB", int64_t{0});
    a.mig_instance = static_cast<uint8_t>(d.value("migInstance", int64_t{0}));
    a.replicas = static_cast<uint16_t>(d.value("replicas", int64_t{0}));
    p.devices.push_back(a);
  }
  return p;
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

// Drops what makes the queue configuration invalid, one object at a time, as the error names it
// ("queues[2] (team-a).resource_groups...": queue 2): a broken queue stops only its own work.
// Dropped queues and why are added to `inactive`, other dropped objects to `problems`. An error
// naming no list entry is returned.
Status DropInvalid(core::QueueConfig* cfg, std::map<std::string, std::string>* inactive,
                   std::vector<std::string>* problems) {
  for (;;) {
    Status s = core::ValidateQueueConfig(*cfg);
    if (s.ok()) return s;
    const std::string& msg = s.message();
    const size_t open = msg.find('['), close = msg.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return s;
    const std::string list = msg.substr(0, open);
    size_t i = 0;
    try {
      i = std::stoul(msg.substr(open + 1, close - open - 1));
    } catch (const std::exception&) {
      return s;
    }
    auto drop = [&](auto& v) {
      if (i >= v.size()) return false;
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    };
    bool dropped = false;
    if (list == "queues" && i < cfg->queues.size()) {
      (*inactive)[cfg->queues[i].name] = msg;
      dropped = drop(cfg->queues);
    } else if (list == "cohorts") {
      dropped = drop(cfg->cohorts);
    } else if (list == "local_queues") {
      dropped = drop(cfg->local_queues);
    } else if (list == "flavors") {
      dropped = drop(cfg->flavors);
    } else if (list == "priority_classes") {
      dropped = drop(cfg->priority_classes);
    } else if (list == "namespace_quotas") {
      dropped = drop(cfg->namespace_quotas);
    }
    if (!dropped) return s;
    if (list != "queues") problems->push_back("ignored: " + msg);
  }
}

}  // namespace

// The writes of one cycle: object writes, each with the events about it, and events on their own.
// Flush commits them all in one transaction. Should that fail (an object changed meanwhile),
// each object write is committed alone with its events, so that a write that loses takes its
// events with it and the next cycle decides again; then the other events together.
class CycleWrites {
 public:
  // An event about the object written.
  struct Note {
    const char* type;
    std::string reason;
    std::string message;
  };

  // The revisions committed are added to `written`.
  CycleWrites(ControlPlane& plane, CycleSummary& sum, int64_t now_ms, int64_t& event_seq,
              std::vector<int64_t>& written)
      : plane_(plane), sum_(sum), now_ms_(now_ms), event_seq_(event_seq), written_(written) {}
  ~CycleWrites() { Flush(); }
  CycleWrites(const CycleWrites&) = delete;
  CycleWrites& operator=(const CycleWrites&) = delete;

  // Writes `obj` based on the version read, with an event about it when given (a concurrent
  // change wins: the next cycle decides again).
  void Put(const json& obj, std::optional<int64_t> version,
           std::optional<Note> note = std::nullopt) {
    const std::string kind = Str(obj, "kind");
    Batch& b = objects_.emplace_back();
    json body = obj;
    body["metadata"].erase("resourceVersion");
    b.push_back(
        {store::Write::Op::kPut, {kind, NamespaceOf(obj), NameOf(obj)}, body.dump(), version});
    if (note) b.push_back(MakeEvent(obj, *note));
  }
  void Delete(const json& obj, int64_t version) {
    objects_.push_back({{store::Write::Op::kDelete,
                         {Str(obj, "kind"), NamespaceOf(obj), NameOf(obj)},
                         "",
                         version}});
  }
  void Event(const json& about, const Note& note) { events_.push_back(MakeEvent(about, note)); }

  void Flush() {
    if (objects_.empty() && events_.empty()) return;
    std::vector<store::Write> all;
    for (const Batch& b : objects_) all.insert(all.end(), b.begin(), b.end());
    all.insert(all.end(), events_.begin(), events_.end());
    if (Commit(all).ok()) {
      sum_.writes += static_cast<int>(all.size());
    } else {
      for (const Batch& b : objects_) {
        auto r = Commit(b);
        if (r.ok()) {
          sum_.writes += static_cast<int>(b.size());
        } else if (r.status().code() == StatusCode::kConflict) {
          ++sum_.write_conflicts;
        }
      }
      if (!events_.empty() && Commit(events_).ok()) {
        sum_.writes += static_cast<int>(events_.size());
      } else {
        for (const store::Write& w : events_) {
          if (Commit(std::span<const store::Write>(&w, 1)).ok()) ++sum_.writes;
        }
      }
    }
    objects_.clear();
    events_.clear();
  }

 private:
  using Batch = std::vector<store::Write>;

  Result<std::vector<int64_t>> Commit(std::span<const store::Write> writes) {
    auto r = plane_.Commit(writes);
    if (r.ok()) written_.insert(written_.end(), r->begin(), r->end());
    return r;
  }

  store::Write MakeEvent(const json& about, const Note& note) {
    const std::string name = NameOf(about).substr(0, 200) + "." + std::to_string(now_ms_) + "-" +
                             std::to_string(++event_seq_);
    const std::string ns = NamespaceOf(about).empty() ? "tessera-system" : NamespaceOf(about);
    const json e = api::EventObject(ns, name, note.type, note.reason, note.message,
                                    FormatTime(now_ms_), Str(about, "kind"), NameOf(about));
    return {store::Write::Op::kPut, {"Event", ns, name}, e.dump(), 0};
  }

  ControlPlane& plane_;
  CycleSummary& sum_;
  const int64_t now_ms_;
  int64_t& event_seq_;
  std::vector<int64_t>& written_;
  std::vector<Batch> objects_;
  std::vector<store::Write> events_;
};

Result<std::unique_ptr<SchedulingLoop>> SchedulingLoop::Create(ControlPlane& plane,
                                                               SchedulingLoopOptions options) {
  core::SchedulerConfig sc;
  sc.policy = options.policy;
  auto placer = core::Scheduler::Create(sc);
  if (!placer.ok()) return placer.status();
  return std::unique_ptr<SchedulingLoop>(
      new SchedulingLoop(plane, std::move(options), std::move(placer).value()));
}

SchedulingLoop::SchedulingLoop(ControlPlane& plane, SchedulingLoopOptions options,
                               std::unique_ptr<core::Scheduler> placer)
    : plane_(plane), options_(std::move(options)), placer_(std::move(placer)) {}

SchedulingLoop::~SchedulingLoop() { Stop(); }

Result<CycleSummary> SchedulingLoop::RunOnce(int64_t now_ms) {
  const auto started = std::chrono::steady_clock::now();
  Result<CycleSummary> sum = Internal("cycle not run");
  plane_.exec().Expire(now_ms);
  try {
    sum = Cycle(now_ms);
  } catch (const std::exception& e) {
    // A defect, not the state's fault: this cycle decides nothing, the next one tries again.
    sum = Internal(std::string("scheduling cycle failed: ") + e.what());
    std::fprintf(stderr, "error: %s\n", api::SafeText(sum.status().message()).c_str());
  }
  follow_up_ = !sum.ok() || sum->follow_up;
  if (sum.ok()) {
    plane_.metrics().ObserveCycle(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
        sum->admitted, sum->preempted, sum->pending);
  }
  return sum;
}

CycleGauges GaugesAfter(core::ClusterState state, const core::CycleResult& result,
                        const std::vector<core::AdmittedWorkload>& running,
                        const core::QueueConfig& cfg) {
  CycleGauges gauges;
  // Fragmentation after this cycle's decisions.
  for (const core::Preemption& p : result.preemptions) {
    for (const std::optional<core::Placement>& pl : running[p.running_index].placements) {
      if (pl) (void)state.Release(*pl);
    }
  }
  for (const core::Admission& a : result.admissions) {
    for (const std::optional<core::Placement>& pl : a.admitted.placements) {
      if (pl) (void)state.Allocate(*pl);
    }
  }
  for (const core::Growth& g : result.growths) (void)state.Allocate(g.placement);
  gauges.fragmentation = core::FragmentationOf(state);
  for (const core::QueueSpec& q : cfg.queues) {
    for (const core::ResourceGroup& g : q.resource_groups) {
      for (const core::FlavorQuotas& f : g.flavors) {
        for (const core::ResourceQuota& r : f.resources) {
          const double amount = r.resource == core::QuotaResource::kMemory ? r.nominal * 1048576.0
                                                                           : r.nominal / 1000.0;
          gauges.quotas.push_back(
              {q.name, f.flavor, std::string(core::QuotaResourceName(r.resource)), amount});
        }
      }
    }
  }
  return gauges;
}

Result<CycleSummary> SchedulingLoop::Cycle(int64_t now_ms) {
  CycleSummary sum;
  ObjectCache& store = plane_.objects();
  // The budget of pending reasons' refreshes, refilled for the time since the last cycle.
  const int64_t budget_cap = int64_t{options_.pending_refreshes_per_s} * 1000;
  refresh_budget_milli_ =
      refresh_budget_at_ms_ < 0
          ? budget_cap
          : std::min(budget_cap,
                     refresh_budget_milli_ + std::max<int64_t>(0, now_ms - refresh_budget_at_ms_) *
                                                 options_.pending_refreshes_per_s);
  refresh_budget_at_ms_ = now_ms;
  std::vector<std::string> problems;

  own_revisions_.clear();
  CycleWrites writes(plane_, sum, now_ms, event_seq_, own_revisions_);
  // The stored objects of a kind whose envelope and status can be read; the others are skipped,
  // named in a metric and, once per version, in a Warning event.
  std::vector<CycleGauges::Undecodable> undecodable;
  std::unordered_map<const json*, std::shared_ptr<View>> next_views;  // this cycle's objects
  std::map<std::string, int64_t> next_reported;  // and those reported undecodable
  auto skip = [&](const Stored& s, std::string_view kind, const Status& why) {
    const std::string ns = NamespaceOf(s.obj()), name = NameOf(s.obj());
    undecodable.push_back({std::string(kind), ns, name, why.message()});
    const std::string key = std::string(kind) + "/" + ns + "/" + name;
    next_reported[key] = s.version;
    if (auto it = undecodable_reported_.find(key);
        it != undecodable_reported_.end() && it->second == s.version) {
      return;
    }
    if (api::ValidateName(name, false, "").ok() &&
        (ns.empty() || api::ValidateName(ns, true, "").ok())) {
      json about = {{"kind", kind}, {"metadata", {{"name", name}, {"namespace", ns}}}};
      writes.Event(about,
                   {"Warning", "Undecodable",
                    "skipped by the scheduler until it is fixed or deleted: " + why.message()});
    }
  };
  // The view of a listed object: the last cycle's while its version stays, or a new one.
  auto view_of = [&](const Stored& o) -> View& {
    std::shared_ptr<View>& v = next_views[o.doc.get()];
    if (v) return *v;
    if (auto last = views_.find(o.doc.get()); last != views_.end()) {
      v = std::move(last->second);
    } else {
      v = std::make_shared<View>();
      v->doc = o.doc;
    }
    return *v;
  };
  auto ListKind = [&](ObjectCache& cache, const char* kind, std::vector<std::string>* problems) {
    auto list = cache.List(kind);
    std::vector<Stored> out;
    if (!list.ok()) {
      problems->push_back(list.status().message());
      return out;
    }
    out.reserve(list->size());
    for (Stored& o : *list) {
      View& v = view_of(o);
      if (!v.readable) {
        Status ok = api::ValidateEnvelope(o.obj());
        if (ok.ok() && Str(o.obj(), "kind") != kind)
          ok = InvalidArgument("kind: not " + std::string(kind));
        if (ok.ok()) ok = api::ValidateStatus(kind, Member(o.obj(), "status"));
        v.readable = std::move(ok);
      }
      if (!v.readable->ok()) {
        skip(o, kind, *v.readable);
        continue;
      }
      out.push_back(std::move(o));
    }
    return out;
  };

  // The cluster: nodes with their GPUs' sharing.
  std::vector<api::GpuSharingConfigSpec> sharing;
  std::vector<const Stored*> sharing_obj;
  const std::vector<Stored> sharing_configs = ListKind(store, "GpuSharingConfig", &problems);
  for (const Stored& s : sharing_configs) {
    if (auto c = api::DecodeGpuSharingConfig(s.obj()); c.ok()) {
      sharing.push_back(std::move(c).value());
      sharing_obj.push_back(&s);
    } else {
      skip(s, "GpuSharingConfig", c.status());
    }
  }
  std::map<std::string, std::vector<std::string>> invalid_sharing;
  core::ClusterState state;
  // A node whose agent missed its heartbeats for longer than the grace period is NotReady: it
  // takes no work, and what was bound to it is scheduled again (gangs whole).
  std::map<std::string, std::string> not_ready;  // node -> why
  const std::vector<Stored> nodes = ListKind(store, "Node", &problems);
  const std::vector<Stored> leases = ListKind(store, "Lease", &problems);
  std::map<std::string, const json*> lease_of;  // node -> its Lease
  for (const Stored& l : leases) lease_of[NameOf(l.obj())] = &l.obj();
  std::map<std::string, std::string> addresses;  // node -> the address its agent advertises
  for (const Stored& s : nodes) {
    if (const std::string a = Str(Member(s.obj(), "status"), "address"); !a.empty()) {
      addresses[NameOf(s.obj())] = a;
    }
    auto node = api::DecodeNode(s.obj());
    if (!node.ok()) {
      skip(s, "Node", node.status());
      continue;
    }
    const json& node_status = Member(s.obj(), "status");
    const auto lease = lease_of.find(node->name);
    const json* stored_lease = lease == lease_of.end() ? nullptr : lease->second;
    // What the node and its Lease say (a Node written with a malformed heartbeat is NotReady),
    // and when it last reported, renewals held in memory included.
    const std::string beat = api::NodeHeartbeat(s.obj(), stored_lease ? *stored_lease : json());
    const int64_t at = plane_.leases().LastBeat(s.obj(), stored_lease);
    if ((!beat.empty() || at >= 0) && options_.node_grace_ms > 0) {
      // Never before the node's agent has surely stopped its pods (fenceSeconds), with a margin.
      const json& fence = Member(node_status, "fenceSeconds");
      const int64_t grace =
          std::max(options_.node_grace_ms,
                   fence.is_number_integer() ? fence.get<int64_t>() * 1000 + kFenceMarginMs : 0);
      if (at < 0 || now_ms - at > grace) {
        not_ready[node->name] = "node " + node->name + " is NotReady: no heartbeat since " +
                                (at >= 0 ? FormatTime(at) : beat);
        continue;
      }
    }
    api::ApplySharing(sharing, &*node, &invalid_sharing);
    if (auto id = state.AddNode(std::move(node).value()); !id.ok()) {
      problems.push_back(id.status().message());
    }
  }
  // A config valid when applied may not suit the cards it reaches (a node joined or changed):
  // its status says where and why, and a Warning event says it once per change.
  for (const Stored* s : sharing_obj) {
    const std::string name = NameOf(s->obj());
    const auto it = invalid_sharing.find(name);
    json status = json::object();
    if (it != invalid_sharing.end()) {
      status = {{"phase", "Invalid"}, {"problems", it->second}};
      for (const std::string& p : it->second)
        problems.push_back("GpuSharingConfig " + name + ": " + p);
    } else {
      status = {{"phase", "Applied"}};
    }
    if (Member(s->obj(), "status") == status) continue;
    json obj = s->obj();
    obj["status"] = status;
    std::optional<CycleWrites::Note> note;
    if (it != invalid_sharing.end()) {
      std::string message;
      for (const std::string& p : it->second) message += (message.empty() ? "" : "; ") + p;
      note = CycleWrites::Note{"Warning", "InvalidSharingConfig", message};
    }
    writes.Put(obj, s->version, std::move(note));
  }

  // The queues.
  core::QueueConfig cfg;
  for (const Stored& s : ListKind(store, "ResourceFlavor", &problems)) {
    if (auto v = api::DecodeResourceFlavor(s.obj()); v.ok()) {
      cfg.flavors.push_back(*v);
    } else {
      skip(s, "ResourceFlavor", v.status());
    }
  }
  for (const Stored& s : ListKind(store, "Cohort", &problems)) {
    if (auto v = api::DecodeCohort(s.obj()); v.ok()) {
      // The cohort of Volcano's queues lends what the cluster has (Volcano's proportion plugin
      // divides the cluster's capacity among queues by weight): its quota is the capacity of
      // the ready nodes, this cycle.
      if (Annotated(s.obj(), "tessera.io/volcano-cohort")) {
        core::QuotaVector capacity = {0, 0, 0};
        for (uint32_t n = 0; n < state.size(); ++n) {
          const core::NodeRecord& node = state.node(core::NodeId(n));
          capacity[static_cast<int>(core::QuotaResource::kGpu)] += node.gpu_capacity_milli;
          capacity[static_cast<int>(core::QuotaResource::kCpu)] += node.allocatable.cpu_milli;
          capacity[static_cast<int>(core::QuotaResource::kMemory)] += node.allocatable.memory_mib;
        }
        for (core::ResourceGroup& g : v->resource_groups) {
          for (core::FlavorQuotas& f : g.flavors) {
            for (core::ResourceQuota& q : f.resources) {
              q.nominal = capacity[static_cast<int>(q.resource)];
            }
          }
        }
      }
      cfg.cohorts.push_back(*v);
    } else {
      skip(s, "Cohort", v.status());
    }
  }
  const std::vector<Stored> queues = ListKind(store, "Queue", &problems);
  // Volcano's queues are open to every namespace: a Job naming one uses it directly.
  std::set<std::string> volcano_queues;
  for (const Stored& s : queues) {
    if (auto v = api::DecodeQueue(s.obj()); v.ok()) {
      cfg.queues.push_back(*v);
      if (Annotated(s.obj(), "tessera.io/volcano-queue")) {
        volcano_queues.insert(v->name);
      }
    } else {
      skip(s, "Queue", v.status());
    }
  }
  // Kueue's namespaceSelector: the namespaces whose workloads each Queue admits, by the labels
  // of the namespaces as written (and the name label every namespace has).
  std::map<std::string, api::LabelSelector> namespace_selectors;  // by Queue
  for (const Stored& s : queues) {
    const json& sel = Member(Member(s.obj(), "spec"), "namespaceSelector");
    if (sel.is_null()) continue;
    if (auto parsed = api::LabelSelector::FromJson(sel, "spec.namespaceSelector"); parsed.ok()) {
      namespace_selectors.emplace(NameOf(s.obj()), std::move(parsed).value());
    }
  }
  std::map<std::string, json> namespace_labels;
  if (!namespace_selectors.empty()) {
    for (const Stored& s : ListKind(store, "Namespace", &problems)) {
      namespace_labels[NameOf(s.obj())] = Member(Member(s.obj(), "metadata"), "labels");
    }
  }
  auto namespace_admitted = [&](const std::string& ns, const std::string& queue) {
    auto it = namespace_selectors.find(queue);
    if (it == namespace_selectors.end()) return true;
    json labels = namespace_labels[ns];
    if (!labels.is_object()) labels = json::object();
    labels["kubernetes.io/metadata.name"] = ns;
    return it->second.Matches(labels);
  };
  std::map<std::string, std::string> queue_of_local;      // "ns/name" -> Queue
  std::set<std::string> local_queue_keys, volcano_users;  // "ns/name"
  for (const Stored& s : ListKind(store, "LocalQueue", &problems)) {
    if (auto v = api::DecodeLocalQueue(s.obj()); v.ok()) {
      local_queue_keys.insert(v->namespace_name + "/" + v->name);
      queue_of_local[v->namespace_name + "/" + v->name] = v->queue;
      cfg.local_queues.push_back(*v);
    } else {
      skip(s, "LocalQueue", v.status());
    }
  }
  for (const Stored& s : ListKind(store, "PriorityClass", &problems)) {
    if (auto v = api::DecodePriorityClass(s.obj()); v.ok()) {
      cfg.priority_classes.push_back(*v);
    } else {
      skip(s, "PriorityClass", v.status());
    }
  }
  for (const Stored& s : ListKind(store, "NamespaceQuota", &problems)) {
    auto v = api::DecodeNamespaceQuota(s.obj());
    if (!v.ok()) {
      skip(s, "NamespaceQuota", v.status());
      continue;
    }
    // Two quotas of one namespace: the tighter limit per resource holds.
    auto same = std::find_if(
        cfg.namespace_quotas.begin(), cfg.namespace_quotas.end(),
        [&](const core::NamespaceQuota& q) { return q.namespace_name == v->namespace_name; });
    if (same == cfg.namespace_quotas.end()) {
      cfg.namespace_quotas.push_back(*v);
      continue;
    }
    for (int r = 0; r < core::kNumQuotaResources; ++r) {
      if (v->hard[r])
        same->hard[r] = same->hard[r] ? std::min(*same->hard[r], *v->hard[r]) : *v->hard[r];
    }
  }
  core::AddImplicitCohorts(&cfg);
  // Work outside queues: no quota, and kube-scheduler's default preemption by priority class.
  core::QueueSpec unqueued;
  unqueued.name = kUnqueued;
  unqueued.preemption.style = core::PreemptionStyle::kKubeScheduler;
  unqueued.preemption.within_queue = core::WithinQueuePreemption::kLowerPriority;
  cfg.queues.push_back(unqueued);
  std::map<std::string, api::PodGroupSpec> groups;
  for (const Stored& s : ListKind(store, "PodGroup", &problems)) {
    if (auto g = api::DecodePodGroup(s.obj()); g.ok()) {
      groups[g->namespace_name + "/" + g->name] = *g;
    } else {
      skip(s, "PodGroup", g.status());
    }
  }

  // The work: bound Jobs hold their devices; the others are pending.
  std::vector<core::Workload> pending;
  std::vector<const Stored*> pending_obj;
  std::vector<core::AdmittedWorkload> running;
  std::vector<const Stored*> running_obj;
  const std::vector<Stored> jobs = ListKind(store, "Job", &problems);
  views_.swap(next_views);  // every kind has been listed by now
  // A listed Job's view, its spec decoded.
  auto job_view = [&](const Stored& s) -> const View& {
    View& v = *views_.at(s.doc.get());
    if (v.job) return v;
    v.job = api::DecodeJob(s.obj());
    v.created_ms = ParseTime(Str(Member(s.obj(), "metadata"), "creationTimestamp"));
    for (const json& c : ListOf(Member(Member(s.obj(), "status"), "conditions"))) {
      if (Str(c, "type") != "QuotaReserved" || Str(c, "reason") != "Pending") continue;
      v.pending_since = std::max(v.pending_since, ParseTime(Str(c, "lastTransitionTime")));
    }
    return v;
  };
  // A listed Job's view, its status read.
  auto job_status = [&](const Stored& s) -> View& {
    View& v = *views_.at(s.doc.get());
    if (v.status_read) return v;
    v.status_read = true;
    const json& status = Member(s.obj(), "status");
    if (const json& phase = Member(status, "phase"); phase.is_string()) {
      v.phase = phase.get_ref<const std::string&>();
    }
    if (const json& message = Member(status, "message"); message.is_string()) {
      v.message = &message.get_ref<const std::string&>();
    }
    v.ended = v.phase == "Succeeded" || v.phase == "Failed";
    const json& ttl = Member(Member(s.obj(), "spec"), "ttlSecondsAfterFinished");
    if (v.ended && ttl.is_number_integer()) {
      const int64_t finished = ParseTime(Str(status, "finishedAt"));
      if (finished > 0) v.delete_at_ms = finished + ttl.get<int64_t>() * 1000;
    }
    return v;
  };
  std::set<std::string> unqueued_ns;
  std::vector<const Stored*> suspended;
  // Arrays by Job, with their task's name, and those whose status this cycle changed.
  std::map<const Stored*, std::pair<api::ArraySpec, std::string>> arrays;
  std::map<const Stored*, json> array_objs;
  std::vector<std::pair<const Stored*, std::string>> gated;
  // MPI launchers' exec tokens live as long as their Job runs.
  std::set<std::string> running_jobs;  // "ns/name/uid"
  for (const Stored& s : jobs) {
    if (job_status(s).phase == "Admitted") {
      running_jobs.insert(NamespaceOf(s.obj()) + "/" + NameOf(s.obj()) + "/" +
                          Str(Member(s.obj(), "metadata"), "uid"));
    }
  }
  // Tokens are orphaned only when a Job stops running: the store's tokens are read then (and
  // at the first cycle, for what a previous server left), not every cycle.
  const bool one_left =
      !running_jobs_known_ ||
      std::any_of(running_jobs_.begin(), running_jobs_.end(),
                  [&](const std::string& j) { return !running_jobs.contains(j); });
  if (one_left) {
    if (auto revoked = plane_.RevokeExecTokens(running_jobs); revoked.ok()) {
      running_jobs_known_ = true;
    } else {
      problems.push_back(revoked.status().message());
    }
  }
  running_jobs_ = std::move(running_jobs);
  for (const Stored& s : jobs) {
    const View& fields = job_status(s);
    // Finished work holds nothing and waits for nothing; with ttlSecondsAfterFinished it is
    // deleted that long after it ended, as Kubernetes' TTL controller does.
    if (fields.ended) {
      if (fields.delete_at_ms > 0 && now_ms >= fields.delete_at_ms) {
        writes.Delete(s.obj(), s.version);
      }
      continue;
    }
    const json& status = Member(s.obj(), "status");
    const std::string& phase = fields.phase;
    const json& spec = Member(s.obj(), "spec");
    // activeDeadlineSeconds: a Job active longer than this since it was admitted fails
    // (DeadlineExceeded), and its pods are stopped.
    if (const json& deadline = Member(spec, "activeDeadlineSeconds");
        phase == "Admitted" && deadline.is_number_integer()) {
      const int64_t admitted = ParseTime(Str(status, "admittedAt"));
      if (admitted > 0 && now_ms >= admitted + deadline.get<int64_t>() * 1000) {
        json obj = s.obj();
        const std::string message =
            "DeadlineExceeded: the job was active longer than its "
            "activeDeadlineSeconds (" +
            std::to_string(deadline.get<int64_t>()) + ")";
        // As Kubernetes' Job controller: the pods still active are stopped and count as
        // failed (an array counts them itself; a Job's view reads them Failed).
        int64_t stopped = 0;
        for (const json& p : ListOf(Member(status, "pods"))) {
          const std::string pod_phase = Str(Member(p, "state"), "phase");
          if (p.is_object() && pod_phase != "Succeeded" && pod_phase != "Failed") ++stopped;
        }
        if (api::IsArrayJob(obj) && stopped > 0) {
          obj["status"]["failed"] = static_cast<int64_t>(api::Num(status, "failed")) + stopped;
        }
        obj["status"]["phase"] = "Failed";
        obj["status"]["reason"] = "DeadlineExceeded";
        obj["status"]["message"] = "Job was active longer than specified deadline";
        obj["status"]["finishedAt"] = FormatTime(now_ms);
        writes.Put(obj, s.version, CycleWrites::Note{"Warning", "DeadlineExceeded", message});
        sum.follow_up = true;
        continue;
      }
    }
    const View& view = job_view(s);
    const Result<api::JobSpec>& job = *view.job;
    if (!job.ok()) {
      skip(s, "Job", job.status());
      continue;
    }
    const bool suspend = job->suspend;
    core::Workload w = job->workload;
    // An array's status as this cycle leaves it: finished tasks counted, their slots emptied.
    const json* array_status = &status;
    if (job->array) {
      arrays[&s] = {*job->array, job->tasks[0].name};
      if (phase == "Admitted") {
        json obj = s.obj();
        const api::ArrayStep step = api::AdvanceArray(*job->array, &obj["status"]);
        if (!step.outcome.empty()) {
          const bool ok = step.outcome == "Succeeded";
          obj["status"]["phase"] = step.outcome;
          obj["status"]["message"] = step.message;
          obj["status"]["finishedAt"] = FormatTime(now_ms);
          if (!ok) obj["status"]["reason"] = step.reason;
          writes.Put(obj, s.version,
                     CycleWrites::Note{ok ? "Normal" : "Warning", ok ? "Completed" : step.reason,
                                       step.message});
          sum.follow_up = true;
          continue;
        }
        if (step.changed) {
          array_status = &(array_objs[&s] = std::move(obj))["status"];
          sum.follow_up = true;
        }
        w.pod_sets[0].count = static_cast<int32_t>(ListOf(Member(*array_status, "pods")).size());
      } else if (w.min_member == 1) {
        // Admitted with its first task: the others are placed, and charged, one by one as
        // they find room and quota (a gang's growth), from the next cycle on.
        w.pod_sets[0].count = 1;
      } else {
        w.pod_sets[0].count =
            std::clamp(api::IndexesToStart(*job->array, status), 1, job->array->parallelism);
      }
    }
    if (!job->pod_group.empty()) {
      auto g = groups.find(w.namespace_name + "/" + job->pod_group);
      if (g != groups.end()) {
        if (w.min_member == 0) w.min_member = std::min(g->second.min_member, core::PodCount(w));
        // Volcano's minTaskMember: each named task's pods that must be placed with the gang
        // (a task's own minimum, where it has one, stands).
        for (core::PodSet& set : w.pod_sets) {
          auto t = g->second.min_task_member.find(set.name);
          if (t != g->second.min_task_member.end() && set.min_count == 0) {
            set.min_count = std::min(t->second, set.count);
          }
        }
        if (w.local_queue.empty()) w.local_queue = g->second.queue;
        if (w.priority_class.empty()) w.priority_class = g->second.priority_class;
      }
    }
    // spec.suspend: of a queued Job, the queue's own switch (Kueue's: admission sets it to
    // false); of any other Job, Kubernetes' (nothing runs while it is true; a running Job stops).
    if (suspend && w.local_queue.empty()) {
      suspended.push_back(&s);
      continue;
    }
    // Kubernetes' scheduling gates hold a Job that is not yet placed until they are removed.
    if (!job->scheduling_gates.empty() && phase != "Admitted") {
      std::string names;
      for (const std::string& g : job->scheduling_gates) names += (names.empty() ? "" : ", ") + g;
      gated.emplace_back(&s, "waiting for its scheduling gates to be removed (" + names + ")");
      continue;
    }
    // A namespace its ClusterQueue's namespaceSelector does not match: Kueue admits nothing of
    // it (what already runs stays).
    if (auto lq = queue_of_local.find(w.namespace_name + "/" + w.local_queue);
        phase != "Admitted" && lq != queue_of_local.end() &&
        !namespace_admitted(w.namespace_name, lq->second)) {
      gated.emplace_back(&s, "namespace " + w.namespace_name +
                                 " does not match the namespaceSelector of ClusterQueue " +
                                 lq->second +
                                 " (Kueue: \"Workload namespace doesn't match "
                                 "ClusterQueue selector\")");
      continue;
    }
    if (w.local_queue.empty()) {
      w.local_queue = kUnqueued;
      unqueued_ns.insert(w.namespace_name);
    } else if (volcano_queues.contains(w.local_queue)) {
      volcano_users.insert(w.namespace_name + "/" + w.local_queue);
    }
    w.created_ms = view.created_ms;
    if (const json& by = Member(status, "preemptedBy"); by.is_object()) {
      w.yields_to = Str(by, "workload");
      w.yield_until_ms = ParseTime(Str(by, "holdUntil"));
    }
    if (phase == "Admitted") {
      core::AdmittedWorkload a;
      a.workload = w;
      a.queue = Str(status, "queue");
      // Per pod set when they differ (status.podSetFlavors), else one for all
      // (status.flavors).
      const json& per_set = Member(status, "podSetFlavors");
      for (const json& flavors :
           per_set.is_array() ? per_set : json::array({Member(status, "flavors")})) {
        auto& names = a.flavors.emplace_back();
        for (int r = 0; r < core::kNumQuotaResources; ++r) {
          const std::string res(core::QuotaResourceName(static_cast<core::QuotaResource>(r)));
          names[r] = Str(flavors, res.c_str());
        }
      }
      a.priority = static_cast<int32_t>(Num(status, "priority"));
      a.admitted_ms = ParseTime(Str(status, "admittedAt"));
      bool bound = true;
      for (const json& pod : ListOf(Member(*array_status, "pods"))) {
        if (pod.is_null()) {
          a.placements.emplace_back();
          continue;
        }
        auto p = PlacementFromJson(state, pod);
        if (!p.ok() || !state.Allocate(*p).ok()) {
          bound = false;
          break;
        }
        a.placements.push_back(std::move(p).value());
      }
      if (bound && a.placements.size() == static_cast<size_t>(core::PodCount(w))) {
        running.push_back(std::move(a));
        running_obj.push_back(&s);
        continue;
      }
      // The binding no longer holds (a node left, a GPU's sharing changed): give back what was
      // taken and schedule the Job again.
      for (const std::optional<core::Placement>& p : a.placements) {
        if (p) (void)state.Release(*p);
      }
      std::string why = "its node or devices are gone";
      for (const json& pod : ListOf(Member(*array_status, "pods"))) {
        if (!pod.is_object()) continue;
        auto nr = not_ready.find(Str(pod, "node"));
        if (nr != not_ready.end()) why = nr->second;
      }
      writes.Event(s.obj(), {"Warning", "BindingLost", why + "; the job is scheduled again"});
    }
    pending.push_back(std::move(w));
    pending_obj.push_back(&s);
  }
  undecodable_reported_.swap(next_reported);  // every object has been read by now
  for (const std::string& ns : unqueued_ns) cfg.local_queues.push_back({ns, kUnqueued, kUnqueued});
  for (const std::string& key : volcano_users) {
    if (local_queue_keys.contains(key)) continue;  // a LocalQueue of that name comes first
    const std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
    cfg.local_queues.push_back({ns, name, name});
  }
  sum.pending = static_cast<int>(pending.size());

  // A waiting job's reason is rewritten when it changes, but once it waits with a reason of
  // its own (not one it was evicted for) at most once per options_.pending_refresh_ms: reasons that
  // name other work (the reservation's holder, the job that found no room for its shape) change
  // every cycle while a long queue drains, and rewriting every waiting job (and an event each)
  // every cycle would cost more than placing.
  // An array as this cycle advanced it (the tasks that ended counted), taken by the one write
  // that rewrites it this cycle (which then writes it instead); nullopt when not advanced.
  auto take_advanced = [&](const Stored& s) -> std::optional<json> {
    auto advanced = array_objs.find(&s);
    if (advanced == array_objs.end()) return std::nullopt;
    json obj = std::move(advanced->second);
    array_objs.erase(advanced);
    return obj;
  };
  // What a rewrite of a Job's status keeps of an array's progress: as advanced, or as stored.
  auto keep_progress = [&](const Stored& s, json* to) {
    const std::optional<json> advanced = take_advanced(s);
    api::KeepProgress(advanced ? (*advanced)["status"] : Member(s.obj(), "status"), to);
  };
  auto set_pending = [&](const Stored& s, const std::string& message) {
    const View& fields = job_status(s);
    if (fields.phase == "Pending") {
      if (fields.message != nullptr && *fields.message == message) return;
      // Only a reason of the same kind waits (not one after a preemption, say).
      const int64_t since = job_view(s).pending_since;
      if (since >= 0) {
        if (now_ms - since < options_.pending_refresh_ms || refresh_budget_milli_ < 1000) return;
        refresh_budget_milli_ -= 1000;
      }
    }
    json obj = s.obj();
    // A preempted job keeps saying why it was evicted while it waits again.
    json conditions = json::array();
    for (const json& c : ListOf(Member(Member(s.obj(), "status"), "conditions"))) {
      if (Str(c, "type") == "Evicted" || Str(c, "type") == "Preempted") conditions.push_back(c);
    }
    conditions.push_back(WorkloadCondition("QuotaReserved", false, "Pending", message, now_ms));
    obj["status"] = {{"phase", "Pending"}, {"message", message}, {"conditions", conditions}};
    // A preempted job keeps standing aside for its preemptor while that one holds the quota.
    if (const json& by = Member(Member(s.obj(), "status"), "preemptedBy"); by.is_object()) {
      obj["status"]["preemptedBy"] = by;
    }
    keep_progress(s, &obj["status"]);
    writes.Put(obj, s.version, CycleWrites::Note{"Normal", "Pending", message});
  };

  for (const Stored* s : suspended) {
    set_pending(*s, "suspended (spec.suspend is true): nothing runs until it is false");
  }
  for (const auto& [s, why] : gated) set_pending(*s, why);

  std::map<std::string, std::string> inactive;
  if (Status valid = DropInvalid(&cfg, &inactive, &problems); !valid.ok()) {
    sum.config_error = valid.message();
    for (const Stored* s : pending_obj) {
      set_pending(*s, "the queue configuration is invalid: " + valid.message());
    }
    writes.Flush();
    return sum;
  }
  auto cycle = core::AdmissionCycle::Create(cfg, options_.cycle);
  if (!cycle.ok()) return cycle.status();
  core::CycleResult result = cycle->Run(*placer_, state, pending, running, now_ms, held_);
  held_ = result.reservations;

  // Rendezvous ports held on each node by the distributed jobs running there: the master's and
  // each pod's own.
  std::map<std::string, std::set<int64_t>> ports_in_use;
  for (const Stored* r : running_obj) {
    const json& st = Member(r->obj(), "status");
    const json& rv = Member(st, "rendezvous");
    if (Member(rv, "masterPort").is_number_integer()) {
      ports_in_use[Str(rv, "masterNode")].insert(rv["masterPort"].get<int64_t>());
    }
    for (const json& pod : ListOf(Member(st, "pods"))) {
      if (Member(pod, "port").is_number_integer()) {
        ports_in_use[Str(pod, "node")].insert(pod["port"].get<int64_t>());
      }
    }
  }
  std::vector<uint8_t> admitted(pending.size(), 0);
  for (const core::Admission& a : result.admissions) {
    admitted[a.pending_index] = 1;
    const Stored& s = *pending_obj[a.pending_index];
    json pods = json::array();
    const core::GangPods members = core::GangOf(a.admitted.workload);
    for (size_t i = 0; i < a.admitted.placements.size(); ++i) {
      const std::optional<core::Placement>& p = a.admitted.placements[i];
      pods.push_back(p ? PodJson(state, PodName(members.Name(i)), *p, addresses) : json());
    }
    // status.flavors: per resource, the flavor of the first pod set charged one; with
    // status.podSetFlavors per pod set when the sets' flavors differ.
    json flavors = json::object(), set_flavors = json::array();
    for (const auto& names : a.admitted.flavors) {
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
    // A job of several pods meets at its first placed pod: that node's address and a port
    // reserved there, as the training operator and Volcano give MASTER_ADDR and MASTER_PORT.
    // Each pod also gets a port of its own on its node (a TensorFlow server's, say): the
    // first pod's is the master's.
    json rendezvous;
    const auto array = arrays.find(&s);
    if (a.admitted.placements.size() > 1 && array == arrays.end()) {
      for (json& pod : pods) {
        if (!pod.is_object()) continue;
        const std::string node = Str(pod, "node");
        std::set<int64_t>& used = ports_in_use[node];
        int64_t port = kFirstRendezvousPort;
        while (used.contains(port) && port < kFirstRendezvousPort + kRendezvousPorts) ++port;
        if (port >= kFirstRendezvousPort + kRendezvousPorts) {
          writes.Event(
              s.obj(),
              {"Warning", "NoRendezvousPort",
               "every rendezvous port of node " + node + " (" +
                   std::to_string(kFirstRendezvousPort) + "-" +
                   std::to_string(kFirstRendezvousPort + kRendezvousPorts - 1) + ") is held: pod " +
                   Str(pod, "name") + " gets no port" +
                   (rendezvous.is_null() ? ", and the pods no MASTER_ADDR or MASTER_PORT" : "")});
          continue;
        }
        used.insert(port);
        pod["port"] = port;
        if (!rendezvous.is_null()) continue;
        rendezvous = {{"masterNode", node},
                      {"masterAddr", Str(pod, "address").empty() ? node : Str(pod, "address")},
                      {"masterPort", port},
                      {"worldSize", a.admitted.placements.size()}};
      }
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
        {"admittedAt", FormatTime(now_ms)},
        {"pods", pods},
        {"conditions",
         {WorkloadCondition("QuotaReserved", true, "QuotaReserved",
                            "Quota reserved in queue " + a.admitted.queue, now_ms),
          WorkloadCondition("Admitted", true, "Admitted", "The workload is admitted", now_ms)}}};
    if (!uniform) obj["status"]["podSetFlavors"] = std::move(set_flavors);
    if (!rendezvous.is_null()) obj["status"]["rendezvous"] = std::move(rendezvous);
    if (array != arrays.end()) {
      keep_progress(s, &obj["status"]);
      api::AssignIndexes(array->second.first, array->second.second, &obj["status"]);
      sum.follow_up = true;
    }
    // Named as written (an array's pods by the index they run).
    std::vector<std::pair<size_t, const core::Placement*>> placed;
    for (size_t i = 0; i < a.admitted.placements.size(); ++i) {
      if (a.admitted.placements[i] && obj["status"]["pods"][i].is_object()) {
        placed.emplace_back(i, &*a.admitted.placements[i]);
      }
    }
    const std::string where = PlacedList(state, obj["status"]["pods"], placed);
    writes.Put(obj, s.version,
               CycleWrites::Note{"Normal", "Scheduled",
                                 a.admitted.placements.size() == 1 && a.admitted.placements[0]
                                     ? "Scheduled to " + Where(state, *a.admitted.placements[0])
                                     : "Scheduled " + where});
    plane_.metrics().ObserveAdmission(
        a.admitted.queue,
        std::max<int64_t>(0, now_ms - std::max<int64_t>(a.admitted.workload.created_ms, 0)) /
            1000.0);
    ++sum.admitted;
  }
  std::set<std::string, std::less<>> released;  // "ns/name" of jobs that stop holding now
  for (const core::Preemption& p : result.preemptions) {
    const Stored& s = *running_obj[p.running_index];
    released.insert(NamespaceOf(s.obj()) + "/" + NameOf(s.obj()));
    json obj = s.obj();
    const std::string cause(core::PreemptionCauseName(p.cause));
    // Kueue's conditions: evicted by preemption (with the preemption's reason), or evicted
    // because its ClusterQueue was stopped.
    const bool stopped = p.cause == core::PreemptionCause::kClusterQueueStopped;
    json conditions = {
        WorkloadCondition("Evicted", true, stopped ? cause : "Preempted", p.reason, now_ms)};
    if (!stopped)
      conditions.push_back(WorkloadCondition("Preempted", true, cause, p.reason, now_ms));
    conditions.push_back(
        WorkloadCondition("QuotaReserved", false, stopped ? cause : "Preempted", p.reason, now_ms));
    conditions.push_back(WorkloadCondition("Admitted", false, "NoReservation", p.reason, now_ms));
    obj["status"] = {{"phase", "Pending"}, {"message", p.reason}, {"conditions", conditions}};
    if (!stopped) {
      obj["status"]["preemptedBy"] = {
          {"workload", p.preemptor},
          {"holdUntil", FormatTime(now_ms + options_.preemption_hold_ms)}};
    }
    keep_progress(s, &obj["status"]);  // an array keeps what it has done
    sum.follow_up = true;
    writes.Put(obj, s.version,
               CycleWrites::Note{"Warning", stopped ? "Evicted" : "Preempted",
                                 p.reason + " [" + cause + "]"});
    ++sum.preempted;
  }
  // Members of running gangs placed after admission, and why the others still wait.
  std::map<size_t,
           std::pair<std::vector<const core::Growth*>, std::vector<const core::WaitingPod*>>>
      grown;
  for (const core::Growth& g : result.growths) grown[g.running_index].first.push_back(&g);
  for (const core::WaitingPod& w : result.waiting) grown[w.running_index].second.push_back(&w);
  for (const auto& [ri, change] : grown) {
    const Stored& s = *running_obj[ri];
    const core::GangPods pods = core::GangOf(running[ri].workload);
    const auto array = arrays.find(&s);
    // Why the others wait: a run of pods with one reason is one entry, named by its first pod,
    // with its `count` (a large job's thousands of alike pods wait for one reason).
    json waiting;
    size_t slots = 0;
    for (const core::WaitingPod* w : change.second) {
      // An array's waiting slots have no index yet: they are named as such.
      const std::string name = array == arrays.end()
                                   ? PodName(pods.Name(w->pod_index))
                                   : array->second.second + "-pending-" + std::to_string(slots);
      slots += w->count;
      json& entry = waiting.emplace_back(json{{"name", name}, {"reason", w->reason}});
      if (w->count > 1) entry["count"] = w->count;
    }
    const bool advancing = array_objs.count(&s) != 0;
    if (change.first.empty() && !advancing &&
        Member(Member(s.obj(), "status"), "waitingPods") == waiting) {
      continue;
    }
    std::optional<json> advanced = take_advanced(s);
    json obj = advanced ? std::move(*advanced) : s.obj();
    json& status = obj["status"];
    if (!change.first.empty()) sum.follow_up = true;
    for (const core::Growth* g : change.first) {
      status["pods"][g->pod_index] =
          PodJson(state, PodName(pods.Name(g->pod_index)), g->placement, addresses);
      status["pods"][g->pod_index]["boundAt"] = FormatTime(now_ms);
    }
    if (array != arrays.end()) {
      api::AssignIndexes(array->second.first, array->second.second, &status);
    }
    std::vector<std::pair<size_t, const core::Placement*>> placed;
    for (const core::Growth* g : change.first) {
      if (status["pods"][g->pod_index].is_object())
        placed.emplace_back(g->pod_index, &g->placement);
    }
    const std::string where = PlacedList(state, status["pods"], placed);
    if (change.first.empty() && Member(Member(s.obj(), "status"), "waitingPods") == waiting &&
        obj == s.obj())
      continue;
    if (waiting.is_null()) {
      status.erase("waitingPods");
    } else {
      status["waitingPods"] = waiting;
    }
    // A write that lost to an agent's report is made again next cycle: the event with it.
    writes.Put(obj, s.version,
               where.empty()
                   ? std::nullopt
                   : std::optional(CycleWrites::Note{"Normal", "Scheduled", "Scheduled " + where}));
  }
  // The decisions reach the store (and the agents) now; the rest of the cycle after them.
  writes.Flush();
  // The waiting jobs' reasons, the longest unrefreshed first (a refresh spends the budget).
  std::vector<size_t> waiting_order;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!admitted[i]) waiting_order.push_back(i);
  }
  std::stable_sort(waiting_order.begin(), waiting_order.end(), [&](size_t a, size_t b) {
    return job_view(*pending_obj[a]).pending_since < job_view(*pending_obj[b]).pending_since;
  });
  for (size_t i : waiting_order) {
    std::string reason = result.pending_reasons[i];
    // "queue X (of local queue ns/l) does not exist" for a queue dropped as invalid.
    for (const auto& [name, why] : inactive) {
      if (reason.rfind("queue " + name + " (of local queue", 0) == 0) {
        reason = "queue " + name + " is inactive: " + why;
      }
    }
    set_pending(*pending_obj[i], reason);
  }
  // Arrays whose ended tasks were counted and that nothing else rewrote this cycle.
  for (auto& [s, obj] : array_objs) writes.Put(obj, s->version);
  // Each Queue says whether it is active, and why not.
  for (const Stored& s : queues) {
    auto it = inactive.find(NameOf(s.obj()));
    json status = {{"active", it == inactive.end()}};
    if (it != inactive.end()) status["message"] = it->second;
    if (Member(s.obj(), "status") == status) continue;
    json obj = s.obj();
    obj["status"] = status;
    writes.Put(obj, s.version);
  }
  sum.inactive_queues = static_cast<int>(inactive.size());

  CycleGauges gauges = GaugesAfter(std::move(state), result, running, cfg);
  gauges.undecodable = std::move(undecodable);
  plane_.metrics().SetCycleGauges(std::move(gauges));

  // The accountant reads the Jobs that hold devices, and each ended Job once (the first cycle
  // that sees its end closes its segments at the time it ended); all ended Jobs again after
  // the accountant failed.
  std::vector<Stored> accounted;
  std::vector<View*> ends;
  for (const Stored& s : jobs) {
    View& fields = job_status(s);
    if (fields.phase == "Admitted") {
      accounted.push_back(s);
    } else if (fields.ended && (!fields.accounted || !ends_accounted_)) {
      accounted.push_back(s);
      ends.push_back(&fields);
    }
  }
  auto idle = plane_.accounting().Observe(now_ms, accounted, nodes, released);
  ends_accounted_ = idle.ok();
  if (!idle.ok()) return idle.status();
  for (View* v : ends) v->accounted = true;
  if (MarkIdle(now_ms, *idle, cfg, running, running_obj, released, writes)) sum.follow_up = true;
  writes.Flush();
  return sum;
}

bool SchedulingLoop::MarkIdle(int64_t now_ms, const std::vector<core::IdlePod>& idle,
                              const core::QueueConfig& cfg,
                              const std::vector<core::AdmittedWorkload>& running,
                              const std::vector<const StoredJson*>& running_obj,
                              const std::set<std::string, std::less<>>& released,
                              CycleWrites& writes) {
  const AccountingOptions opts = plane_.accounting().options();
  bool reclaimed = false;
  std::map<std::string, std::vector<const core::IdlePod*>, std::less<>> by_job;
  for (const core::IdlePod& p : idle) by_job[p.ns + "/" + p.job].push_back(&p);
  std::map<std::string_view, const core::IdleReclaimPolicy*> reclaim;
  for (const core::QueueSpec& q : cfg.queues) reclaim[q.name] = &q.idle_reclaim;
  const std::string below = "below " + std::to_string(opts.idle_threshold_pct) + "% utilisation";

  for (size_t i = 0; i < running.size(); ++i) {
    const StoredJson& s = *running_obj[i];
    const std::string key = NamespaceOf(s.obj()) + "/" + NameOf(s.obj());
    if (released.contains(key)) continue;
    const json& status = Member(s.obj(), "status");
    auto it = by_job.find(key);
    if (it == by_job.end()) {
      if (!status.contains("idle")) continue;
      json obj = s.obj();
      obj["status"].erase("idle");
      writes.Put(obj, s.version, CycleWrites::Note{"Normal", "Busy", "its GPUs are in use again"});
      continue;
    }
    // Pods holding GPUs; since when the first idle pod, and all of them, have been idle.
    int gpu_pods = 0;
    for (const json& pod : ListOf(Member(status, "pods"))) {
      if (!ListOf(Member(pod, "devices")).empty()) ++gpu_pods;
    }
    int64_t all_since = 0;
    int64_t first_since = std::numeric_limits<int64_t>::max();
    json names = json::array();
    std::string list;
    for (const core::IdlePod* p : it->second) {
      all_since = std::max(all_since, p->idle_since_ms);
      first_since = std::min(first_since, p->idle_since_ms);
      names.push_back(p->pod);
      list += (list.empty() ? "" : ", ") + p->pod;
    }
    const std::string message = "pod" + std::string(names.size() == 1 ? " " : "s ") + list +
                                " held GPUs " + below + " since " + FormatTime(first_since);
    const core::AdmittedWorkload& a = running[i];
    auto policy = reclaim.find(a.queue);
    if (policy != reclaim.end() && policy->second->after_ms > 0 &&
        gpu_pods == static_cast<int>(it->second.size()) &&
        now_ms - all_since >= policy->second->after_ms &&
        (!policy->second->max_priority || a.priority <= *policy->second->max_priority)) {
      const std::string why = "reclaimed by queue " + a.queue + ": its GPUs stayed " + below +
                              " since " + FormatTime(all_since) + " (idleReclaim.after " +
                              api::FormatDurationMs(policy->second->after_ms) + ")";
      json obj = s.obj();
      obj["status"]["phase"] = "Failed";
      obj["status"]["message"] = why;
      obj["status"]["finishedAt"] = FormatTime(now_ms);
      obj["status"].erase("idle");
      writes.Put(obj, s.version, CycleWrites::Note{"Warning", "IdleReclaimed", why});
      reclaimed = true;
      continue;
    }
    json mark = {{"since", FormatTime(first_since)}, {"pods", names}, {"message", message}};
    if (Member(status, "idle") == mark) continue;
    json obj = s.obj();
    obj["status"]["idle"] = mark;
    writes.Put(obj, s.version,
               status.contains("idle")
                   ? std::nullopt
                   : std::optional(CycleWrites::Note{"Warning", "Idle", message}));
  }
  return reclaimed;
}

namespace {

// Whether a change can change what a cycle decides. Events (the loop's own among them), tokens
// and node leases cannot: they do not wake the loop, which still runs once a period.
bool Wakes(const store::Change& c) {
  const std::string& kind = c.object.key.kind;
  return kind != "Event" && kind != "Token" && kind != "Lease";
}

}  // namespace

bool SchedulingLoop::WaitForChange(std::unique_lock<std::mutex>& lock, int64_t seen,
                                   std::chrono::steady_clock::time_point deadline) {
  while (!stop_) {
    lock.unlock();
    auto changes = plane_.feed().After(seen, 1024);
    bool matters = !changes.ok();  // compacted away: run
    for (const store::Change& c : changes.ok() ? *changes : std::vector<store::Change>()) {
      seen = c.revision;
      // The revisions of a cycle's own writes are in ascending order.
      matters = matters ||
                (Wakes(c) && (follow_up_ || !std::binary_search(own_revisions_.begin(),
                                                                own_revisions_.end(), c.revision)));
    }
    std::optional<uint64_t> sub;
    if (!matters) {
      sub = plane_.feed().Subscribe(seen, [this] {
        std::lock_guard<std::mutex> l(mu_);
        dirty_ = true;
        wake_.notify_all();
      });
    }
    lock.lock();
    if (matters) return true;
    if (!sub) continue;  // a change landed meanwhile: read it
    const bool woke = wake_.wait_until(lock, deadline, [this] { return stop_ || dirty_; });
    dirty_ = false;
    lock.unlock();
    plane_.feed().Unsubscribe(*sub);
    lock.lock();
    if (!woke) return false;
  }
  return false;
}

void SchedulingLoop::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      const int64_t head = plane_.feed().head();
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.period_ms);
      lock.unlock();
      const auto started = std::chrono::steady_clock::now();
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      (void)RunOnce(now);
      ++cycles_;
      const auto took = std::chrono::steady_clock::now() - started;
      lock.lock();
      // A gap as long as the cycle (within the options' bounds), however fast changes come;
      // then the next change after what this cycle saw that matters (its own writes only when
      // it asked to be followed), at the latest after the period.
      const auto gap = std::clamp<std::chrono::steady_clock::duration>(
          took, std::chrono::milliseconds(options_.min_gap_ms),
          std::chrono::milliseconds(options_.max_gap_ms));
      wake_.wait_for(lock, gap, [this] { return stop_; });
      WaitForChange(lock, head, deadline);
    }
  });
}

void SchedulingLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessera::server
