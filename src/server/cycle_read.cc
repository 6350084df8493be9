#include "server/cycle_read.h"

#include <algorithm>

#include "api/json_read.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/status_schema.h"
#include "api/time.h"
#include "core/workload.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

// Whether the object's annotation `key` is "true" (set by the manifest translation).
bool Annotated(const json& obj, const char* key) {
  return Str(Member(Member(obj, "metadata"), "annotations"), key) == "true";
}

// A pod of a Job's status.pods as the placement it holds in `s`.
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

// What an admitted Job's status says it was admitted with, its placements not yet read.
core::AdmittedWorkload AdmittedFrom(const core::Workload& w, const json& status) {
  core::AdmittedWorkload a;
  a.workload = w;
  a.queue = Str(status, "queue");
  // Per pod set when they differ (status.podSetFlavors), else one for all (status.flavors).
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
  return a;
}

}  // namespace

// One read: the snapshot being filled, the cycle's writes, and this read's views.
class CycleReader::Reading {
 public:
  Reading(CycleReader& reader, int64_t now_ms, CycleWrites& writes)
      : r_(reader), now_ms_(now_ms), writes_(writes) {}

  CycleSnapshot Run() {
    Cluster();
    Queues();
    snap_.jobs = List("Job");
    r_.views_.swap(views_);  // every kind has been listed by now
    Jobs();
    r_.reported_.swap(reported_);  // every object has been read by now
    for (const std::string& ns : unqueued_ns_) {
      snap_.cfg.local_queues.push_back({ns, kUnqueued, kUnqueued});
    }
    for (const std::string& key : volcano_users_) {
      if (local_queue_keys_.contains(key)) continue;  // a LocalQueue of that name comes first
      const std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
      snap_.cfg.local_queues.push_back({ns, name, name});
    }
    return std::move(snap_);
  }

 private:
  // The stored objects of a kind whose envelope and status can be read; the others are
  // skipped.
  std::vector<StoredJson> List(const char* kind);
  // Each readable object of `kind` that `decode` takes, handed to `use` with its stored form;
  // the others skipped.
  template <typename Decode, typename Use>
  void EachDecoded(const char* kind, Decode decode, Use use) {
    for (const StoredJson& s : List(kind)) {
      auto v = decode(s.obj());
      if (v.ok()) {
        use(s, std::move(v).value());
      } else {
        Skip(s, kind, v.status());
      }
    }
  }
  // Skips an object: named in the snapshot and, once per version, in a Warning event.
  void Skip(const StoredJson& s, std::string_view kind, const Status& why);
  // The view of a listed object: the last read's while its version stays, or a new one.
  ObjectView& ViewOf(const StoredJson& o);
  // A listed Job's view with its spec decoded, and with its status read.
  ObjectView& JobView(const StoredJson& s);
  ObjectView& JobStatus(const StoredJson& s);

  void Cluster();
  // Why a bound pod's devices no longer hold for a quarantined GPU ("" when they do).
  std::string QuarantinedUnder(const json& pod) const;
  void ReadyNode(const StoredJson& s, const std::vector<api::GpuSharingConfigSpec>& sharing,
                 const std::map<std::string, const json*>& lease_of,
                 std::map<std::string, std::vector<std::string>>* invalid_sharing);
  void SharingStatus(const StoredJson& s,
                     const std::map<std::string, std::vector<std::string>>& invalid_sharing);
  void Queues();
  void CohortsAndQueues();
  bool NamespaceAdmitted(const std::string& ns, const std::string& queue);
  void Jobs();
  // A Job that is due to end or be deleted now (true: written, nothing more of it this cycle).
  bool Due(size_t i);
  // The workload of a Job not ended, or nullopt when it is skipped or held back.
  std::optional<core::Workload> WorkloadOf(size_t i, const api::JobSpec& job, const json** status);
  void Place(size_t i, core::Workload w, const json& array_status);

  CycleReader& r_;
  const int64_t now_ms_;
  CycleWrites& writes_;
  CycleSnapshot snap_;
  std::unordered_map<const json*, std::shared_ptr<ObjectView>> views_;  // this read's objects
  std::map<std::string, int64_t> reported_;          // and those reported undecodable
  std::map<std::string, api::PodGroupSpec> groups_;  // "ns/name"
  std::set<std::string> volcano_queues_;
  std::map<std::string, api::LabelSelector> namespace_selectors_;  // by Queue
  std::map<std::string, json> namespace_labels_;
  std::map<std::string, std::string> queue_of_local_;                     // "ns/name" -> Queue
  std::set<std::string> local_queue_keys_, volcano_users_, unqueued_ns_;  // "ns/name"; ns
};

CycleSnapshot CycleReader::Read(int64_t now_ms, CycleWrites& writes) {
  return Reading(*this, now_ms, writes).Run();
}

void CycleReader::Reading::Skip(const StoredJson& s, std::string_view kind, const Status& why) {
  const std::string ns = NamespaceOf(s.obj()), name = NameOf(s.obj());
  snap_.undecodable.push_back({std::string(kind), ns, name, why.message()});
  const std::string key = std::string(kind) + "/" + ns + "/" + name;
  reported_[key] = s.version;
  if (auto it = r_.reported_.find(key); it != r_.reported_.end() && it->second == s.version) {
    return;
  }
  if (api::ValidateName(name, false, "").ok() &&
      (ns.empty() || api::ValidateName(ns, true, "").ok())) {
    json about = {{"kind", kind}, {"metadata", {{"name", name}, {"namespace", ns}}}};
    writes_.Event(about,
                  {"Warning", "Undecodable",
                   "skipped by the scheduler until it is fixed or deleted: " + why.message()});
  }
}

ObjectView& CycleReader::Reading::ViewOf(const StoredJson& o) {
  std::shared_ptr<ObjectView>& v = views_[o.doc.get()];
  if (v) return *v;
  if (auto last = r_.views_.find(o.doc.get()); last != r_.views_.end()) {
    v = std::move(last->second);
  } else {
    v = std::make_shared<ObjectView>();
    v->doc = o.doc;
  }
  return *v;
}

std::vector<StoredJson> CycleReader::Reading::List(const char* kind) {
  auto list = r_.plane_.objects().List(kind);
  std::vector<StoredJson> out;
  if (!list.ok()) {
    snap_.problems.push_back(list.status().message());
    return out;
  }
  out.reserve(list->size());
  for (StoredJson& o : *list) {
    ObjectView& v = ViewOf(o);
    if (!v.readable) {
      Status ok = api::ValidateEnvelope(o.obj());
      if (ok.ok() && Str(o.obj(), "kind") != kind)
        ok = InvalidArgument("kind: not " + std::string(kind));
      if (ok.ok()) ok = api::ValidateStatus(kind, Member(o.obj(), "status"));
      v.readable = std::move(ok);
    }
    if (!v.readable->ok()) {
      Skip(o, kind, *v.readable);
      continue;
    }
    out.push_back(std::move(o));
  }
  return out;
}

ObjectView& CycleReader::Reading::JobView(const StoredJson& s) {
  ObjectView& v = *r_.views_.at(s.doc.get());
  if (v.job) return v;
  v.job = api::DecodeJob(s.obj());
  v.created_ms = ParseTime(Str(Member(s.obj(), "metadata"), "creationTimestamp"));
  for (const json& c : ListOf(Member(Member(s.obj(), "status"), "conditions"))) {
    if (Str(c, "type") != "QuotaReserved" || Str(c, "reason") != "Pending") continue;
    v.pending_since = std::max(v.pending_since, ParseTime(Str(c, "lastTransitionTime")));
  }
  return v;
}

ObjectView& CycleReader::Reading::JobStatus(const StoredJson& s) {
  ObjectView& v = *r_.views_.at(s.doc.get());
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
  const int64_t ttl_ms = ttl.is_number_integer() ? ttl.get<int64_t>() * 1000 : r_.finished_ttl_ms_;
  if (v.ended && ttl_ms >= 0) {
    const int64_t finished = ParseTime(Str(status, "finishedAt"));
    if (finished > 0) v.delete_at_ms = finished + ttl_ms;
  }
  return v;
}

// The cluster: nodes with their GPUs' sharing.
void CycleReader::Reading::Cluster() {
  std::vector<api::GpuSharingConfigSpec> sharing;
  std::vector<const StoredJson*> sharing_obj;
  const std::vector<StoredJson> sharing_configs = List("GpuSharingConfig");
  for (const StoredJson& s : sharing_configs) {
    if (auto c = api::DecodeGpuSharingConfig(s.obj()); c.ok()) {
      sharing.push_back(std::move(c).value());
      sharing_obj.push_back(&s);
    } else {
      Skip(s, "GpuSharingConfig", c.status());
    }
  }
  snap_.nodes = List("Node");
  snap_.quarantine = r_.quarantine_.Run(snap_.nodes, now_ms_, writes_);
  std::map<std::string, const json*> lease_of;  // node -> its Lease
  const std::vector<StoredJson> leases = List("Lease");
  for (const StoredJson& l : leases) lease_of[NameOf(l.obj())] = &l.obj();
  std::map<std::string, std::vector<std::string>> invalid_sharing;
  for (const StoredJson& s : snap_.nodes) ReadyNode(s, sharing, lease_of, &invalid_sharing);
  for (const StoredJson* s : sharing_obj) SharingStatus(*s, invalid_sharing);
}

// A node whose agent missed its heartbeats for longer than the grace period is NotReady: it
// takes no work, and what was bound to it is scheduled again (gangs whole).
void CycleReader::Reading::ReadyNode(
    const StoredJson& s, const std::vector<api::GpuSharingConfigSpec>& sharing,
    const std::map<std::string, const json*>& lease_of,
    std::map<std::string, std::vector<std::string>>* invalid_sharing) {
  if (const std::string a = Str(Member(s.obj(), "status"), "address"); !a.empty()) {
    snap_.addresses[NameOf(s.obj())] = a;
  }
  auto node = api::DecodeNode(s.obj());
  if (!node.ok()) {
    Skip(s, "Node", node.status());
    return;
  }
  if (auto reboot = snap_.quarantine.reboot.find(node->name);
      reboot != snap_.quarantine.reboot.end()) {
    snap_.not_ready[node->name] = reboot->second;
    return;
  }
  if (auto q = snap_.quarantine.gpus.find(node->name); q != snap_.quarantine.gpus.end()) {
    for (core::GpuDevice& d : node->gpus) {
      if (q->second.contains(d.index)) d.health = core::GpuHealth::kCordoned;
    }
  }
  const json& node_status = Member(s.obj(), "status");
  const auto lease = lease_of.find(node->name);
  const json* stored_lease = lease == lease_of.end() ? nullptr : lease->second;
  // What the node and its Lease say (a Node written with a malformed heartbeat is NotReady),
  // and when it last reported, renewals held in memory included.
  const std::string beat = api::NodeHeartbeat(s.obj(), stored_lease ? *stored_lease : json());
  const int64_t at = r_.plane_.leases().LastBeat(s.obj(), stored_lease);
  if ((!beat.empty() || at >= 0) && r_.node_grace_ms_ > 0) {
    // Never before the node's agent has surely stopped its pods (fenceSeconds), with a margin.
    const json& fence = Member(node_status, "fenceSeconds");
    const int64_t grace =
        std::max(r_.node_grace_ms_,
                 fence.is_number_integer() ? fence.get<int64_t>() * 1000 + kFenceMarginMs : 0);
    if (at < 0 || now_ms_ - at > grace) {
      snap_.not_ready[node->name] = "node " + node->name + " is NotReady: no heartbeat since " +
                                    (at >= 0 ? FormatTime(at) : beat);
      return;
    }
  }
  api::ApplySharing(sharing, &*node, invalid_sharing);
  if (auto id = snap_.state.AddNode(std::move(node).value()); !id.ok()) {
    snap_.problems.push_back(id.status().message());
  }
}

// A config valid when applied may not suit the cards it reaches (a node joined or changed): its
// status says where and why, and a Warning event says it once per change.
void CycleReader::Reading::SharingStatus(
    const StoredJson& s, const std::map<std::string, std::vector<std::string>>& invalid_sharing) {
  const std::string name = NameOf(s.obj());
  const auto it = invalid_sharing.find(name);
  json status = json::object();
  if (it != invalid_sharing.end()) {
    status = {{"phase", "Invalid"}, {"problems", it->second}};
    for (const std::string& p : it->second) {
      snap_.problems.push_back("GpuSharingConfig " + name + ": " + p);
    }
  } else {
    status = {{"phase", "Applied"}};
  }
  if (Member(s.obj(), "status") == status) return;
  json obj = s.obj();
  obj["status"] = status;
  std::optional<CycleWrites::Note> note;
  if (it != invalid_sharing.end()) {
    std::string message;
    for (const std::string& p : it->second) message += (message.empty() ? "" : "; ") + p;
    note = CycleWrites::Note{"Warning", "InvalidSharingConfig", message};
  }
  writes_.Put(obj, s.version, std::move(note));
}

// The flavors, cohorts and queues.
void CycleReader::Reading::CohortsAndQueues() {
  core::QueueConfig& cfg = snap_.cfg;
  EachDecoded(
      "ResourceFlavor", api::DecodeResourceFlavor,
      [&](const StoredJson&, core::ResourceFlavor f) { cfg.flavors.push_back(std::move(f)); });
  EachDecoded("Cohort", api::DecodeCohort, [&](const StoredJson& s, core::CohortSpec v) {
    // The cohort of Volcano's queues lends what the cluster has (Volcano's proportion plugin
    // divides the cluster's capacity among queues by weight): its quota is the capacity of the
    // ready nodes, this cycle.
    if (Annotated(s.obj(), "tessera.io/volcano-cohort")) {
      core::QuotaVector capacity = {0, 0, 0};
      for (uint32_t n = 0; n < snap_.state.size(); ++n) {
        const core::NodeRecord& node = snap_.state.node(core::NodeId(n));
        capacity[static_cast<int>(core::QuotaResource::kGpu)] += node.gpu_capacity_milli;
        capacity[static_cast<int>(core::QuotaResource::kCpu)] += node.allocatable.cpu_milli;
        capacity[static_cast<int>(core::QuotaResource::kMemory)] += node.allocatable.memory_mib;
      }
      for (core::ResourceGroup& g : v.resource_groups) {
        for (core::FlavorQuotas& f : g.flavors) {
          for (core::ResourceQuota& q : f.resources) {
            q.nominal = capacity[static_cast<int>(q.resource)];
          }
        }
      }
    }
    cfg.cohorts.push_back(std::move(v));
  });
  snap_.queues = List("Queue");
  // Volcano's queues are open to every namespace: a Job naming one uses it directly.
  for (const StoredJson& s : snap_.queues) {
    if (auto v = api::DecodeQueue(s.obj()); v.ok()) {
      cfg.queues.push_back(*v);
      if (Annotated(s.obj(), "tessera.io/volcano-queue")) volcano_queues_.insert(v->name);
    } else {
      Skip(s, "Queue", v.status());
    }
  }
  // Kueue's namespaceSelector: the namespaces whose workloads each Queue admits, by the labels
  // of the namespaces as written (and the name label every namespace has).
  for (const StoredJson& s : snap_.queues) {
    const json& sel = Member(Member(s.obj(), "spec"), "namespaceSelector");
    if (sel.is_null()) continue;
    if (auto parsed = api::LabelSelector::FromJson(sel, "spec.namespaceSelector"); parsed.ok()) {
      namespace_selectors_.emplace(NameOf(s.obj()), std::move(parsed).value());
    }
  }
  if (!namespace_selectors_.empty()) {
    for (const StoredJson& s : List("Namespace")) {
      namespace_labels_[NameOf(s.obj())] = Member(Member(s.obj(), "metadata"), "labels");
    }
  }
}

bool CycleReader::Reading::NamespaceAdmitted(const std::string& ns, const std::string& queue) {
  auto it = namespace_selectors_.find(queue);
  if (it == namespace_selectors_.end()) return true;
  json labels = namespace_labels_[ns];
  if (!labels.is_object()) labels = json::object();
  labels["kubernetes.io/metadata.name"] = ns;
  return it->second.Matches(labels);
}

// The queue configuration, and the pod groups Jobs name.
void CycleReader::Reading::Queues() {
  CohortsAndQueues();
  core::QueueConfig& cfg = snap_.cfg;
  EachDecoded("LocalQueue", api::DecodeLocalQueue, [&](const StoredJson&, core::LocalQueueSpec v) {
    local_queue_keys_.insert(v.namespace_name + "/" + v.name);
    queue_of_local_[v.namespace_name + "/" + v.name] = v.queue;
    cfg.local_queues.push_back(std::move(v));
  });
  EachDecoded("PriorityClass", api::DecodePriorityClass,
              [&](const StoredJson&, core::PriorityClassSpec v) {
                cfg.priority_classes.push_back(std::move(v));
              });
  EachDecoded(
      "NamespaceQuota", api::DecodeNamespaceQuota, [&](const StoredJson&, core::NamespaceQuota v) {
        // Two quotas of one namespace: the tighter limit per resource holds.
        auto same = std::find_if(
            cfg.namespace_quotas.begin(), cfg.namespace_quotas.end(),
            [&](const core::NamespaceQuota& q) { return q.namespace_name == v.namespace_name; });
        if (same == cfg.namespace_quotas.end()) {
          cfg.namespace_quotas.push_back(std::move(v));
          return;
        }
        for (int r = 0; r < core::kNumQuotaResources; ++r) {
          if (v.hard[r]) {
            same->hard[r] = same->hard[r] ? std::min(*same->hard[r], *v.hard[r]) : *v.hard[r];
          }
        }
      });
  core::AddImplicitCohorts(&cfg);
  // Work outside queues: no quota, and kube-scheduler's default preemption by priority class.
  core::QueueSpec unqueued;
  unqueued.name = kUnqueued;
  unqueued.preemption.style = core::PreemptionStyle::kKubeScheduler;
  unqueued.preemption.within_queue = core::WithinQueuePreemption::kLowerPriority;
  cfg.queues.push_back(unqueued);
  EachDecoded("PodGroup", api::DecodePodGroup, [&](const StoredJson&, api::PodGroupSpec g) {
    const std::string key = g.namespace_name + "/" + g.name;
    groups_[key] = std::move(g);
  });
}

// The work: bound Jobs hold their devices; the others are pending.
void CycleReader::Reading::Jobs() {
  snap_.views.reserve(snap_.jobs.size());
  for (const StoredJson& s : snap_.jobs) {
    ObjectView& v = JobStatus(s);
    snap_.views.push_back(&v);
    if (v.phase == "Admitted") {
      // MPI launchers' exec tokens live as long as their Job runs.
      snap_.admitted_uids.insert(NamespaceOf(s.obj()) + "/" + NameOf(s.obj()) + "/" +
                                 Str(Member(s.obj(), "metadata"), "uid"));
    }
  }
  for (size_t i = 0; i < snap_.jobs.size(); ++i) {
    if (Due(i)) continue;
    const StoredJson& s = snap_.jobs[i];
    const ObjectView& view = JobView(s);
    const Result<api::JobSpec>& job = *view.job;
    if (!job.ok()) {
      Skip(s, "Job", job.status());
      continue;
    }
    const json* array_status = nullptr;
    std::optional<core::Workload> w = WorkloadOf(i, *job, &array_status);
    if (!w) continue;
    w->created_ms = view.created_ms;
    Place(i, std::move(*w), *array_status);
  }
}

bool CycleReader::Reading::Due(size_t i) {
  const StoredJson& s = snap_.jobs[i];
  const ObjectView& fields = *snap_.views[i];
  // Finished work holds nothing and waits for nothing; with ttlSecondsAfterFinished (or the
  // server's default for it) it is deleted that long after it ended, as Kubernetes' TTL
  // controller does.
  if (fields.ended) {
    if (fields.delete_at_ms > 0 && now_ms_ >= fields.delete_at_ms) {
      writes_.Delete(s.obj(), s.version);
    }
    return true;
  }
  // activeDeadlineSeconds: a Job active longer than this since it was admitted fails
  // (DeadlineExceeded), and its pods are stopped.
  const json& status = Member(s.obj(), "status");
  const json& deadline = Member(Member(s.obj(), "spec"), "activeDeadlineSeconds");
  if (fields.phase != "Admitted" || !deadline.is_number_integer()) return false;
  const int64_t admitted = ParseTime(Str(status, "admittedAt"));
  if (admitted <= 0 || now_ms_ < admitted + deadline.get<int64_t>() * 1000) return false;
  json obj = s.obj();
  const std::string message =
      "DeadlineExceeded: the job was active longer than its "
      "activeDeadlineSeconds (" +
      std::to_string(deadline.get<int64_t>()) + ")";
  // As Kubernetes' Job controller: the pods still active are stopped and count as failed (an
  // array counts them itself; a Job's view reads them Failed).
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
  obj["status"]["finishedAt"] = FormatTime(now_ms_);
  writes_.Put(obj, s.version, CycleWrites::Note{"Warning", "DeadlineExceeded", message});
  snap_.follow_up = true;
  return true;
}

std::optional<core::Workload> CycleReader::Reading::WorkloadOf(size_t i, const api::JobSpec& job,
                                                               const json** array_status) {
  const StoredJson& s = snap_.jobs[i];
  const std::string& phase = snap_.views[i]->phase;
  const json& status = Member(s.obj(), "status");
  core::Workload w = job.workload;
  // An array's status as this cycle leaves it: finished tasks counted, their slots emptied.
  *array_status = &status;
  if (job.array) {
    snap_.arrays[i] = {*job.array, job.tasks[0].name};
    if (phase == "Admitted") {
      json obj = s.obj();
      const api::ArrayStep step = api::AdvanceArray(*job.array, &obj["status"]);
      if (!step.outcome.empty()) {
        const bool ok = step.outcome == "Succeeded";
        obj["status"]["phase"] = step.outcome;
        obj["status"]["message"] = step.message;
        obj["status"]["finishedAt"] = FormatTime(now_ms_);
        if (!ok) obj["status"]["reason"] = step.reason;
        writes_.Put(obj, s.version,
                    CycleWrites::Note{ok ? "Normal" : "Warning", ok ? "Completed" : step.reason,
                                      step.message});
        snap_.follow_up = true;
        return std::nullopt;
      }
      if (step.changed) {
        *array_status = &(snap_.advanced[i] = std::move(obj))["status"];
        snap_.follow_up = true;
      }
      w.pod_sets[0].count = static_cast<int32_t>(ListOf(Member(**array_status, "pods")).size());
    } else if (w.min_member == 1) {
      // Admitted with its first task: the others are placed, and charged, one by one as they
      // find room and quota (a gang's growth), from the next cycle on.
      w.pod_sets[0].count = 1;
    } else {
      w.pod_sets[0].count =
          std::clamp(api::IndexesToStart(*job.array, status), 1, job.array->parallelism);
    }
  }
  if (!job.pod_group.empty()) {
    auto g = groups_.find(w.namespace_name + "/" + job.pod_group);
    if (g != groups_.end()) {
      if (w.min_member == 0) w.min_member = std::min(g->second.min_member, core::PodCount(w));
      // Volcano's minTaskMember: each named task's pods that must be placed with the gang (a
      // task's own minimum, where it has one, stands).
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
  // spec.suspend: of a queued Job, the queue's own switch (Kueue's: admission sets it to false);
  // of any other Job, Kubernetes' (nothing runs while it is true; a running Job stops).
  if (job.suspend && w.local_queue.empty()) {
    snap_.suspended.push_back(i);
    return std::nullopt;
  }
  // Kubernetes' scheduling gates hold a Job that is not yet placed until they are removed.
  if (!job.scheduling_gates.empty() && phase != "Admitted") {
    std::string names;
    for (const std::string& g : job.scheduling_gates) names += (names.empty() ? "" : ", ") + g;
    snap_.gated.emplace_back(i, "waiting for its scheduling gates to be removed (" + names + ")");
    return std::nullopt;
  }
  // A namespace its ClusterQueue's namespaceSelector does not match: Kueue admits nothing of it
  // (what already runs stays).
  if (auto lq = queue_of_local_.find(w.namespace_name + "/" + w.local_queue);
      phase != "Admitted" && lq != queue_of_local_.end() &&
      !NamespaceAdmitted(w.namespace_name, lq->second)) {
    snap_.gated.emplace_back(i, "namespace " + w.namespace_name +
                                    " does not match the namespaceSelector of ClusterQueue " +
                                    lq->second +
                                    " (Kueue: \"Workload namespace doesn't match "
                                    "ClusterQueue selector\")");
    return std::nullopt;
  }
  if (w.local_queue.empty()) {
    w.local_queue = kUnqueued;
    unqueued_ns_.insert(w.namespace_name);
  } else if (volcano_queues_.contains(w.local_queue)) {
    volcano_users_.insert(w.namespace_name + "/" + w.local_queue);
  }
  if (const json& by = Member(status, "preemptedBy"); by.is_object()) {
    w.yields_to = Str(by, "workload");
    w.yield_until_ms = ParseTime(Str(by, "holdUntil"));
  }
  return w;
}

// A running Job holds the devices its status binds (then it is running), unless that binding no
// longer holds (a node left, a GPU's sharing changed): then what was taken is given back and the
// Job is pending again.
std::string CycleReader::Reading::QuarantinedUnder(const json& pod) const {
  const auto q = snap_.quarantine.gpus.find(Str(pod, "node"));
  if (q == snap_.quarantine.gpus.end()) return "";
  for (const json& d : ListOf(Member(pod, "devices"))) {
    const json& index = Member(d, "index");
    if (!index.is_number_integer()) continue;
    if (auto g = q->second.find(index.get<int64_t>()); g != q->second.end()) return g->second;
  }
  return "";
}

void CycleReader::Reading::Place(size_t i, core::Workload w, const json& array_status) {
  const StoredJson& s = snap_.jobs[i];
  if (snap_.views[i]->phase == "Admitted") {
    core::AdmittedWorkload a = AdmittedFrom(w, Member(s.obj(), "status"));
    bool bound = true;
    std::string why = "its node or devices are gone";
    for (const json& pod : ListOf(Member(array_status, "pods"))) {
      if (pod.is_null()) {
        a.placements.emplace_back();
        continue;
      }
      if (const std::string q = QuarantinedUnder(pod); !q.empty()) {
        why = q;
        bound = false;
        break;
      }
      auto p = PlacementFromJson(snap_.state, pod);
      if (!p.ok() || !snap_.state.Allocate(*p).ok()) {
        bound = false;
        break;
      }
      a.placements.push_back(std::move(p).value());
    }
    if (bound && a.placements.size() == static_cast<size_t>(core::PodCount(w))) {
      snap_.running.push_back(std::move(a));
      snap_.running_jobs.push_back(i);
      return;
    }
    for (const std::optional<core::Placement>& p : a.placements) {
      if (p) (void)snap_.state.Release(*p);
    }
    for (const json& pod : ListOf(Member(array_status, "pods"))) {
      if (!pod.is_object()) continue;
      auto nr = snap_.not_ready.find(Str(pod, "node"));
      if (nr != snap_.not_ready.end()) why = nr->second;
    }
    writes_.Event(s.obj(), {"Warning", "BindingLost", why + "; the job is scheduled again"});
  }
  snap_.pending.push_back(std::move(w));
  snap_.pending_jobs.push_back(i);
}

}  // namespace tessera::server
