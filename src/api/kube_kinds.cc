#include "api/kube_kinds.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <utility>

#include "api/job_array.h"
#include "api/json_read.h"
#include "api/kube.h"
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

bool MadeFrom(const json& stored, const KubeKind& kind, std::string_view ns,
              std::string_view name) {
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

// The counts of a Tessera Job's pods by state.
struct PodCounts {
  int running = 0, succeeded = 0, failed = 0, placed = 0, restarts = 0;
  int failed_attempts = 0;  // of restartPolicy Never pods started again
};

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

json Condition(const char* type, bool is_true, const std::string& reason,
               const std::string& message, const std::string& time) {
  json c = {{"type", type}, {"status", is_true ? "True" : "False"}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  if (!time.empty()) c["lastTransitionTime"] = time;
  return c;
}

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
  conditions.push_back(Condition("PodScheduled", placed, placed ? "" : "Unschedulable",
                                 placed ? "" : waiting, placed ? admitted : ""));
  conditions.push_back(Condition("Ready", out_phase == "Running", "", "", ""));
  status["conditions"] = std::move(conditions);
  json containers = json::array();
  for (const json& c : ListOf(Member(Member(*pod, "spec"), "containers"))) {
    json cs = {{"name", Member(c, "name")},
               {"image", Str(c, "image")},
               {"imageID", ""},
               {"ready", out_phase == "Running"},
               {"restartCount", static_cast<int>(Num(state, "restarts"))}};
    if (out_phase == "Running") {
      cs["state"] = {{"running", {{"startedAt", admitted}}}};
    } else if (out_phase == "Succeeded" || out_phase == "Failed") {
      // Killed by a signal: 128 + the signal, as the container runtimes report it (137 for
      // SIGKILL), not 0.
      const int signal = static_cast<int>(Num(state, "signal"));
      json t = {{"exitCode", signal > 0 ? 128 + signal : static_cast<int>(Num(state, "exitCode"))},
                {"reason", out_phase == "Succeeded" ? "Completed" : "Error"}};
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
        Condition("Suspended", true, "JobSuspended",
                  Str(st, "message").empty() ? "Job suspended" : Str(st, "message"), ""));
  }
  // As Kubernetes' Job controller since 1.31 (KEP-4368): the interim condition
  // (SuccessCriteriaMet, FailureTarget), then the terminal one with the same reason.
  if (phase == "Succeeded") {
    status["completionTime"] = finished;
    const std::string message = "Reached expected number of succeeded pods";
    conditions.push_back(
        Condition("SuccessCriteriaMet", true, "CompletionsReached", message, finished));
    conditions.push_back(Condition("Complete", true, "CompletionsReached", message, finished));
  }
  if (phase == "Failed") {
    const std::string reason =
        Str(st, "reason").empty() ? "BackoffLimitExceeded" : Str(st, "reason");
    conditions.push_back(Condition("FailureTarget", true, reason, Str(st, "message"), finished));
    conditions.push_back(Condition("Failed", true, reason, Str(st, "message"), finished));
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
  json conditions = {Condition("Created", true, kind + "Created", kind + " is created.", "")};
  if (phase != "Admitted" && Member(Member(job, "spec"), "suspend") == true) {
    conditions.push_back(Condition("Suspended", true, kind + "Suspended", message, ""));
  }
  if (phase == "Admitted" && c.running > 0) {
    conditions.push_back(Condition("Running", true, kind + "Running", "", ""));
  }
  if (phase == "Succeeded") {
    conditions.push_back(Condition("Succeeded", true, kind + "Succeeded", message, ""));
  }
  if (phase == "Failed") {
    conditions.push_back(Condition("Failed", true, kind + "Failed", message, ""));
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
  return {{"conditions", json::array({Condition("Active", active, active ? "Ready" : "Inactive",
                                                Str(st, "message"), "")})}};
}

}  // namespace

json KubeObject(const KubeKind& kind, const json& stored) {
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

namespace {

// A UUID-shaped name derived from `base` and `suffix` (FNV-1a), stable across reads.
std::string DerivedUid(const std::string& base, const std::string& suffix) {
  auto fnv = [](std::string_view text, uint64_t h) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
    return h;
  };
  const std::string key = base + "/" + suffix;
  const uint64_t a = fnv(key, 14695981039346656037ULL);
  return UuidText(a, fnv(key, a));
}

}  // namespace

std::string TesseraPodName(const json& pod) {
  return Str(Member(Member(pod, "metadata"), "annotations"), std::string(kPodAnnotation).c_str());
}

ObjectRef RefOf(const json& stored) {
  const json src = SourceOf(stored);
  const json& meta = Member(stored, "metadata");
  if (src.is_object()) return {Str(src, "apiVersion"), Str(src, "kind"), Str(meta, "uid")};
  return {Str(stored, "apiVersion"), Str(stored, "kind"), Str(meta, "uid")};
}

json WorkloadCondition(const char* type, bool status, const std::string& reason,
                       const std::string& message, int64_t now_ms) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", FormatTime(now_ms)}};
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

namespace {

// The total of each resource a task asks for (limits, else requests, times replicas), in
// nano-units.
std::map<std::string, __int128> TaskResources(const json& task) {
  std::map<std::string, __int128> out;
  const json& replicas = Member(task, "replicas");
  const int64_t n = replicas.is_number_integer() ? replicas.get<int64_t>() : 1;
  const json& res = Member(task, "resources");
  for (const char* part : {"requests", "limits"}) {
    const json& amounts = Member(res, part);
    if (!amounts.is_object()) continue;
    for (const auto& [name, v] : amounts.items()) {
      const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      Result<Quantity> q = ParseQuantity(text, name);
      if (!q.ok()) continue;
      out[name] = q->nano * n;  // limits, read last, win over requests
    }
  }
  return out;
}

std::string QuantityText(__int128 nano) {
  if (nano % 1'000'000'000 == 0) return std::to_string(static_cast<int64_t>(nano / 1'000'000'000));
  return std::to_string(static_cast<int64_t>((nano + 999'999) / 1'000'000)) + "m";
}

// The flavors a Job's task `i` (its pod set) was admitted with, per resource:
// status.podSetFlavors[i] where pod sets differ, else status.flavors.
json AdmittedFlavors(const json& job, size_t i) {
  const json& st = Member(job, "status");
  const json& per_set = Member(st, "podSetFlavors");
  const json& f = per_set.is_array() && i < per_set.size() ? per_set[i] : Member(st, "flavors");
  return f.is_object() ? f : json::object();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s;
}

}  // namespace

json KueueWorkload(const json& job) {
  const json& meta = Member(job, "metadata");
  const json& spec = Member(job, "spec");
  const std::string queue = Str(spec, "queue");
  if (queue.empty()) return json();
  const ObjectRef owner = RefOf(job);
  const std::string name = Str(meta, "name");
  const std::string prefix = owner.api_version == "tessera.io/v1"               ? "tessera-job"
                             : owner.api_version == "batch.volcano.sh/v1alpha1" ? "vcjob"
                                                                                : Lower(owner.kind);
  json pod_sets = json::array();
  for (const json& task : ListOf(Member(spec, "tasks"))) {
    json container = {{"name", Member(task, "name")}, {"image", Str(task, "image")}};
    if (task.contains("resources")) container["resources"] = task["resources"];
    pod_sets.push_back(
        {{"name", Member(task, "name")},
         {"count", Member(task, "replicas").is_number() ? Member(task, "replicas") : json(1)},
         {"template", {{"spec", {{"containers", json::array({container})}}}}}});
  }
  json wspec = {{"queueName", queue}, {"podSets", std::move(pod_sets)}, {"active", true}};
  if (!Str(spec, "priorityClassName").empty()) {
    wspec["priorityClassName"] = Str(spec, "priorityClassName");
  }
  const json& st = Member(job, "status");
  if (Member(st, "priority").is_number()) wspec["priority"] = Member(st, "priority");
  const std::string phase = Str(st, "phase");
  json status = json::object();
  json conditions = json::array();
  const bool admitted = phase == "Admitted" || phase == "Succeeded" || phase == "Failed";
  const std::string at = Str(st, "admittedAt");
  if (admitted && !Str(st, "queue").empty()) {
    json assignments = json::array();
    const json& tasks = ListOf(Member(spec, "tasks"));
    for (size_t i = 0; i < tasks.size(); ++i) {
      json usage = json::object();
      for (const auto& [r, nano] : TaskResources(tasks[i])) usage[r] = QuantityText(nano);
      assignments.push_back({{"name", wspec["podSets"][i]["name"]},
                             {"flavors", AdmittedFlavors(job, i)},
                             {"resourceUsage", std::move(usage)},
                             {"count", wspec["podSets"][i]["count"]}});
    }
    status["admission"] = {{"clusterQueue", Str(st, "queue")},
                           {"podSetAssignments", std::move(assignments)}};
    conditions.push_back(Condition("QuotaReserved", true, "QuotaReserved",
                                   "Quota reserved in ClusterQueue " + Str(st, "queue"), at));
    conditions.push_back(Condition("Admitted", true, "Admitted", "The workload is admitted", at));
  } else {
    conditions.push_back(Condition("QuotaReserved", false, "Pending", Str(st, "message"), ""));
  }
  if (phase == "Succeeded" || phase == "Failed") {
    conditions.push_back(
        Condition("Finished", true, phase,
                  phase == "Succeeded" ? "Job finished successfully" : Str(st, "message"),
                  Str(st, "finishedAt")));
  }
  status["conditions"] = std::move(conditions);
  json labels = json::object();
  labels["kueue.x-k8s.io/job-uid"] = owner.uid;
  return {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
          {"kind", "Workload"},
          {"metadata",
           {{"name", prefix + "-" + name},
            {"namespace", Member(meta, "namespace")},
            {"uid", DerivedUid(owner.uid, "workload")},
            {"resourceVersion", Member(meta, "resourceVersion")},
            {"creationTimestamp", Member(meta, "creationTimestamp")},
            {"labels", std::move(labels)},
            {"ownerReferences", json::array({{{"apiVersion", owner.api_version},
                                              {"kind", owner.kind},
                                              {"name", name},
                                              {"uid", owner.uid},
                                              {"controller", true}}})}}},
          {"spec", std::move(wspec)},
          {"status", std::move(status)}};
}

void AddQueueStatus(const std::vector<json>& jobs, const std::vector<json>& local_queues,
                    json* view) {
  const bool cluster = Str(*view, "kind") == "ClusterQueue";
  const json& vmeta = Member(*view, "metadata");
  const std::string name = Str(vmeta, "name"), ns = Str(vmeta, "namespace");
  // The ClusterQueue a job's spec.queue names: a LocalQueue of its namespace, else the queue.
  auto cluster_queue_of = [&](const json& job) {
    const std::string q = Str(Member(job, "spec"), "queue");
    const std::string job_ns = Str(Member(job, "metadata"), "namespace");
    for (const json& lq : local_queues) {
      const json& m = Member(lq, "metadata");
      if (Str(m, "name") == q && Str(m, "namespace") == job_ns) {
        const json& spec = Member(lq, "spec");
        return Str(spec, "clusterQueue").empty() ? Str(spec, "queue") : Str(spec, "clusterQueue");
      }
    }
    return q;
  };
  int pending = 0, admitted = 0;
  std::map<std::string, std::map<std::string, __int128>> usage;  // flavor -> resource -> nano
  for (const json& job : jobs) {
    const json& st = Member(job, "status");
    const std::string phase = Str(st, "phase");
    const bool ours =
        cluster ? (phase == "Admitted" ? Str(st, "queue") == name : cluster_queue_of(job) == name)
                : Str(Member(job, "metadata"), "namespace") == ns &&
                      Str(Member(job, "spec"), "queue") == name;
    if (!ours) continue;
    if (phase == "Pending" || phase.empty()) ++pending;
    if (phase != "Admitted") continue;
    ++admitted;
    const json& tasks = ListOf(Member(Member(job, "spec"), "tasks"));
    for (size_t i = 0; i < tasks.size(); ++i) {
      const json flavors = AdmittedFlavors(job, i);
      for (const auto& [r, nano] : TaskResources(tasks[i])) {
        const std::string flavor = Str(flavors, r.c_str());
        if (!flavor.empty()) usage[flavor][r] += nano;
      }
    }
  }
  json flavors = json::array();
  for (const auto& [flavor, resources] : usage) {
    json rs = json::array();
    for (const auto& [r, nano] : resources) {
      rs.push_back({{"name", r}, {"total", QuantityText(nano)}});
    }
    flavors.push_back({{"name", flavor}, {"resources", std::move(rs)}});
  }
  json& status = (*view)["status"];
  if (!status.is_object()) status = json::object();
  status["pendingWorkloads"] = pending;
  status["reservingWorkloads"] = admitted;
  status["admittedWorkloads"] = admitted;
  status[cluster ? "flavorsUsage" : "flavorUsage"] = std::move(flavors);
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

namespace {

// What Volcano counts of a PodGroup: its phase (Pending; Inqueue once a member Job is admitted;
// Running once `min_member` pods run; Completed when every member Job succeeded) and the pods of
// its member Jobs.
struct GroupState {
  std::string phase;
  PodCounts pods;
};

GroupState GroupOf(const std::vector<const json*>& members, int min_member) {
  GroupState g;
  int admitted = 0, succeeded = 0;
  for (const json* job : members) {
    const json& st = Member(*job, "status");
    const std::string phase = Str(st, "phase");
    if (phase == "Admitted" || phase == "Succeeded" || phase == "Failed") ++admitted;
    if (phase == "Succeeded") ++succeeded;
    const PodCounts c = CountPods(st);
    g.pods.running += c.running;
    g.pods.succeeded += c.succeeded;
    g.pods.failed += c.failed;
  }
  g.phase = "Pending";
  if (admitted > 0) g.phase = "Inqueue";
  if (g.pods.running >= min_member && g.pods.running > 0) g.phase = "Running";
  if (!members.empty() && succeeded == static_cast<int>(members.size())) g.phase = "Completed";
  return g;
}

int MinMember(const json& spec) {
  const json& min = Member(spec, "minMember");
  return min.is_number_integer() ? min.get<int>() : 1;
}

// The Jobs (served form) of namespace `ns` that join PodGroup `name`.
std::vector<const json*> MembersOf(const std::vector<json>& jobs, const std::string& ns,
                                   const std::string& name) {
  std::vector<const json*> out;
  for (const json& job : jobs) {
    if (Str(Member(job, "metadata"), "namespace") == ns &&
        Str(Member(job, "spec"), "podGroup") == name) {
      out.push_back(&job);
    }
  }
  return out;
}

}  // namespace

void AddPodGroupStatus(const std::vector<json>& jobs, json* view) {
  const json& meta = Member(*view, "metadata");
  const GroupState g = GroupOf(MembersOf(jobs, Str(meta, "namespace"), Str(meta, "name")),
                               MinMember(Member(*view, "spec")));
  (*view)["status"] = {{"phase", g.phase},
                       {"running", g.pods.running},
                       {"succeeded", g.pods.succeeded},
                       {"failed", g.pods.failed}};
}

bool VolcanoQueueClosed(const json& queue) {
  return Str(Member(Member(queue, "metadata"), "annotations"), "tessera.io/volcano-queue") ==
             "true" &&
         !Str(Member(queue, "spec"), "stopPolicy").empty() &&
         Str(Member(queue, "spec"), "stopPolicy") != "None";
}

void AddVolcanoQueueStatus(const json& queue, const std::vector<json>& jobs,
                           const std::vector<json>& pod_groups, json* view) {
  const std::string name = Str(Member(*view, "metadata"), "name");
  std::map<std::string, int> phases;
  int groups = 0;
  for (const json& pg : pod_groups) {
    if (Str(Member(pg, "spec"), "queue") != name) continue;
    const json& meta = Member(pg, "metadata");
    ++groups;
    ++phases[GroupOf(MembersOf(jobs, Str(meta, "namespace"), Str(meta, "name")),
                     MinMember(Member(pg, "spec")))
                 .phase];
  }
  for (const json& job : jobs) {
    const json& spec = Member(job, "spec");
    if (Str(spec, "queue") != name || !Str(spec, "podGroup").empty()) continue;
    ++groups;
    ++phases[GroupOf({&job}, MinMember(spec)).phase];
  }
  // Volcano's queue controller: a closed queue is Closing while any PodGroup is in it.
  const bool closed = VolcanoQueueClosed(queue);
  json& status = (*view)["status"];
  status = {{"state", !closed ? "Open" : groups > 0 ? "Closing" : "Closed"}};
  for (const char* phase : {"Pending", "Inqueue", "Running", "Completed"}) {
    std::string key = phase;
    key[0] = static_cast<char>(std::tolower(key[0]));
    status[key] = phases[phase];
  }
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

namespace {

json GroupEntry(std::string_view group) {
  json versions = json::array();
  for (const KubeKind& k : KubeKinds()) {
    if (k.group != group) continue;
    const json v = {{"groupVersion", k.GroupVersion()}, {"version", k.version}};
    if (std::find(versions.begin(), versions.end(), v) == versions.end()) versions.push_back(v);
  }
  if (versions.empty()) return json();
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions[0]}};
}

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
  }
  return out;
}

}  // namespace

json KubeGroups() {
  json groups = json::array();
  std::vector<std::string_view> seen;
  for (const KubeKind& k : KubeKinds()) {
    if (k.group.empty() || std::find(seen.begin(), seen.end(), k.group) != seen.end()) continue;
    seen.push_back(k.group);
    groups.push_back(GroupEntry(k.group));
  }
  return groups;
}

json KubeGroup(std::string_view group) {
  json g = GroupEntry(group);
  if (g.is_null() || group.empty()) return json();
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

json KubeResourceList(std::string_view group, std::string_view version) {
  json resources = json::array();
  for (const KubeKind& k : KubeKinds()) {
    if (k.group != group || k.version != version) continue;
    resources.push_back(ApiResource(
        k.plural, k.kind, k.namespaced,
        k.stored.empty() ? std::vector<std::string>{"create", "get", "list"}
        : k.writable     ? std::vector<std::string>{"create", "delete", "deletecollection", "get",
                                                    "list", "patch", "update", "watch"}
        : k.kind == "Namespace" ? std::vector<std::string>{"get", "list"}
                                : std::vector<std::string>{"get", "list", "watch"},
        Split(k.short_names)));
  }
  if (resources.empty()) return json();
  const std::string gv =
      group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", gv},
          {"resources", std::move(resources)}};
}

json KubeTable(const KubeKind& kind, const std::vector<json>& objects, const std::string& version,
               int64_t now_ms) {
  json columns = json::array({TableColumn("Name", "string", "The object's name.", 0, "name")});
  const bool pod = kind.kind == "Pod";
  const bool batch_job = kind.group == "batch" && kind.kind == "Job";
  const bool volcano_job = kind.group == "batch.volcano.sh";
  if (kind.kind == "Event") {
    json ecols = json::array({
        TableColumn("Last Seen", "string", "When the event last happened.", 0),
        TableColumn("Type", "string", "Normal or Warning.", 0),
        TableColumn("Reason", "string", "Why, in one word.", 0),
        TableColumn("Object", "string", "The object it is about.", 0),
        TableColumn("Message", "string", "What happened.", 0),
    });
    json erows = json::array();
    for (const json& e : objects) {
      const bool v1 = Member(e, "regarding").is_object();
      const int64_t at = ParseTime(Str(e, v1 ? "deprecatedLastTimestamp" : "lastTimestamp"));
      const json& obj = Member(e, v1 ? "regarding" : "involvedObject");
      const std::string kind_name = Lower(Str(obj, "kind"));
      erows.push_back(TableRow(
          {at < 0 ? "<unknown>" : HumanDuration(now_ms - at), Str(e, "type"), Str(e, "reason"),
           kind_name + "/" + Str(obj, "name"), Str(e, v1 ? "note" : "message")},
          e));
    }
    return TableOf(std::move(ecols), std::move(erows), version);
  }
  if (pod) {
    columns.push_back(TableColumn("Ready", "string", "Ready containers / containers.", 0));
    columns.push_back(TableColumn("Status", "string", "The pod's phase.", 0));
    columns.push_back(TableColumn("Restarts", "integer", "Restarts of its containers.", 0));
  } else if (batch_job) {
    columns.push_back(TableColumn("Status", "string", "Running, Complete, Failed, Suspended.", 0));
    columns.push_back(TableColumn("Completions", "string", "Succeeded / wanted pods.", 0));
  } else if (volcano_job) {
    columns.push_back(TableColumn("Status", "string", "The job's phase.", 0));
    columns.push_back(TableColumn("MinAvailable", "integer", "The gang's minimum.", 0));
    columns.push_back(TableColumn("Running", "integer", "Running pods.", 0));
  }
  const bool ns_kind = kind.kind == "Namespace";
  if (ns_kind) columns.push_back(TableColumn("Status", "string", "The namespace's phase.", 0));
  columns.push_back(TableColumn("Age", "string", "Time since the object was created.", 0));
  if (pod) {
    columns.push_back(TableColumn("Node", "string", "The node the pod runs on.", 1));
    columns.push_back(TableColumn("GPUs", "string", "The nvidia.com/gpu limit of its pod.", 1));
  }
  json rows = json::array();
  for (const json& o : objects) {
    const json& st = Member(o, "status");
    json cells = json::array({Str(Member(o, "metadata"), "name")});
    if (pod) {
      int ready = 0, total = 0, restarts = 0;
      for (const json& c : ListOf(Member(st, "containerStatuses"))) {
        ++total;
        if (Member(c, "ready") == true) ++ready;
        restarts += static_cast<int>(Num(c, "restartCount"));
      }
      std::string phase = Str(st, "phase");
      if (phase == "Succeeded") phase = "Completed";
      if (phase == "Failed") phase = "Error";
      cells.push_back(std::to_string(ready) + "/" + std::to_string(total));
      cells.push_back(phase);
      cells.push_back(restarts);
    } else if (batch_job) {
      std::string state = "Running";
      for (const json& c : ListOf(Member(st, "conditions"))) {
        if (Str(c, "status") == "True") state = Str(c, "type");
      }
      const json& spec = Member(o, "spec");
      const json& want = Member(spec, "completions").is_number()   ? Member(spec, "completions")
                         : Member(spec, "parallelism").is_number() ? Member(spec, "parallelism")
                                                                   : json(1);
      cells.push_back(state);
      cells.push_back(std::to_string(static_cast<int>(Num(st, "succeeded"))) + "/" + want.dump());
    } else if (volcano_job) {
      cells.push_back(Str(Member(st, "state"), "phase"));
      cells.push_back(static_cast<int>(Num(st, "minAvailable")));
      cells.push_back(static_cast<int>(Num(st, "running")));
    }
    if (ns_kind) cells.push_back(Str(st, "phase"));
    cells.push_back(AgeOf(o, now_ms));
    if (pod) {
      const std::string node = Str(Member(o, "spec"), "nodeName");
      int64_t gpus = 0;
      for (const json& c : ListOf(Member(Member(o, "spec"), "containers"))) {
        const json& g = Member(Member(Member(c, "resources"), "limits"), "nvidia.com/gpu");
        if (g.is_number_integer()) gpus += g.get<int64_t>();
        if (g.is_string()) gpus += std::atoll(g.get<std::string>().c_str());
      }
      cells.push_back(node.empty() ? "<none>" : node);
      cells.push_back(std::to_string(gpus));
    }
    rows.push_back(TableRow(std::move(cells), o));
  }
  return TableOf(std::move(columns), std::move(rows), version);
}

}  // namespace tessera::api
