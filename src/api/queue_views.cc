#include "api/queue_views.h"

#include <algorithm>
#include <map>

#include "api/json_read.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

json WorkloadCondition(const char* type, bool status, const std::string& reason,
                       const std::string& message, int64_t now_ms) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", FormatTime(now_ms)}};
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
    conditions.push_back(KubeCondition("QuotaReserved", true, "QuotaReserved",
                                       "Quota reserved in ClusterQueue " + Str(st, "queue"), at));
    conditions.push_back(
        KubeCondition("Admitted", true, "Admitted", "The workload is admitted", at));
  } else {
    conditions.push_back(KubeCondition("QuotaReserved", false, "Pending", Str(st, "message"), ""));
  }
  if (phase == "Succeeded" || phase == "Failed") {
    conditions.push_back(
        KubeCondition("Finished", true, phase,
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

}  // namespace tessera::api
