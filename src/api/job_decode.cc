// The decoding of a Tessera Job (api/kinds.h: DecodeJob): its tasks (each a pod set: resources,
// node selection and affinity, tolerations, the fields the agent runs it with, podFailurePolicy),
// its gang, array (completions), MPI launcher, lifetime and the pod that completes it.
#include <algorithm>
#include <cctype>

#include "api/fields.h"
#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kinds.h"
#include "api/kinds_common.h"
#include "api/object.h"
#include "api/pod_failure_policy.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/status_schema.h"

namespace tessera::api {

using kinds_detail::DecodeTolerations;
using kinds_detail::ForEachItem;
using kinds_detail::MetaString;
using kinds_detail::Spec;
using nlohmann::json;

namespace {

Result<core::SelectorOp> SelectorOpOf(const std::string& op, const std::string& path) {
  static const std::vector<std::pair<std::string_view, core::SelectorOp>> kOps = {
      {"In", core::SelectorOp::kIn},         {"NotIn", core::SelectorOp::kNotIn},
      {"Exists", core::SelectorOp::kExists}, {"DoesNotExist", core::SelectorOp::kDoesNotExist},
      {"Gt", core::SelectorOp::kGt},         {"Lt", core::SelectorOp::kLt}};
  for (const auto& [name, value] : kOps) {
    if (name == op) return value;
  }
  return FieldError(path,
                    "must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt; got \"" + op + "\"");
}

// A Kubernetes NodeSelectorTerm: matchExpressions on labels; matchFields on metadata.name
// (the node's kubernetes.io/hostname label).
Status DecodeTerm(const json& term, const std::string& path, core::NodeSelectorTerm* out) {
  Fields f(term, path, false);
  for (const char* list : {"matchExpressions", "matchFields"}) {
    TESSERA_RETURN_IF_ERROR(ForEachItem(f, list, [&](const json& item, const std::string& ipath) {
      Fields e(item, ipath, false);
      core::LabelRequirement r;
      std::string op;
      TESSERA_RETURN_IF_ERROR(e.String("key", &r.key, true));
      TESSERA_RETURN_IF_ERROR(e.String("operator", &op, true));
      TESSERA_RETURN_IF_ERROR(e.StringList("values", &r.values));
      TESSERA_RETURN_IF_ERROR(e.Finish());
      auto o = SelectorOpOf(op, e.At("operator"));
      if (!o.ok()) return o.status();
      r.op = *o;
      if (std::string_view(list) == "matchFields") {
        if (r.key != "metadata.name") {
          return FieldError(e.At("key"), "matchFields supports metadata.name only");
        }
        r.key = "kubernetes.io/hostname";
      }
      out->requirements.push_back(std::move(r));
      return Status::Ok();
    }));
  }
  return f.Finish();
}

// affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms},
// preferredDuringSchedulingIgnoredDuringExecution: [{weight, preference}]}}, as Kubernetes
// writes it.
Status DecodeNodeAffinity(const json& affinity, const std::string& path, core::PodSpec* pod) {
  Fields a(affinity, path, false);
  const json* node = a.Get("nodeAffinity");
  TESSERA_RETURN_IF_ERROR(a.Finish());
  if (node == nullptr) return Status::Ok();
  Fields n(*node, a.At("nodeAffinity"), false);
  if (const json* req = n.Get("requiredDuringSchedulingIgnoredDuringExecution")) {
    Fields r(*req, n.At("requiredDuringSchedulingIgnoredDuringExecution"), false);
    const json* terms = r.Get("nodeSelectorTerms");
    const std::string tpath = r.At("nodeSelectorTerms");
    if (terms == nullptr || !terms->is_array() || terms->empty()) {
      return FieldError(tpath, "must list at least one term");
    }
    for (size_t i = 0; i < terms->size(); ++i) {
      core::NodeSelectorTerm term;
      TESSERA_RETURN_IF_ERROR(DecodeTerm((*terms)[i], Index(tpath, i), &term));
      pod->required_terms.push_back(std::move(term));
    }
    TESSERA_RETURN_IF_ERROR(r.Finish());
  }
  TESSERA_RETURN_IF_ERROR(ForEachItem(
      n, "preferredDuringSchedulingIgnoredDuringExecution",
      [&](const json& item, const std::string& ipath) {
        Fields p(item, ipath, false);
        core::PreferredTerm term;
        int64_t weight = 0;
        TESSERA_RETURN_IF_ERROR(p.Int("weight", &weight, 1, 100, true));
        term.weight = static_cast<int32_t>(weight);
        const json* preference = p.Get("preference");
        if (preference == nullptr) return FieldError(p.At("preference"), "is required");
        TESSERA_RETURN_IF_ERROR(DecodeTerm(*preference, p.At("preference"), &term.term));
        TESSERA_RETURN_IF_ERROR(p.Finish());
        pod->preferred_terms.push_back(std::move(term));
        return Status::Ok();
      }));
  return n.Finish();
}

// The fields of a task the agent reads when it runs it (checked here, used there).
Status DecodeRunFields(Fields& t) {
  std::string text;
  TESSERA_RETURN_IF_ERROR(t.String("workingDir", &text));
  if (!text.empty() && text[0] != '/') {
    return FieldError(t.At("workingDir"), "must be an absolute path");
  }
  int pull = 0;
  TESSERA_RETURN_IF_ERROR(t.Enum("imagePullPolicy", {"IfNotPresent", "Always", "Never"}, &pull));
  int64_t grace = 0;
  TESSERA_RETURN_IF_ERROR(t.Int("terminationGracePeriodSeconds", &grace, 0, 86400 * 7));
  std::map<std::string, std::string> field_env;
  TESSERA_RETURN_IF_ERROR(t.StringMap("fieldEnv", &field_env));
  for (const auto& [var, field] : field_env) {
    if (field != "metadata.name" && field != "spec.nodeName" && field != "status.hostIP" &&
        field != "status.hostIPs" && field != "status.podIP" && field != "status.podIPs") {
      return FieldError(t.At("fieldEnv") + "." + var,
                        "must be metadata.name, spec.nodeName, status.hostIP(s) or "
                        "status.podIP(s)");
    }
  }
  return ForEachItem(t, "volumes", [&](const json& item, const std::string& ipath) {
    Fields v(item, ipath, false);
    std::string name, mount, host;
    bool empty_dir = false, read_only = false;
    TESSERA_RETURN_IF_ERROR(v.String("name", &name, true));
    TESSERA_RETURN_IF_ERROR(ValidateName(name, true, v.At("name")));
    TESSERA_RETURN_IF_ERROR(v.String("mountPath", &mount, true));
    TESSERA_RETURN_IF_ERROR(v.String("hostPath", &host));
    TESSERA_RETURN_IF_ERROR(v.Bool("emptyDir", &empty_dir));
    TESSERA_RETURN_IF_ERROR(v.Bool("readOnly", &read_only));
    TESSERA_RETURN_IF_ERROR(v.Finish());
    if (mount.empty() || mount[0] != '/') {
      return FieldError(v.At("mountPath"), "must be an absolute path");
    }
    if (host.empty() == !empty_dir) {
      return FieldError(v.path(), "must give one of hostPath (an absolute path) or emptyDir: true");
    }
    if (!host.empty() && host[0] != '/') {
      return FieldError(v.At("hostPath"), "must be an absolute path");
    }
    return Status::Ok();
  });
}

}  // namespace

namespace {

// spec.completions and the fields that go with it (Kubernetes' names and defaults). An array
// has one task of restartPolicy Never, whose replicas are its parallelism: a failed index is
// retried as a new pod, counted against backoffLimit or backoffLimitPerIndex.
Status DecodeArray(Fields& spec, JobSpec* job) {
  int64_t completions = 0, backoff = 6, per_index = -1, max_failed = -1;
  int mode = 0;
  TESSERA_RETURN_IF_ERROR(spec.Int("completions", &completions, 1, 100'000));
  TESSERA_RETURN_IF_ERROR(spec.Enum("completionMode", {"NonIndexed", "Indexed"}, &mode));
  TESSERA_RETURN_IF_ERROR(spec.Int("backoffLimit", &backoff, 0, INT32_MAX));
  TESSERA_RETURN_IF_ERROR(spec.Int("backoffLimitPerIndex", &per_index, 0, INT32_MAX));
  TESSERA_RETURN_IF_ERROR(spec.Int("maxFailedIndexes", &max_failed, 0, 100'000));
  const bool any = spec.Get("completions") != nullptr || spec.Get("completionMode") != nullptr ||
                   spec.Get("backoffLimit") != nullptr ||
                   spec.Get("backoffLimitPerIndex") != nullptr ||
                   spec.Get("maxFailedIndexes") != nullptr;
  if (!any) return Status::Ok();
  if (spec.Get("completions") == nullptr) {
    return FieldError(spec.At("completions"),
                      "is required with completionMode, backoffLimit, backoffLimitPerIndex and "
                      "maxFailedIndexes");
  }
  if (job->tasks.size() != 1) {
    return FieldError(spec.At("completions"), "an array has exactly one task");
  }
  const TaskRun& task = job->tasks[0];
  const std::string t = spec.At("tasks") + "[0]";
  if (task.restart_policy != "Never" || task.max_retries != 0) {
    return FieldError(t + ".restartPolicy",
                      "an array's task must be Never with no maxRetries: a failed index is "
                      "retried as a new pod (backoffLimit, backoffLimitPerIndex)");
  }
  if (task.replicas > completions) {
    return FieldError(t + ".replicas", "is the array's parallelism: at most completions (" +
                                           std::to_string(completions) + ")");
  }
  if (mode != 1 && (per_index >= 0 || max_failed >= 0)) {
    return FieldError(spec.At(per_index >= 0 ? "backoffLimitPerIndex" : "maxFailedIndexes"),
                      "requires completionMode Indexed");
  }
  if (max_failed >= 0 && per_index < 0) {
    return FieldError(spec.At("maxFailedIndexes"), "requires backoffLimitPerIndex");
  }
  if (job->workload.min_member != 0 || job->workload.pod_sets[0].min_count != 0) {
    return FieldError(spec.At("minMember"),
                      "an array is not a gang: each task starts as it finds room");
  }
  ArraySpec a;
  a.completions = static_cast<int32_t>(completions);
  a.parallelism = task.replicas;
  a.backoff_limit = static_cast<int32_t>(backoff);
  a.backoff_limit_per_index = static_cast<int32_t>(per_index);
  a.max_failed_indexes = static_cast<int32_t>(max_failed);
  if (const json* tasks = spec.Get("tasks"); tasks != nullptr && tasks->is_array()) {
    a.pod_failure_policy = Member((*tasks)[0], "podFailurePolicy");
  }
  // The Kubernetes names of its pods, "<ns>/<job>-<task>-<index>", for the policy's messages.
  a.pod_prefix = job->workload.name + "-";
  // More tasks than run at once: one placed is enough to start; as many as run at once: they
  // start together, as a Job's pods do under Kueue.
  if (a.completions > a.parallelism) job->workload.min_member = 1;
  job->array = a;
  return Status::Ok();
}

}  // namespace

namespace {

// One of a Job's tasks, `i` of spec.tasks at `tpath`, into its run and pod set (`job` holds
// the tasks before it).
Status DecodeTask(const json& task, const std::string& tpath, size_t i, Fields& spec,
                  const JobSpec& job, TaskRun* out_run, core::PodSet* out_set) {
  TaskRun& run = *out_run;
  core::PodSet& set = *out_set;
  Fields t(task, Index(tpath, i), false);
  TESSERA_RETURN_IF_ERROR(t.String("name", &run.name, true));
  TESSERA_RETURN_IF_ERROR(ValidateName(run.name, true, t.At("name")));
  for (const TaskRun& other : job.tasks) {
    if (other.name == run.name)
      return FieldError(t.At("name"), "duplicate task \"" + run.name + "\"");
  }
  int64_t replicas = 1, retries = 0, task_min = 0;
  TESSERA_RETURN_IF_ERROR(t.Int("replicas", &replicas, 1, 10'000));
  TESSERA_RETURN_IF_ERROR(t.Int("minMember", &task_min, 0, 10'000));
  if (task_min > replicas) {
    return FieldError(t.At("minMember"), "is " + std::to_string(task_min) +
                                             ", more than the task's " + std::to_string(replicas) +
                                             " replicas");
  }
  set.min_count = static_cast<int32_t>(task_min);
  TESSERA_RETURN_IF_ERROR(t.String("image", &run.image));
  TESSERA_RETURN_IF_ERROR(t.StringList("command", &run.command));
  TESSERA_RETURN_IF_ERROR(t.StringList("args", &run.args));
  TESSERA_RETURN_IF_ERROR(t.StringMap("env", &run.env));
  int restart = 0;
  TESSERA_RETURN_IF_ERROR(t.Enum("restartPolicy", {"Never", "OnFailure", "Always"}, &restart));
  run.restart_policy = std::vector<std::string>{"Never", "OnFailure", "Always"}[restart];
  TESSERA_RETURN_IF_ERROR(t.Int("maxRetries", &retries, 0, INT32_MAX));
  if (const json* policy = t.Get("podFailurePolicy"); policy != nullptr && !policy->is_null()) {
    // As a batch/v1 Job's translation writes it: {container, rules}.
    json rules = *policy;
    const json container =
        rules.is_object() && rules.contains("container") ? rules["container"] : json("main");
    if (!container.is_string()) {
      return FieldError(t.At("podFailurePolicy") + ".container", "must be a container name");
    }
    if (rules.is_object()) rules.erase("container");
    auto checked = CheckPodFailurePolicy(
        rules, t.At("podFailurePolicy"), json::array({{{"name", container}}}), run.restart_policy,
        t.At("restartPolicy"), spec.Get("backoffLimitPerIndex") != nullptr);
    if (!checked.ok()) return checked.status();
  }
  constexpr int64_t kMaxId = (int64_t{1} << 31) - 2;  // uid_t, without (uid_t)-1
  TESSERA_RETURN_IF_ERROR(t.Int("runAsUser", &run.run_as_user, 0, kMaxId));
  TESSERA_RETURN_IF_ERROR(t.Int("runAsGroup", &run.run_as_group, 0, kMaxId));
  run.replicas = static_cast<int32_t>(replicas);
  run.max_retries = static_cast<int32_t>(retries);
  set.name = run.name;
  set.count = run.replicas;
  set.pod.name = run.name;
  ResourceList limits, requests;
  if (const json* res = t.Get("resources")) {
    Fields r(*res, t.At("resources"), false);
    TESSERA_RETURN_IF_ERROR(r.StringMap("limits", &limits, true));
    TESSERA_RETURN_IF_ERROR(r.StringMap("requests", &requests, true));
    TESSERA_RETURN_IF_ERROR(r.Finish());
  }
  TESSERA_RETURN_IF_ERROR(ApplyContainerResources(limits, requests, t.At("resources"), &set.pod));
  TESSERA_RETURN_IF_ERROR(t.StringMap("nodeSelector", &set.pod.node_selector));
  auto tols = DecodeTolerations(t, "tolerations");
  if (!tols.ok()) return tols.status();
  set.pod.tolerations = std::move(tols).value();
  TESSERA_RETURN_IF_ERROR(t.StringList("gpuModels", &set.pod.gpu_models));
  if (const json* affinity = t.Get("affinity")) {
    TESSERA_RETURN_IF_ERROR(DecodeNodeAffinity(*affinity, t.At("affinity"), &set.pod));
  }
  TESSERA_RETURN_IF_ERROR(DecodeRunFields(t));
  TESSERA_RETURN_IF_ERROR(t.Finish());
  if (Status s = core::ValidatePodSpec(set.pod); !s.ok()) return FieldError(t.path(), s.message());
  return Status::Ok();
}

// spec.completesWith: the task (every pod of it) or the one pod whose success is the Job's: the
// others stop then.
Status CheckCompletesWith(Fields& spec, const JobSpec& job) {
  std::string completes_with;
  TESSERA_RETURN_IF_ERROR(spec.String("completesWith", &completes_with));
  if (!completes_with.empty()) {
    bool found = false;
    for (const TaskRun& t : job.tasks) {
      found = found || t.name == completes_with;
      for (int32_t r = 0; r < t.replicas && !found; ++r) {
        found = completes_with == t.name + "-" + std::to_string(r);
      }
    }
    if (!found) {
      return FieldError(spec.At("completesWith"), "must name a task or a pod (<task>-<index>)");
    }
  }
  return Status::Ok();
}

// spec.mpi, an MPI job (Kubeflow's MPIJob): its launcher task runs mpirun over the other tasks'
// pods, reached through tessera exec (the agent gives it a hostfile and an rsh agent).
Status CheckMpi(Fields& spec, const JobSpec& job) {
  if (const json* mpi = spec.Get("mpi")) {
    Fields m(*mpi, spec.At("mpi"), false);
    std::string launcher;
    int64_t slots = 1;
    TESSERA_RETURN_IF_ERROR(m.String("launcher", &launcher, true));
    TESSERA_RETURN_IF_ERROR(m.Int("slotsPerWorker", &slots, 1, 1024));
    TESSERA_RETURN_IF_ERROR(m.Finish());
    auto it = std::find_if(job.tasks.begin(), job.tasks.end(),
                           [&](const TaskRun& t) { return t.name == launcher; });
    if (it == job.tasks.end() || it->replicas != 1) {
      return FieldError(m.At("launcher"), "must name a task of one replica");
    }
    if (job.tasks.size() < 2) return FieldError(m.At("launcher"), "needs workers: another task");
  }
  return Status::Ok();
}

}  // namespace

Result<JobSpec> DecodeJob(const json& obj) {
  JobSpec job;
  core::Workload& w = job.workload;
  w.namespace_name = MetaString(obj, "namespace");
  w.name = w.namespace_name + "/" + MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  TESSERA_RETURN_IF_ERROR(spec.String("queue", &w.local_queue));
  TESSERA_RETURN_IF_ERROR(spec.String("priorityClassName", &w.priority_class));
  TESSERA_RETURN_IF_ERROR(spec.String("podGroup", &job.pod_group));
  TESSERA_RETURN_IF_ERROR(spec.Bool("suspend", &job.suspend));
  TESSERA_RETURN_IF_ERROR(spec.StringList("schedulingGates", &job.scheduling_gates));
  int64_t runtime_s = 0, min_member = 0;
  TESSERA_RETURN_IF_ERROR(spec.Int("estimatedRuntimeSeconds", &runtime_s, 0, 10LL * 365 * 86400));
  w.estimated_runtime_ms = runtime_s * 1000;
  TESSERA_RETURN_IF_ERROR(spec.Int("minMember", &min_member, 0, 100'000));
  w.min_member = static_cast<int32_t>(min_member);
  const json* tasks = spec.Get("tasks");
  const std::string tpath = spec.At("tasks");
  if (tasks == nullptr || !tasks->is_array() || tasks->empty()) {
    return FieldError(tpath, "must list at least one task");
  }
  if (tasks->size() > 64) return FieldError(tpath, "at most 64 tasks");
  int64_t total = 0;
  for (size_t i = 0; i < tasks->size(); ++i) {
    TaskRun run;
    core::PodSet set;
    TESSERA_RETURN_IF_ERROR(DecodeTask((*tasks)[i], tpath, i, spec, job, &run, &set));
    const int64_t replicas = run.replicas;
    total += replicas;
    if (total > kMaxJobPods) {
      return FieldError(tpath, "more than " + std::to_string(kMaxJobPods) +
                                   " pods in all (the tasks' replicas): a Job's status lists "
                                   "each of its pods");
    }
    job.tasks.push_back(std::move(run));
    w.pod_sets.push_back(std::move(set));
  }
  // Enforced by the scheduling loop: how long it may run once admitted, be kept once finished.
  int64_t deadline_s = 0, ttl_s = 0;
  TESSERA_RETURN_IF_ERROR(spec.Int("activeDeadlineSeconds", &deadline_s, 1, 10LL * 365 * 86400));
  TESSERA_RETURN_IF_ERROR(spec.Int("ttlSecondsAfterFinished", &ttl_s, 0, 10LL * 365 * 86400));
  bool tf_config = false;
  TESSERA_RETURN_IF_ERROR(spec.Bool("tfConfig", &tf_config));
  TESSERA_RETURN_IF_ERROR(CheckCompletesWith(spec, job));
  TESSERA_RETURN_IF_ERROR(CheckMpi(spec, job));
  TESSERA_RETURN_IF_ERROR(DecodeArray(spec, &job));
  if (w.min_member > total) {
    return FieldError(spec.At("minMember"), "is " + std::to_string(w.min_member) +
                                                ", more than the job's " + std::to_string(total) +
                                                " pods");
  }
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return job;
}

}  // namespace tessera::api
