#include "api/kube_kinds.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <utility>

#include "api/job_array.h"
#include "api/json_read.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

std::string KubeKind::GroupVersion() const {
  return group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
}

const std::vector<KubeKind>& KubeKinds() {
  static const std::vector<KubeKind> kinds = {
      {"", "v1", "Pod", "pods", true, "po", "Job"},
      {"", "v1", "ConfigMap", "configmaps", true, "cm", "GpuSharingConfig"},
      {"", "v1", "ResourceQuota", "resourcequotas", true, "quota", "NamespaceQuota"},
      {"batch", "v1", "Job", "jobs", true, "", "Job"},
      {"scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, "pc", "PriorityClass"},
      {"kueue.x-k8s.io", "v1beta1", "ClusterQueue", "clusterqueues", false, "cq", "Queue"},
      {"kueue.x-k8s.io", "v1beta1", "LocalQueue", "localqueues", true, "queue,queues,lq",
       "LocalQueue"},
      {"kueue.x-k8s.io", "v1beta1", "ResourceFlavor", "resourceflavors", false, "flavor,flavors,rf",
       "ResourceFlavor"},
      {"kueue.x-k8s.io", "v1alpha1", "Cohort", "cohorts", false, "", "Cohort"},
      {"scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", true, "pg,podgroup-v1beta1",
       "PodGroup"},
      {"scheduling.volcano.sh", "v1beta1", "Queue", "queues", false, "q,queue-v1beta1", "Queue"},
      {"batch.volcano.sh", "v1alpha1", "Job", "jobs", true, "vcjob,vj", "Job"},
      {"bus.volcano.sh", "v1alpha1", "Command", "commands", true, "", ""},
      {"kubeflow.org", "v1", "PyTorchJob", "pytorchjobs", true, "", "Job"},
      {"kubeflow.org", "v1", "MPIJob", "mpijobs", true, "", "Job"},
      {"kubeflow.org", "v1", "TFJob", "tfjobs", true, "", "Job"},
      {"kubeflow.org", "v2beta1", "MPIJob", "mpijobs", true, "", "Job"},
      {"", "v1", "Event", "events", true, "ev", "Event", false},
      {"kueue.x-k8s.io", "v1beta1", "Workload", "workloads", true, "wl", "Job", false},
      {"", "v1", "Namespace", "namespaces", false, "ns", "Namespace"},
      {"events.k8s.io", "v1", "Event", "events", true, "ev", "Event", false},
  };
  return kinds;
}

const KubeKind* FindKubeKind(std::string_view group, std::string_view version,
                             std::string_view plural) {
  for (const KubeKind& k : KubeKinds()) {
    if (k.group == group && k.version == version && k.plural == plural) return &k;
  }
  return nullptr;
}

namespace {

std::string_view GroupOf(std::string_view api_version) {
  const size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

}  // namespace

const KubeKind* KubeKindOf(std::string_view api_version, std::string_view kind) {
  const std::string_view group = GroupOf(api_version);
  if (group.empty() && api_version != "v1") return nullptr;
  for (const KubeKind& k : KubeKinds()) {
    if (k.group == group && k.kind == kind) return &k;
  }
  return nullptr;
}

json SourceDocument(const json& doc, std::string_view ns) {
  json out = doc;
  out.erase("status");
  json& meta = out["metadata"];
  if (!meta.is_object()) meta = json::object();
  for (const char* k :
       {"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
        "deletionGracePeriodSeconds", "selfLink", "managedFields"}) {
    meta.erase(k);
  }
  const KubeKind* kind = KubeKindOf(Str(doc, "apiVersion"), Str(doc, "kind"));
  if (kind != nullptr && kind->namespaced) {
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  return out;
}

json SourceOf(const json& stored) {
  const json& a = Member(Member(stored, "metadata"), "annotations");
  const std::string text = Str(a, std::string(kSourceAnnotation).c_str());
  if (text.empty()) return json();
  json doc = json::parse(text, nullptr, false);
  return doc.is_object() ? doc : json();
}

std::vector<ManagedEntry> ManagedOf(const json& stored) {
  const json& a = Member(Member(stored, "metadata"), "annotations");
  const json list = json::parse(Str(a, std::string(kManagedAnnotation).c_str()), nullptr, false);
  auto managed = ParseManagedFields(list);
  return managed.ok() ? std::move(managed).value() : std::vector<ManagedEntry>();
}

const KubeKind& NativeKubeKind(const KindInfo& kind) {
  static const std::vector<KubeKind> native = [] {
    std::vector<KubeKind> out;
    for (const KindInfo& k : Kinds()) {
      out.push_back({kGroup, "v1", k.kind, k.plural, k.namespaced, k.short_name, k.kind, true});
    }
    return out;
  }();
  return native[&kind - Kinds().data()];
}

bool MadeFrom(const json& stored, const KubeKind& kind, std::string_view ns,
              std::string_view name) {
  if (IsNative(kind)) {
    const json& meta = Member(stored, "metadata");
    return Str(stored, "kind") == kind.kind && (name.empty() || Str(meta, "name") == name) &&
           (ns.empty() || !kind.namespaced || Str(meta, "namespace") == ns);
  }
  const json src = SourceOf(stored);
  if (src.is_null() || Str(src, "kind") != kind.kind) return false;
  const std::string api = Str(src, "apiVersion");
  if (GroupOf(api) != kind.group || (kind.group.empty() && api != "v1")) return false;
  const json& meta = Member(src, "metadata");
  if (!name.empty() && Str(meta, "name") != name) return false;
  return ns.empty() || !kind.namespaced || Str(meta, "namespace") == ns;
}

namespace {

constexpr std::string_view kPodAnnotation = "tessera.io/pod";

// A pod's phase as Kubernetes shows it, from its Job's phase and its status entry (null while
// not placed): a pod that succeeded stays Succeeded; once its Job has failed, a pod that has
// not succeeded reads Failed (it is being stopped, or was); once its Job has succeeded, every
// placed pod reads Succeeded.
std::string PodPhase(std::string_view job_phase, const json& entry) {
  const std::string pod_phase = Str(Member(entry, "state"), "phase");
  if (pod_phase == "Succeeded") return "Succeeded";
  if (pod_phase == "Failed" || job_phase == "Failed") return "Failed";
  if (job_phase == "Succeeded" && entry.is_object()) return "Succeeded";
  return pod_phase == "Running" ? "Running" : "Pending";
}

}  // namespace

PodCounts CountPods(const json& status) {
  PodCounts c;
  const std::string job_phase = Str(status, "phase");
  for (const json& p : ListOf(Member(status, "pods"))) {
    if (!p.is_object()) continue;
    ++c.placed;
    const json& st = Member(p, "state");
    const std::string phase = PodPhase(job_phase, p);
    if (phase == "Running") ++c.running;
    if (phase == "Succeeded") ++c.succeeded;
    if (phase == "Failed") ++c.failed;
    c.restarts += static_cast<int>(Num(st, "restarts"));
    c.failed_attempts += static_cast<int>(Num(st, "failures"));
  }
  return c;
}

json KubeCondition(const char* type, bool is_true, const std::string& reason,
                   const std::string& message, const std::string& time) {
  json c = {{"type", type}, {"status", is_true ? "True" : "False"}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  if (!time.empty()) c["lastTransitionTime"] = time;
  return c;
}

namespace {

// Why each of a Job's unplaced pods waits, by pod name: status.waitingPods, whose entries stand
// for `count` pods from the one they name on (the same task's, by index); the Job's message for a
// pod not listed. Built once per Job, looked up in log time.
class WaitingReasons {
 public:
  explicit WaitingReasons(const json& status) : fallback_(Str(status, "message")) {
    for (const json& w : ListOf(Member(status, "waitingPods"))) {
      const auto [prefix, first] = Split(Str(w, "name"));
      const json& count = Member(w, "count");
      runs_[prefix].push_back(
          {first, count.is_number_integer() ? count.get<int64_t>() : 1, Str(w, "reason")});
    }
    for (auto& [prefix, runs] : runs_) {
      std::stable_sort(runs.begin(), runs.end(),
                       [](const Run& a, const Run& b) { return a.first < b.first; });
    }
  }

  const std::string& Of(const std::string& pod) const {
    const auto [prefix, index] = Split(pod);
    auto it = runs_.find(prefix);
    if (it == runs_.end()) return fallback_;
    // The last run starting at or before the pod's index.
    const std::vector<Run>& runs = it->second;
    auto after = std::upper_bound(runs.begin(), runs.end(), index,
                                  [](int64_t i, const Run& r) { return i < r.first; });
    if (after == runs.begin()) return fallback_;
    const Run& run = *std::prev(after);
    return index - run.first < run.count ? run.reason : fallback_;
  }

 private:
  struct Run {
    int64_t first, count;
    std::string reason;
  };
  // "<prefix>-<index>"; a name without a numeric suffix is its own prefix, index 0.
  static std::pair<std::string, int64_t> Split(const std::string& name) {
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos || dash + 1 == name.size() || name.size() - dash > 10 ||
        !std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dash) + 1, name.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return {name, 0};
    }
    return {name.substr(0, dash), std::stoll(name.substr(dash + 1))};
  }

  std::string fallback_;
  std::map<std::string, std::vector<Run>, std::less<>> runs_;
};

// A core/v1 Pod's status (and spec.nodeName) from its Tessera Job and the Job's status entry
// for the pod (null while it is not placed).
void PodView(const json& job, const json& entry, const WaitingReasons& waiting_reasons, json* pod) {
  const json& st = Member(job, "status");
  const std::string phase = Str(st, "phase");
  const json& state = Member(entry, "state");
  const std::string out_phase = PodPhase(phase, entry);
  json status = {{"phase", out_phase}, {"qosClass", "BestEffort"}};
  const bool placed = entry.is_object() && !Str(entry, "node").empty();
  if (placed) (*pod)["spec"]["nodeName"] = Str(entry, "node");
  if (const std::string address = Str(entry, "address"); placed && !address.empty()) {
    // A pod shares its node's network, as a hostNetwork pod: its address is the node's.
    const json ips = json::array({{{"ip", address}}});
    status["hostIP"] = address;
    status["hostIPs"] = ips;
    status["podIP"] = address;
    status["podIPs"] = ips;
  }
  const std::string admitted = Str(st, "admittedAt");
  if (placed && !admitted.empty()) status["startTime"] = admitted;
  const std::string& waiting = waiting_reasons.Of(TesseraPodName(*pod));
  json conditions = json::array();
  conditions.push_back(KubeCondition("PodScheduled", placed, placed ? "" : "Unschedulable",
                                     placed ? "" : waiting, placed ? admitted : ""));
  conditions.push_back(KubeCondition("Ready", out_phase == "Running", "", "", ""));
  status["conditions"] = std::move(conditions);
  json containers = json::array();
  for (const json& c : ListOf(Member(Member(*pod, "spec"), "containers"))) {
    json cs = {{"name", Member(c, "name")},
               {"image", Str(c, "image")},
               {"imageID", ""},
               {"ready", out_phase == "Running"},
               {"restartCount", static_cast<int>(Num(state, "restarts"))}};
    if (out_phase == "Running" && Str(state, "reason") == "CrashLoopBackOff") {
      // Between runs of a container that keeps ending (the agent's back-off), as kubelet says.
      cs["ready"] = false;
      cs["state"] = {
          {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", Str(state, "message")}}}};
    } else if (out_phase == "Running") {
      cs["state"] = {{"running", {{"startedAt", admitted}}}};
    } else if (out_phase == "Succeeded" || out_phase == "Failed") {
      // Killed by a signal: 128 + the signal, as the container runtimes report it (137 for
      // SIGKILL), not 0.
      // One that never started (no runtime for its image, a spec the node cannot run) has no
      // exit code of its own: 128 and StartError, as containerd reports a failed start.
      const int signal = static_cast<int>(Num(state, "signal"));
      const bool started =
          signal > 0 || Member(state, "exitCode").is_number_integer() || out_phase == "Succeeded";
      json t = {{"exitCode", signal > 0 ? 128 + signal
                             : started  ? static_cast<int>(Num(state, "exitCode"))
                                        : 128},
                {"reason", out_phase == "Succeeded" ? "Completed"
                           : started                ? "Error"
                                                    : "StartError"}};
      if (signal > 0) t["signal"] = signal;
      if (!Str(state, "finishedAt").empty()) t["finishedAt"] = Str(state, "finishedAt");
      if (!Str(state, "message").empty()) t["message"] = Str(state, "message");
      cs["state"] = {{"terminated", std::move(t)}};
    } else {
      cs["state"] = {{"waiting", {{"reason", placed ? "ContainerCreating" : "Pending"}}}};
    }
    containers.push_back(std::move(cs));
  }
  status["containerStatuses"] = std::move(containers);
  (*pod)["status"] = std::move(status);
}

// The Job's status entry for the pod named `name` ("<task>-<index>"), or null.
// The name the user gave the container of `task`'s pods in the document the Job was made from
// (a batch/v1 Job's template, a Volcano Job's task), so that kubectl logs -c NAME and the client
// libraries' container= find it; the task's name when there is none.
std::string SourceContainerName(const json& source, const std::string& task) {
  auto first = [](const json& tmpl) {
    const json& containers = ListOf(Member(Member(tmpl, "spec"), "containers"));
    return containers.empty() ? std::string() : Str(containers[0], "name");
  };
  std::string name;
  const json& spec = Member(source, "spec");
  if (Member(spec, "template").is_object()) name = first(Member(spec, "template"));
  for (const json& t : ListOf(Member(spec, "tasks"))) {
    if (Str(t, "name") == task && Member(t, "template").is_object()) name = first(t["template"]);
  }
  return name.empty() ? task : name;
}

// A Job's status.pods entries by pod name.
std::unordered_map<std::string, const json*> PodEntries(const json& job) {
  std::unordered_map<std::string, const json*> out;
  for (const json& p : ListOf(Member(Member(job, "status"), "pods"))) {
    if (p.is_object()) out.emplace(Str(p, "name"), &p);
  }
  return out;
}

// Whether a Job (pending, or not yet seen by the scheduler) waits suspended as Kubernetes shows
// it: spec.suspend, or queued and not admitted
// (Kueue keeps a queued Job suspended until it admits it, and suspends it again when it evicts
// it). Such a Job has no pods.
bool WaitsSuspended(const json& stored) {
  const json& spec = Member(stored, "spec");
  const std::string phase = Str(Member(stored, "status"), "phase");
  return (phase == "Pending" || phase.empty()) &&
         (!Str(spec, "queue").empty() || Member(spec, "suspend") == true);
}

// A batch/v1 Job's status from the Tessera Job.
json BatchJobStatus(const json& job, const json& source) {
  const json& st = Member(job, "status");
  const std::string phase = Str(st, "phase");
  const PodCounts c = CountPods(st);
  json status = {{"active", c.placed - c.succeeded - c.failed},
                 {"succeeded", c.succeeded},
                 {"failed", c.failed + c.failed_attempts},
                 {"ready", c.running}};
  // An array counts its tasks as they end (api/job_array.h); its slots hold the running ones.
  if (IsArrayJob(job)) {
    const json& spec = Member(job, "spec");
    status["succeeded"] = static_cast<int>(Num(st, "succeeded"));
    status["failed"] = static_cast<int>(Num(st, "failed"));
    if (Str(spec, "completionMode") == "Indexed") {
      status["completedIndexes"] = Str(st, "completedIndexes");
      if (st.contains("failedIndexes")) status["failedIndexes"] = Str(st, "failedIndexes");
    }
  }
  if (!Str(st, "admittedAt").empty()) status["startTime"] = Str(st, "admittedAt");
  json conditions = json::array();
  const std::string finished = Str(st, "finishedAt");
  if (phase == "Pending" && Member(Member(source, "spec"), "suspend") == true) {
    conditions.push_back(
        KubeCondition("Suspended", true, "JobSuspended",
                      Str(st, "message").empty() ? "Job suspended" : Str(st, "message"), ""));
  }
  // As Kubernetes' Job controller since 1.31 (KEP-4368): the interim condition
  // (SuccessCriteriaMet, FailureTarget), then the terminal one with the same reason.
  if (phase == "Succeeded") {
    status["completionTime"] = finished;
    const std::string message = "Reached expected number of succeeded pods";
    conditions.push_back(
        KubeCondition("SuccessCriteriaMet", true, "CompletionsReached", message, finished));
    conditions.push_back(KubeCondition("Complete", true, "CompletionsReached", message, finished));
  }
  if (phase == "Failed") {
    const std::string reason =
        Str(st, "reason").empty() ? "BackoffLimitExceeded" : Str(st, "reason");
    conditions.push_back(
        KubeCondition("FailureTarget", true, reason, Str(st, "message"), finished));
    conditions.push_back(KubeCondition("Failed", true, reason, Str(st, "message"), finished));
  }
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  return status;
}

// A Volcano Job's status: state.phase (Pending, Running, Completed, Failed) and pod counts.
json VolcanoJobStatus(const json& job, const json& source) {
  const json& st = Member(job, "status");
  const std::string phase = Str(st, "phase");
  const PodCounts c = CountPods(st);
  std::string state = "Pending";
  if (phase == "Admitted" && c.running > 0) state = "Running";
  if (phase == "Succeeded") state = "Completed";
  if (phase == "Failed") state = "Failed";
  json status = {{"state", {{"phase", state}}},
                 {"running", c.running},
                 {"succeeded", c.succeeded},
                 {"failed", c.failed},
                 {"pending", c.placed - c.running - c.succeeded - c.failed},
                 {"retryCount", c.restarts}};
  if (const json& m = Member(Member(source, "spec"), "minAvailable"); m.is_number_integer()) {
    status["minAvailable"] = m;
  }
  if (!Str(st, "message").empty()) status["state"]["message"] = Str(st, "message");
  return status;
}

// A Kubeflow job's status as the training operator writes it: the Created, Running,
// Suspended, Succeeded and Failed conditions, and each replica type's pod counts.
json KubeflowJobStatus(const json& job, const json& source) {
  const json& st = Member(job, "status");
  const std::string phase = Str(st, "phase"), message = Str(st, "message");
  const PodCounts c = CountPods(st);
  const std::string kind = Str(source, "kind");
  json conditions = {KubeCondition("Created", true, kind + "Created", kind + " is created.", "")};
  if (phase != "Admitted" && Member(Member(job, "spec"), "suspend") == true) {
    conditions.push_back(KubeCondition("Suspended", true, kind + "Suspended", message, ""));
  }
  if (phase == "Admitted" && c.running > 0) {
    conditions.push_back(KubeCondition("Running", true, kind + "Running", "", ""));
  }
  if (phase == "Succeeded") {
    conditions.push_back(KubeCondition("Succeeded", true, kind + "Succeeded", message, ""));
  }
  if (phase == "Failed") {
    conditions.push_back(KubeCondition("Failed", true, kind + "Failed", message, ""));
  }
  // Pods are named <task>-<index>; the task is the replica type in lower case.
  json replicas = json::object();
  for (const json& p : ListOf(Member(st, "pods"))) {
    if (!p.is_object()) continue;
    std::string type = Str(p, "name").substr(0, Str(p, "name").rfind('-'));
    if (!type.empty()) type[0] = static_cast<char>(std::toupper(type[0]));
    if (type == "Ps") type = "PS";  // TFJob's parameter servers
    json& r = replicas[type];
    if (r.is_null()) r = {{"active", 0}, {"succeeded", 0}, {"failed", 0}};
    const std::string pod_phase = Str(Member(p, "state"), "phase");
    if (pod_phase == "Running") r["active"] = r["active"].get<int>() + 1;
    if (pod_phase == "Succeeded") r["succeeded"] = r["succeeded"].get<int>() + 1;
    if (pod_phase == "Failed") r["failed"] = r["failed"].get<int>() + 1;
  }
  json status = {{"conditions", std::move(conditions)}, {"replicaStatuses", std::move(replicas)}};
  if (!Str(st, "admittedAt").empty()) status["startTime"] = Str(st, "admittedAt");
  if (!Str(st, "finishedAt").empty()) status["completionTime"] = Str(st, "finishedAt");
  return status;
}

// A Kueue ClusterQueue's Active condition from the Tessera Queue's status.
json ClusterQueueStatus(const json& queue) {
  const json& st = Member(queue, "status");
  if (!st.is_object() || !Member(st, "active").is_boolean()) return json();
  const bool active = Member(st, "active") == true;
  return {{"conditions", json::array({KubeCondition("Active", active, active ? "Ready" : "Inactive",
                                                    Str(st, "message"), "")})}};
}

}  // namespace

json KubeObject(const KubeKind& kind, const json& stored) {
  if (IsNative(kind)) return MadeFrom(stored, kind, "", "") ? stored : json();
  json out = SourceOf(stored);
  if (out.is_null() || !MadeFrom(stored, kind, "", "")) return json();
  out["apiVersion"] = kind.GroupVersion();
  out["kind"] = kind.kind;
  const json& meta = Member(stored, "metadata");
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp"}) {
    if (Member(meta, k).is_string()) out["metadata"][k] = Member(meta, k);
  }
  if (std::vector<ManagedEntry> managed = ManagedOf(stored); !managed.empty()) {
    out["metadata"]["managedFields"] = ManagedFieldsJson(managed);
  }
  if (kind.kind == "Pod") {
    const json& pods = ListOf(Member(Member(stored, "status"), "pods"));
    const json entry = pods.empty() ? json() : pods[0];
    const json& tasks = ListOf(Member(Member(stored, "spec"), "tasks"));
    std::string tpod = (tasks.empty() ? "main" : Str(tasks[0], "name")) + "-0";
    if (entry.is_object()) tpod = Str(entry, "name");
    out["metadata"]["annotations"][std::string(kPodAnnotation)] = tpod;
    PodView(stored, entry, WaitingReasons(Member(stored, "status")), &out);
  } else if (kind.group == "batch" && kind.kind == "Job") {
    // Kueue's admission un-suspends the Job, as it does the stored one.
    const json& suspend = Member(Member(stored, "spec"), "suspend");
    if (Member(Member(out, "spec"), "suspend") == true && suspend == false) {
      out["spec"]["suspend"] = false;
    }
    // A queued Job is Kueue's to suspend: so while it waits, not once admitted.
    if (WaitsSuspended(stored)) {
      out["spec"]["suspend"] = true;
    } else if (!Str(Member(stored, "spec"), "queue").empty()) {
      out["spec"]["suspend"] = false;
    }
    // Kubernetes' default selector (manualSelector unset): the pods with the Job's uid, which
    // kubectl logs job/X and kubectl describe use to find the Job's own pods.
    if (!Member(Member(out, "spec"), "selector").is_object()) {
      out["spec"]["selector"] = {
          {"matchLabels", {{"batch.kubernetes.io/controller-uid", RefOf(stored).uid}}}};
    }
    out["status"] = BatchJobStatus(stored, out);
  } else if (kind.group == "batch.volcano.sh") {
    out["status"] = VolcanoJobStatus(stored, out);
  } else if (kind.group == "kubeflow.org") {
    out["status"] = KubeflowJobStatus(stored, out);
  } else if (kind.kind == "ClusterQueue") {
    if (json st = ClusterQueueStatus(stored); !st.is_null()) out["status"] = std::move(st);
  } else if (kind.kind == "ResourceQuota") {
    out["status"] = {{"hard", Member(Member(out, "spec"), "hard")}};
  } else if (kind.kind == "Namespace") {
    // As kube-apiserver: the name label on every namespace, and the finalizer.
    out["metadata"]["labels"]["kubernetes.io/metadata.name"] = Str(out["metadata"], "name");
    if (!Member(out, "spec").is_object()) out["spec"] = json::object();
    if (!out["spec"].contains("finalizers")) out["spec"]["finalizers"] = {"kubernetes"};
    out["status"] = {{"phase", "Active"}};
  }
  return out;
}

std::string DerivedUid(const std::string& base, const std::string& suffix) {
  auto fnv = [](std::string_view text, uint64_t h) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
    return h;
  };
  const std::string key = base + "/" + suffix;
  const uint64_t a = fnv(key, 14695981039346656037ULL);
  return UuidText(a, fnv(key, a));
}

std::string TesseraPodName(const json& pod) {
  return Str(Member(Member(pod, "metadata"), "annotations"), std::string(kPodAnnotation).c_str());
}

ObjectRef RefOf(const json& stored) {
  const json src = SourceOf(stored);
  const json& meta = Member(stored, "metadata");
  if (src.is_object()) return {Str(src, "apiVersion"), Str(src, "kind"), Str(meta, "uid")};
  return {Str(stored, "apiVersion"), Str(stored, "kind"), Str(meta, "uid")};
}

std::vector<json> JobPods(const json& job) {
  static const KubeKind& pod_kind = *FindKubeKind("", "v1", "pods");
  if (MadeFrom(job, pod_kind, "", "")) {
    // Evicted after it finished: gone (as the other Jobs' pods, below).
    const json& pods = ListOf(Member(Member(job, "status"), "pods"));
    if (!pods.empty() && Member(pods[0], "removed") == true) return {};
    return {KubeObject(pod_kind, job)};
  }
  const json& meta = Member(job, "metadata");
  const std::string name = Str(meta, "name");
  const ObjectRef owner = RefOf(job);
  json labels = Member(meta, "labels").is_object() ? Member(meta, "labels") : json::object();
  labels["job-name"] = name;
  labels["batch.kubernetes.io/job-name"] = name;
  // What the Job's selector matches (Kubernetes' Job controller labels its pods so): the pods
  // of this Job alone, whatever other Jobs' pods carry.
  labels["controller-uid"] = owner.uid;
  labels["batch.kubernetes.io/controller-uid"] = owner.uid;
  std::vector<json> out;
  const json source = SourceOf(job);
  // A batch/v1 Job waiting suspended has no pods, as Kubernetes' Job controller makes none.
  if (Str(source, "apiVersion") == "batch/v1" && Str(source, "kind") == "Job" &&
      WaitsSuspended(job)) {
    return out;
  }
  const std::unordered_map<std::string, const json*> entries = PodEntries(job);
  const WaitingReasons waiting(Member(job, "status"));
  // A pod's uid: its Job's, its name and when its Job was admitted. A Job placed again (after
  // an eviction, a preemption, its node's failure) has new pods, as Kubernetes' Job controller
  // makes new ones (kubectl drain waits for the evicted pod's uid to change).
  const std::string admitted = Str(Member(job, "status"), "admittedAt");
  static const json kNone;
  for (const json& task : ListOf(Member(Member(job, "spec"), "tasks"))) {
    const std::string task_name = Str(task, "name");
    const int64_t replicas =
        Member(task, "replicas").is_number_integer() ? Member(task, "replicas").get<int64_t>() : 1;
    json container = {{"name", SourceContainerName(source, task_name)},
                      {"image", Member(task, "image")}};
    for (const char* k : {"command", "args", "resources"}) {
      if (task.contains(k)) container[k] = task[k];
    }
    // An array's pods are its running tasks, named by their index (api/job_array.h).
    const bool array = IsArrayJob(job);
    const bool indexed = array && Str(Member(job, "spec"), "completionMode") == "Indexed";
    std::vector<std::pair<std::string, int64_t>> tpods;  // name, completion index
    if (array) {
      for (const json& p : ListOf(Member(Member(job, "status"), "pods"))) {
        if (p.is_object())
          tpods.emplace_back(Str(p, "name"), static_cast<int64_t>(Num(p, "index")));
      }
    }
    for (int64_t i = 0; !array && i < replicas && i < 10'000; ++i) {
      tpods.emplace_back(task_name + "-" + std::to_string(i), -1);
    }
    for (const auto& [tpod, index] : tpods) {
      auto entry = entries.find(tpod);
      // Evicted after its Job finished: gone, as Kubernetes deletes an evicted pod.
      if (entry != entries.end() && Member(*entry->second, "removed") == true) continue;
      json pod_labels = labels;
      pod_labels["volcano.sh/task-spec"] = task_name;
      json annotations = {{std::string(kPodAnnotation), tpod}};
      if (indexed) {
        pod_labels["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
        annotations["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
      }
      json pod = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", name + "-" + tpod},
                    {"namespace", Str(meta, "namespace")},
                    {"uid", DerivedUid(owner.uid, admitted.empty() ? tpod : tpod + "@" + admitted)},
                    {"creationTimestamp", Member(meta, "creationTimestamp")},
                    {"resourceVersion", Member(meta, "resourceVersion")},
                    {"labels", std::move(pod_labels)},
                    {"annotations", std::move(annotations)},
                    {"ownerReferences", json::array({{{"apiVersion", owner.api_version},
                                                      {"kind", owner.kind},
                                                      {"name", name},
                                                      {"uid", owner.uid},
                                                      {"controller", true}}})}}},
                  {"spec",
                   {{"containers", json::array({container})},
                    {"restartPolicy", Member(task, "restartPolicy").is_string()
                                          ? Member(task, "restartPolicy")
                                          : json("Never")}}}};
      PodView(job, entry == entries.end() ? kNone : *entry->second, waiting, &pod);
      out.push_back(std::move(pod));
    }
  }
  return out;
}

json KubeEvent(const json& event, const ObjectRef* involved) {
  const json& meta = Member(event, "metadata");
  const json& spec = Member(event, "spec");
  const json& obj = Member(spec, "involvedObject");
  const std::string time =
      Str(spec, "time").empty() ? Str(meta, "creationTimestamp") : Str(spec, "time");
  json ref = {{"kind", involved ? involved->kind : Str(obj, "kind")},
              {"name", Member(obj, "name")},
              {"namespace", Member(meta, "namespace")}};
  if (involved != nullptr) {
    ref["apiVersion"] = involved->api_version;
    if (!involved->uid.empty()) ref["uid"] = involved->uid;
  }
  // A pod that no node can take is kube-scheduler's Warning FailedScheduling, which is what
  // kubectl describe pod readers look for (Tessera's own event says Pending).
  json reason = Member(spec, "reason"), type = Member(spec, "type");
  if (ref["kind"] == "Pod" && reason == "Pending" &&
      Str(spec, "message").find("nodes are available") != std::string::npos) {
    reason = "FailedScheduling";
    type = "Warning";
  }
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata",
           {{"name", Member(meta, "name")},
            {"namespace", Member(meta, "namespace")},
            {"uid", Member(meta, "uid")},
            {"resourceVersion", Member(meta, "resourceVersion")},
            {"creationTimestamp", Member(meta, "creationTimestamp")}}},
          {"involvedObject", std::move(ref)},
          {"reason", std::move(reason)},
          {"message", Member(spec, "message")},
          {"type", std::move(type)},
          {"source", {{"component", "tessera-scheduler"}}},
          {"reportingComponent", "tessera-scheduler"},
          {"firstTimestamp", time},
          {"lastTimestamp", time},
          {"count", 1}};
}

json KubeNamespace(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata",
           {{"name", name},
            {"uid", DerivedUid("namespace", name)},
            {"labels", {{"kubernetes.io/metadata.name", name}}}}},
          {"spec", {{"finalizers", json::array({"kubernetes"})}}},
          {"status", {{"phase", "Active"}}}};
}

json EventsV1(const json& e) {
  // MicroTime: RFC 3339 with exactly six fractional digits, as Go's clients parse it.
  std::string at = Str(e, "lastTimestamp");
  if (const size_t dot = at.find('.'); dot != std::string::npos && at.ends_with("Z")) {
    std::string frac = at.substr(dot + 1, at.size() - dot - 2);
    frac.resize(6, '0');
    at = at.substr(0, dot + 1) + frac + "Z";
  }
  json meta = Member(e, "metadata");
  return {{"apiVersion", "events.k8s.io/v1"},
          {"kind", "Event"},
          {"metadata", std::move(meta)},
          {"eventTime", at},
          {"reportingController", "tessera.io/scheduler"},
          {"reportingInstance", "tessera-scheduler"},
          {"action", Member(e, "reason")},
          {"reason", Member(e, "reason")},
          {"regarding", Member(e, "involvedObject")},
          {"note", Member(e, "message")},
          {"type", Member(e, "type")},
          {"deprecatedSource", Member(e, "source")},
          {"deprecatedFirstTimestamp", Member(e, "firstTimestamp")},
          {"deprecatedLastTimestamp", Member(e, "lastTimestamp")},
          {"deprecatedCount", Member(e, "count")}};
}

}  // namespace tessera::api
