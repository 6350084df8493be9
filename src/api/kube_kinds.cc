#include "api/kube_kinds.h"

#include <algorithm>

#include "api/json_read.h"
#include "api/kube.h"

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

// The counts of a Tessera Job's pods by state.
struct PodCounts {
  int running = 0, succeeded = 0, failed = 0, placed = 0, restarts = 0;
};

PodCounts CountPods(const json& status) {
  PodCounts c;
  for (const json& p : ListOf(Member(status, "pods"))) {
    if (!p.is_object()) continue;
    ++c.placed;
    const json& st = Member(p, "state");
    const std::string phase = Str(st, "phase");
    if (phase == "Running") ++c.running;
    if (phase == "Succeeded") ++c.succeeded;
    if (phase == "Failed") ++c.failed;
    c.restarts += static_cast<int>(Num(st, "restarts"));
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

// A core/v1 Pod's status (and spec.nodeName) from the Tessera Job made from it.
void PodView(const json& job, json* pod) {
  const json& st = Member(job, "status");
  const std::string phase = Str(st, "phase");
  const json& first = ListOf(Member(st, "pods")).empty() ? json() : Member(st, "pods")[0];
  const json& state = Member(first, "state");
  const std::string pod_phase = Str(state, "phase");
  std::string out_phase = "Pending";
  if (phase == "Succeeded" || pod_phase == "Succeeded") out_phase = "Succeeded";
  if (phase == "Failed" || pod_phase == "Failed") out_phase = "Failed";
  if (out_phase == "Pending" && pod_phase == "Running") out_phase = "Running";
  json status = {{"phase", out_phase}, {"qosClass", "BestEffort"}};
  const bool placed = first.is_object() && !Str(first, "node").empty();
  if (placed) (*pod)["spec"]["nodeName"] = Str(first, "node");
  const std::string admitted = Str(st, "admittedAt");
  if (!admitted.empty()) status["startTime"] = admitted;
  json conditions = json::array();
  conditions.push_back(Condition("PodScheduled", placed, placed ? "" : "Unschedulable",
                                 placed ? "" : Str(st, "message"), admitted));
  conditions.push_back(Condition("Ready", out_phase == "Running", "", "", ""));
  status["conditions"] = std::move(conditions);
  json containers = json::array();
  for (const json& c : ListOf(Member(Member(*pod, "spec"), "containers"))) {
    json cs = {{"name", Member(c, "name")},
               {"image", Member(c, "image")},
               {"imageID", ""},
               {"ready", out_phase == "Running"},
               {"restartCount", static_cast<int>(Num(state, "restarts"))}};
    if (out_phase == "Running") {
      cs["state"] = {{"running", {{"startedAt", admitted}}}};
    } else if (out_phase == "Succeeded" || out_phase == "Failed") {
      json t = {{"exitCode", static_cast<int>(Num(state, "exitCode"))},
                {"reason", out_phase == "Succeeded" ? "Completed" : "Error"}};
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

// A batch/v1 Job's status from the Tessera Job.
json BatchJobStatus(const json& job, const json& source) {
  const json& st = Member(job, "status");
  const std::string phase = Str(st, "phase");
  const PodCounts c = CountPods(st);
  json status = {{"active", c.placed - c.succeeded - c.failed},
                 {"succeeded", c.succeeded},
                 {"failed", c.failed},
                 {"ready", c.running}};
  if (!Str(st, "admittedAt").empty()) status["startTime"] = Str(st, "admittedAt");
  json conditions = json::array();
  const std::string finished = Str(st, "finishedAt");
  if (phase == "Pending" && Member(Member(source, "spec"), "suspend") == true) {
    conditions.push_back(
        Condition("Suspended", true, "JobSuspended", "Job suspended", Str(st, "message")));
  }
  if (phase == "Succeeded") {
    status["completionTime"] = finished;
    conditions.push_back(Condition("Complete", true, "", "", finished));
  }
  if (phase == "Failed") {
    conditions.push_back(
        Condition("Failed", true, "BackoffLimitExceeded", Str(st, "message"), finished));
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
  if (kind.kind == "Pod") {
    PodView(stored, &out);
  } else if (kind.group == "batch" && kind.kind == "Job") {
    out["status"] = BatchJobStatus(stored, out);
  } else if (kind.group == "batch.volcano.sh") {
    out["status"] = VolcanoJobStatus(stored, out);
  } else if (kind.kind == "ClusterQueue") {
    if (json st = ClusterQueueStatus(stored); !st.is_null()) out["status"] = std::move(st);
  } else if (kind.kind == "ResourceQuota") {
    out["status"] = {{"hard", Member(Member(out, "spec"), "hard")}};
  }
  return out;
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
    resources.push_back(ApiResource(k.plural, k.kind, k.namespaced,
                                    {"create", "delete", "get", "list", "patch", "update"},
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
