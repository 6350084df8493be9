// Volcano's Job, PodGroup and Queue as Tessera objects, and its queue Commands (see
// api/translate.h, api/manifest.h).
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/fields.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/kube_kinds.h"
#include "api/manifest.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/translate.h"

namespace tessera::api::translate {

using nlohmann::json;

// Volcano's queue of a Job or PodGroup. Volcano's `default` queue always exists, is open to
// every namespace and has no capability: Tessera's work without a queue, recorded in the
// tessera.io/volcano-queue annotation. Another name is the queue (LocalQueue) of that name.
void VolcanoQueue(const json& spec, json* out, json* annotations) {
  const json& q = Member(spec, "queue");
  if (!q.is_string()) return;
  if (q == "default") {
    if (!annotations->is_object()) *annotations = json::object();
    (*annotations)["tessera.io/volcano-queue"] = "default";
    return;
  }
  (*out)["queue"] = q;
}

namespace {

// Volcano's lifecycle policies ({event(s), action, exitCode, timeout}). Tessera re-queues a
// preempted or evicted gang whole (Volcano's PodEvicted -> RestartJob) and restarts a failed pod
// by its restartPolicy and maxRetry; any other policy is accepted with a warning.
Status VolcanoPolicies(const json& policies, const std::string& path, Warnings* warnings) {
  if (policies.empty()) return Status::Ok();
  if (!policies.is_array()) return FieldError(path, "must be a list");
  for (size_t i = 0; i < policies.size(); ++i) {
    const std::string p = Index(path, i);
    TESSERA_RETURN_IF_ERROR(KnownFields(policies[i], p, KubeFieldsOf("LifecyclePolicy"), warnings));
    std::vector<std::string> events;
    if (Member(policies[i], "event").is_string()) events.push_back(Text(policies[i], "event"));
    const json& list = Member(policies[i], "events");
    for (size_t k = 0; list.is_array() && k < list.size(); ++k) {
      if (list[k].is_string()) events.push_back(list[k].get<std::string>());
    }
    const std::string action = Text(policies[i], "action");
    if (events.size() == 1 && events[0] == "PodEvicted" && action == "RestartJob" &&
        !policies[i].contains("exitCode")) {
      continue;  // what Tessera does with an evicted gang
    }
    std::string what;
    for (const std::string& e : events) what += (what.empty() ? "" : ", ") + e;
    if (policies[i].contains("exitCode"))
      what += (what.empty() ? "" : ", ") + std::string("exit code");
    warnings->push_back(
        p + ": not acted on: " + (what.empty() ? "a policy" : what) + " -> " +
        (action.empty() ? "no action" : action) +
        "; Tessera re-queues an evicted gang whole and restarts a failed pod by its "
        "restartPolicy and maxRetry");
  }
  return Status::Ok();
}

}  // namespace

// Volcano's JobSpec.
Result<std::vector<json>> VolcanoJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("VolcanoJobSpec"), warnings));
  TESSERA_RETURN_IF_ERROR(VolcanoPolicies(Member(spec, "policies"), "spec.policies", warnings));
  json job = json::object(), annotations = Member(d.meta, "annotations");
  CopyLifetime(spec, &job);
  if (spec.contains("minAvailable")) job["minMember"] = spec["minAvailable"];
  if (const json& estimate = Member(spec, "runningEstimate"); !estimate.empty()) {
    // Volcano's runtime hint (a duration, "2h"), which backfill uses.
    if (!estimate.is_string()) return FieldError("spec.runningEstimate", "must be a duration");
    auto ms = ParseDurationMs(estimate.get<std::string>(), "spec.runningEstimate", false);
    if (!ms.ok()) return ms.status();
    job["estimatedRuntimeSeconds"] = (*ms + 999) / 1000;
  }
  VolcanoQueue(spec, &job, &annotations);
  if (spec.contains("priorityClassName")) job["priorityClassName"] = spec["priorityClassName"];
  // Volcano's job plugins (ssh keys, headless service, env) set up the pods' network identity;
  // kept for the runner, not dropped.
  if (spec.contains("plugins")) {
    TESSERA_RETURN_IF_ERROR(
        OnlyFields(spec["plugins"], "spec.plugins", {"ssh", "svc", "env"},
                   "not supported: Tessera knows the ssh, svc and env plugins"));
    annotations["tessera.io/volcano-plugins"] = spec["plugins"].dump();
  }
  const json& tasks = Member(spec, "tasks");
  if (!tasks.is_array() || tasks.empty())
    return FieldError("spec.tasks", "must list at least one task");
  // Volcano's webhook gives a task without minAvailable its replicas, and a job without one the
  // sum of its tasks'; the scheduler holds each task to its own minimum only while the job's
  // minAvailable is at least that sum (JobInfo.CheckTaskValid).
  std::vector<int64_t> task_min(tasks.size(), 0);
  int64_t task_min_total = 0;
  bool any_task_min = false;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string p = Index("spec.tasks", i);
    const json& replicas = Member(tasks[i], "replicas");
    const json& min = Member(tasks[i], "minAvailable");
    task_min[i] = replicas.is_number_integer() ? replicas.get<int64_t>() : 1;
    if (!min.empty()) {
      if (!min.is_number_integer() || min.get<int64_t>() < 0 || min.get<int64_t>() > task_min[i]) {
        return FieldError(p + ".minAvailable",
                          "must be an integer from 0 to the task's replicas (" +
                              std::to_string(task_min[i]) + ")");
      }
      task_min[i] = min.get<int64_t>();
      any_task_min = true;
    }
    task_min_total += task_min[i];
  }
  const json& job_min = Member(spec, "minAvailable");
  if (!job_min.empty() && !job_min.is_number_integer()) {
    return FieldError("spec.minAvailable", "must be an integer");
  }
  const int64_t job_min_value = job_min.empty() ? 0 : job_min.get<int64_t>();
  if (job_min_value == 0 && any_task_min) job["minMember"] = task_min_total;
  const bool per_task = any_task_min && (job_min_value == 0 || job_min_value >= task_min_total);
  json out = json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string p = Index("spec.tasks", i);
    TESSERA_RETURN_IF_ERROR(KnownFields(tasks[i], p, KubeFieldsOf("VolcanoTaskSpec"), warnings));
    TESSERA_RETURN_IF_ERROR(
        VolcanoPolicies(Member(tasks[i], "policies"), p + ".policies", warnings));
    json task = {
        {"name", Member(tasks[i], "name").is_string() ? tasks[i]["name"]
                                                      : json("task" + std::to_string(i))},
        {"replicas", Member(tasks[i], "replicas").is_number() ? tasks[i]["replicas"] : json(1)}};
    const json& tmpl = Member(tasks[i], "template");
    TESSERA_RETURN_IF_ERROR(
        KnownFields(tmpl, p + ".template", KubeFieldsOf("PodTemplateSpec"), warnings));
    const PodContext ctx{d.ns, &Member(tmpl, "metadata"), false, "", warnings};
    TESSERA_RETURN_IF_ERROR(
        PodSpecToTask(Member(tmpl, "spec"), p + ".template.spec", ctx, &task, &job));
    const json& retry =
        tasks[i].contains("maxRetry") ? tasks[i]["maxRetry"] : Member(spec, "maxRetry");
    if (retry.is_number()) task["maxRetries"] = retry;
    if (per_task && task_min[i] > 0) task["minMember"] = task_min[i];
    out.push_back(task);
  }
  job["tasks"] = out;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

Result<std::vector<json>> VolcanoPodGroup(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("PodGroupSpec"), warnings));
  json pg = json::object(), annotations = Member(d.meta, "annotations");
  for (const char* k : {"minMember", "priorityClassName", "minTaskMember"}) {
    if (spec.contains(k)) pg[k] = spec[k];
  }
  VolcanoQueue(spec, &pg, &annotations);
  return std::vector<json>{
      Object("PodGroup", d.name, d.ns, Member(d.meta, "labels"), annotations, pg)};
}

namespace {

constexpr char kVolcanoFlavor[] = "volcano-default";
constexpr char kVolcanoCohort[] = "volcano";

}  // namespace

// A Volcano Queue as a Tessera Queue in the cohort "volcano" (which every Volcano queue shares
// and which lends the cluster's capacity): its weight the fair-sharing
// weight, guarantee (or deserved) its nominal quota, capability its cap (borrowing limit above
// the nominal), reclaimable whether the cohort may reclaim from it. With the ResourceFlavor and
// Cohort it needs. Jobs and PodGroups name it with `queue` from any namespace.
Result<std::vector<json>> VolcanoQueueKind(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("VolcanoQueueSpec"), warnings));
  static const char* kResources[] = {"nvidia.com/gpu", "cpu", "memory"};
  auto amounts = [&](const char* field) -> Result<json> {
    const json& m = field == std::string("guarantee") ? Member(Member(spec, field), "resource")
                                                      : Member(spec, field);
    json out = json::object();
    for (const auto& [name, v] : m.items()) {
      if (std::find(std::begin(kResources), std::end(kResources), name) == std::end(kResources)) {
        warnings->push_back("spec." + std::string(field) + "." + name +
                            ": not acted on: queues count nvidia.com/gpu, cpu and memory");
        continue;
      }
      out[name] = v;
    }
    return out;
  };
  Result<json> cap = amounts("capability");
  if (!cap.ok()) return cap.status();
  Result<json> nominal = amounts(Member(spec, "guarantee").empty() ? "deserved" : "guarantee");
  if (!nominal.ok()) return nominal.status();
  json resources = json::array();
  for (const char* r : kResources) {
    json q = {{"name", r}, {"nominalQuota", nominal->contains(r) ? (*nominal)[r] : json(0)}};
    if (cap->contains(r)) {
      // The cap above the nominal quota, as a quantity: capability - nominal.
      auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
      Result<Quantity> c = ParseQuantity(text((*cap)[r]), "spec.capability." + std::string(r));
      Result<Quantity> n = ParseQuantity(text(q["nominalQuota"]), "spec.guarantee");
      if (!c.ok()) return c.status();
      if (!n.ok()) return n.status();
      if (c->nano < n->nano) {
        return FieldError("spec.capability." + std::string(r), "is below the guarantee");
      }
      const __int128 above = c->nano - n->nano;
      q["borrowingLimit"] = std::to_string(static_cast<int64_t>(above)) + "n";
    }
    resources.push_back(q);
  }
  const json covered = json::array({"nvidia.com/gpu", "cpu", "memory"});
  json queue = {
      {"cohort", kVolcanoCohort},
      {"preemption", {{"withinClusterQueue", "LowerPriority"}, {"reclaimWithinCohort", "Any"}}},
      {"resourceGroups",
       json::array(
           {{{"coveredResources", covered},
             {"flavors", json::array({{{"name", kVolcanoFlavor}, {"resources", resources}}})}}})}};
  if (const json& w = Member(spec, "weight"); !w.empty()) queue["fairSharing"] = {{"weight", w}};
  if (const json& r = Member(spec, "reclaimable"); r.is_boolean()) queue["reclaimable"] = r;
  json annotations = Member(d.meta, "annotations");
  if (!annotations.is_object()) annotations = json::object();
  annotations["tessera.io/volcano-queue"] = "true";
  // The cohort lends what the cluster has: the scheduling loop sets its quota to the ready
  // nodes' capacity each cycle (the figures here stand until then).
  const json unbounded = json::array({{{"name", "nvidia.com/gpu"}, {"nominalQuota", 1000000}},
                                      {{"name", "cpu"}, {"nominalQuota", 1000000000}},
                                      {{"name", "memory"}, {"nominalQuota", "1Ei"}}});
  json cohort = {
      {"resourceGroups",
       json::array(
           {{{"coveredResources", covered},
             {"flavors", json::array({{{"name", kVolcanoFlavor}, {"resources", unbounded}}})}}})}};
  const json cohort_annotations = {{"tessera.io/volcano-cohort", "true"}};
  return std::vector<json>{
      Object("ResourceFlavor", kVolcanoFlavor, "", kEmpty, kEmpty, json::object()),
      Object("Cohort", kVolcanoCohort, "", kEmpty, cohort_annotations, cohort),
      Object("Queue", d.name, "", Member(d.meta, "labels"), annotations, queue)};
}

}  // namespace tessera::api::translate

namespace tessera::api {

using nlohmann::json;
using translate::Member;
using translate::Text;

bool IsVolcanoCommand(const json& doc) {
  return doc.is_object() && Text(doc, "kind") == "Command" &&
         Text(doc, "apiVersion").starts_with("bus.volcano.sh/");
}

Result<VolcanoCommand> ParseVolcanoCommand(const json& doc, std::string_view default_namespace,
                                           std::vector<std::string>* warnings) {
  std::vector<std::string> ignored;
  if (warnings == nullptr) warnings = &ignored;
  if (!IsVolcanoCommand(doc)) return FieldError("kind", "must be a bus.volcano.sh Command");
  if (Text(doc, "apiVersion") != "bus.volcano.sh/v1alpha1") {
    return FieldError("apiVersion", "must be bus.volcano.sh/v1alpha1");
  }
  TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", KubeFieldsOf("VolcanoCommand"), warnings));
  const json& meta = Member(doc, "metadata");
  TESSERA_RETURN_IF_ERROR(KnownFields(meta, "metadata", KubeFieldsOf("ObjectMeta"), warnings));
  VolcanoCommand c;
  c.name = Text(meta, "name");
  c.generate_name = Text(meta, "generateName");
  c.ns = Text(meta, "namespace").empty() ? std::string(default_namespace) : Text(meta, "namespace");
  if (c.name.empty() && c.generate_name.empty()) {
    return FieldError("metadata.name", "must be set (or metadata.generateName)");
  }
  TESSERA_RETURN_IF_ERROR(ValidateName(c.ns, true, "metadata.namespace"));
  const std::string action = Text(doc, "action");
  if (action == "CloseQueue" || action == "OpenQueue") {
    c.close = action == "CloseQueue";
  } else if (action.empty()) {
    return FieldError("action", "must be set (OpenQueue or CloseQueue)");
  } else {
    return FieldError("action", "\"" + action +
                                    "\" is not carried out here: Tessera takes OpenQueue and "
                                    "CloseQueue (suspend a job with its spec.suspend instead)");
  }
  const json& target = Member(doc, "target");
  static const FieldUse kTarget[] = {{"apiVersion", ""}, {"kind", ""},
                                     {"name", ""},       {"uid", ""},
                                     {"controller", ""}, {"blockOwnerDeletion", ""}};
  TESSERA_RETURN_IF_ERROR(KnownFields(target, "target", kTarget, warnings));
  if (Text(target, "kind") != "Queue" ||
      !Text(target, "apiVersion").starts_with("scheduling.volcano.sh/")) {
    return FieldError(
        "target", "must name a Queue of scheduling.volcano.sh (" + action + " acts on a queue)");
  }
  c.queue = Text(target, "name");
  if (c.queue.empty()) return FieldError("target.name", "must be set");
  c.doc = doc;
  c.doc["metadata"]["namespace"] = c.ns;
  return c;
}

}  // namespace tessera::api
