// Kubernetes' v1 Pod and batch/v1 Job as Tessera Jobs, and the pod template every family
// translates (see api/translate.h).
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/fields.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/object.h"
#include "api/pod_failure_policy.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/translate.h"

namespace tessera::api::translate {

using nlohmann::json;

namespace {

// Sums a resource over containers: "cpu" and "memory" add up; any other resource may be set by
// one container only.
Status AddResources(const json& list, const std::string& path, json* sum) {
  if (list.is_null()) return Status::Ok();
  if (!list.is_object()) return FieldError(path, "must be a map of quantities");
  for (const auto& [name, value] : list.items()) {
    const std::string p = path + "." + name;
    if (!value.is_string() && !value.is_number()) return FieldError(p, "must be a quantity");
    if (!sum->contains(name)) {
      (*sum)[name] = value;
      continue;
    }
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage") {
      return FieldError(p, "set by two containers; one container of a pod may request it");
    }
    auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    Result<Quantity> a = ParseQuantity(text((*sum)[name]), p);
    Result<Quantity> b = ParseQuantity(text(value), p);
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    const __int128 total = a->nano + b->nano;
    if (total > std::numeric_limits<int64_t>::max() || total < 0) return FieldError(p, "is absurd");
    (*sum)[name] = std::to_string(static_cast<int64_t>(total)) + "n";
  }
  return Status::Ok();
}

// securityContext: runAsUser and runAsGroup onto the task; runAsNonRoot checked against them.
Status RunAs(const json& context, const std::string& path, json* task, Warnings* warnings) {
  if (context.is_null()) return Status::Ok();
  TESSERA_RETURN_IF_ERROR(KnownFields(context, path, KubeFieldsOf("SecurityContext"), warnings));
  for (const char* k : {"runAsUser", "runAsGroup"}) {
    if (!context.contains(k)) continue;
    const json& v = context[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 2147483646) {
      return FieldError(path + "." + k, "must be an id from 0 to 2147483646");
    }
    (*task)[k] = v;
  }
  const json non_root = context.contains("runAsNonRoot") ? context["runAsNonRoot"] : json();
  if (!non_root.is_null() && !non_root.is_boolean()) {
    return FieldError(path + ".runAsNonRoot", "must be true or false");
  }
  if (non_root == true) {
    const json& uid = Member(*task, "runAsUser");
    if (uid == 0) {
      return FieldError(path + ".runAsNonRoot", "is true but runAsUser is 0 (root)");
    }
    if (!uid.is_number()) {
      warnings->push_back(path +
                          ".runAsNonRoot: without runAsUser the task runs as the node "
                          "agent's user, which may be root");
    }
  }
  return Status::Ok();
}

// A resourceFieldRef's value: the container's limit or request divided by the divisor,
// rounded up (Kubernetes' rule); empty with a warning when the container does not set it.
Result<std::string> ResourceFieldValue(const json& ref, const json& resources,
                                       const std::string& path, Warnings* warnings) {
  TESSERA_RETURN_IF_ERROR(OnlyFields(ref, path, {"containerName", "resource", "divisor"},
                                     "unknown field of a resourceFieldRef"));
  const std::string resource = Text(ref, "resource");
  const size_t dot = resource.find('.');
  const std::string which = resource.substr(0, dot);
  if (dot == std::string::npos || (which != "limits" && which != "requests")) {
    return FieldError(path + ".resource",
                      "must be limits.<resource> or requests.<resource>, got \"" + resource + "\"");
  }
  const json& v = Member(Member(resources, which.c_str()), resource.substr(dot + 1).c_str());
  if (!v.is_string() && !v.is_number()) {
    warnings->push_back(path + ": the container sets no " + resource + "; the variable is not set");
    return std::string();
  }
  Result<Quantity> q = ParseQuantity(v.is_string() ? v.get<std::string>() : v.dump(), path);
  if (!q.ok()) return q.status();
  const json& d = Member(ref, "divisor");
  Quantity divisor{1'000'000'000};
  if (d.is_string() || d.is_number()) {
    Result<Quantity> dq =
        ParseQuantity(d.is_string() ? d.get<std::string>() : d.dump(), path + ".divisor");
    if (!dq.ok()) return dq.status();
    if (dq->nano <= 0) return FieldError(path + ".divisor", "must be positive");
    divisor = *dq;
  }
  const __int128 n = (q->nano + divisor.nano - 1) / divisor.nano;
  return std::to_string(static_cast<int64_t>(n));
}

// One env entry's value from valueFrom: fields known when translating are resolved now; the
// pod's name, node and address are left to the agent (task.fieldEnv); ConfigMaps and Secrets,
// which Tessera does not have, leave the variable unset with a warning. False when unset.
Status EnvFrom(const json& from, const std::string& path, const std::string& var,
               const json& resources, const PodContext& ctx, json* env, json* field_env) {
  TESSERA_RETURN_IF_ERROR(KnownFields(from, path, KubeFieldsOf("EnvVarSource"), ctx.warnings));
  if (const json& ref = Member(from, "fieldRef"); !ref.empty()) {
    const std::string fp = Text(ref, "fieldPath");
    const std::string at = path + ".fieldRef.fieldPath";
    auto keyed = [&](std::string_view prefix) -> std::optional<std::string> {
      if (!fp.starts_with(prefix) || !fp.ends_with("']")) return std::nullopt;
      return fp.substr(prefix.size(), fp.size() - prefix.size() - 2);
    };
    if (fp == "metadata.namespace") {
      (*env)[var] = ctx.ns;
    } else if (fp == "metadata.name" && ctx.bare_pod) {
      (*env)[var] = ctx.pod_name;
    } else if (fp == "metadata.name" || fp == "spec.nodeName" || fp == "status.hostIP" ||
               fp == "status.hostIPs" || fp == "status.podIP" || fp == "status.podIPs") {
      (*field_env)[var] = fp;
    } else if (fp == "metadata.annotations['batch.kubernetes.io/job-completion-index']" ||
               fp == "metadata.labels['batch.kubernetes.io/job-completion-index']") {
      (*field_env)[var] = "completionIndex";  // an Indexed Job's, known when the pod starts
    } else if (fp == "spec.serviceAccountName") {
      (*env)[var] = "default";
    } else if (auto k = keyed("metadata.labels['")) {
      (*env)[var] = Text(Member(*ctx.meta, "labels"), k->c_str());
    } else if (auto a = keyed("metadata.annotations['")) {
      (*env)[var] = Text(Member(*ctx.meta, "annotations"), a->c_str());
    } else if (fp == "metadata.uid") {
      ctx.warnings->push_back(at + ": Tessera objects have no uid; the variable is not set");
    } else {
      return FieldError(at, "\"" + fp +
                                "\" is not a field a pod can read (metadata.name, "
                                "metadata.namespace, metadata.labels['key'], "
                                "metadata.annotations['key'], spec.nodeName, "
                                "spec.serviceAccountName, status.hostIP, status.podIP)");
    }
    return Status::Ok();
  }
  if (const json& ref = Member(from, "resourceFieldRef"); !ref.empty()) {
    Result<std::string> v =
        ResourceFieldValue(ref, resources, path + ".resourceFieldRef", ctx.warnings);
    if (!v.ok()) return v.status();
    if (!v->empty()) (*env)[var] = *v;
  }
  return Status::Ok();
}

// The container's ports, as environment: TESSERA_PORT_<NAME> per named port and TESSERA_PORTS
// listing them all (a process binds them on the node itself).
Status Ports(const json& ports, const std::string& path, json* env, Warnings* warnings) {
  if (ports.empty()) return Status::Ok();
  if (!ports.is_array()) return FieldError(path, "must be a list");
  std::string all;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string p = Index(path, i);
    TESSERA_RETURN_IF_ERROR(KnownFields(ports[i], p, KubeFieldsOf("ContainerPort"), warnings));
    const json& port = Member(ports[i], "containerPort");
    if (!port.is_number_integer() || port.get<int64_t>() < 1 || port.get<int64_t>() > 65535) {
      return FieldError(p + ".containerPort", "must be a port number from 1 to 65535");
    }
    const json& host = Member(ports[i], "hostPort");
    if (!host.empty() && host != port) {
      warnings->push_back(p + ".hostPort: not acted on: the task listens on containerPort " +
                          port.dump() + " itself");
    }
    all += (all.empty() ? "" : ",") + port.dump();
    if (const std::string name = Text(ports[i], "name"); !name.empty()) {
      (*env)["TESSERA_PORT_" + EnvVarSuffix(name)] = port.dump();
    }
  }
  if (!all.empty()) (*env)["TESSERA_PORTS"] = all;
  return Status::Ok();
}

// The pod's volumes as the first container mounts them: hostPath and emptyDir are provided
// (task.volumes); other kinds are not, with a warning.
Status Volumes(const json& pod, const json& container, const std::string& path,
               const std::string& cpath, bool process, json* task, Warnings* warnings) {
  const json& volumes = Member(pod, "volumes");
  if (!volumes.is_array() && !volumes.empty())
    return FieldError(path + ".volumes", "must be a list");
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
    const std::string name = Text(volumes[i], "name");
    if (name.empty()) return FieldError(Index(path + ".volumes", i) + ".name", "must be set");
    if (!by_name.emplace(name, i).second) {
      return FieldError(Index(path + ".volumes", i) + ".name", "duplicate volume \"" + name + "\"");
    }
  }
  const json& mounts = Member(container, "volumeMounts");
  if (!mounts.is_array() && !mounts.empty()) {
    return FieldError(cpath + ".volumeMounts", "must be a list");
  }
  json out = json::array();
  for (size_t i = 0; mounts.is_array() && i < mounts.size(); ++i) {
    const std::string mp = Index(cpath + ".volumeMounts", i);
    TESSERA_RETURN_IF_ERROR(KnownFields(mounts[i], mp, KubeFieldsOf("VolumeMount"), warnings));
    const std::string name = Text(mounts[i], "name"), mount_path = Text(mounts[i], "mountPath");
    auto v = by_name.find(name);
    if (v == by_name.end())
      return FieldError(mp + ".name", "no volume \"" + name + "\" in the pod");
    if (mount_path.empty() || mount_path[0] != '/') {
      return FieldError(mp + ".mountPath", "must be an absolute path");
    }
    const json& vol = volumes[v->second];
    const std::string vp = Index(path + ".volumes", v->second);
    json m = {{"name", name}, {"mountPath", mount_path}};
    if (Member(mounts[i], "readOnly") == true) m["readOnly"] = true;
    const std::string env = "$TESSERA_VOLUME_" + EnvVarSuffix(name);
    if (const json& hp = Member(vol, "hostPath"); !hp.empty()) {
      const std::string host = Text(hp, "path");
      if (host.empty() || host[0] != '/') {
        return FieldError(vp + ".hostPath.path", "must be an absolute path");
      }
      m["hostPath"] = host;
      if (!Text(hp, "type").empty()) {
        warnings->push_back(vp + ".hostPath.type: not acted on: the path is used as it is");
      }
      if (process && host != mount_path) {
        warnings->push_back(mp + ": a process sees the node's files: " + host + " is not at " +
                            mount_path + " (its path is in " + env + ")");
      }
    } else if (vol.contains("emptyDir")) {
      m["emptyDir"] = true;
      if (!Member(vol, "emptyDir").empty()) {
        warnings->push_back(vp +
                            ".emptyDir: not acted on: medium and sizeLimit (a directory on "
                            "the node's disk)");
      }
      if (process) {
        warnings->push_back(mp + ": a process gets a scratch directory for it, not at " +
                            mount_path + " (its path is in " + env + ")");
      }
    } else {
      std::string kind = "unknown";
      for (const auto& [k, x] : vol.items()) {
        if (k != "name") kind = k;
      }
      warnings->push_back(mp + ": not acted on: volumes of kind " + kind +
                          " are not provided (Tessera provides hostPath and emptyDir)");
      continue;
    }
    out.push_back(std::move(m));
  }
  if (!out.empty()) (*task)["volumes"] = std::move(out);
  return Status::Ok();
}
}  // namespace

// Translates a pod template's spec into a task (without name and replicas) and the job-level
// fields it implies (priorityClassName, schedulingGates).
Status PodSpecToTask(const json& pod, const std::string& path, const PodContext& ctx, json* task,
                     json* job) {
  Warnings* warnings = ctx.warnings;
  TESSERA_RETURN_IF_ERROR(KnownFields(pod, path, KubeFieldsOf("PodSpec"), warnings));
  TESSERA_RETURN_IF_ERROR(
      RunAs(Member(pod, "securityContext"), path + ".securityContext", task, warnings));
  const json& containers = Member(pod, "containers");
  const std::string cpath = path + ".containers";
  if (!containers.is_array() || containers.empty()) {
    return FieldError(cpath, "must list at least one container");
  }
  json limits = json::object(), requests = json::object();
  json env = json::object(), field_env = json::object();
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    const std::string p = Index(cpath, i);
    TESSERA_RETURN_IF_ERROR(KnownFields(c, p, KubeFieldsOf("Container"), warnings));
    const json& res = Member(c, "resources");
    TESSERA_RETURN_IF_ERROR(
        KnownFields(res, p + ".resources", KubeFieldsOf("ResourceRequirements"), warnings));
    // Checked here too, so that errors name the field as the user wrote it.
    Fields rf(res, p + ".resources");
    ResourceList own_limits, own_requests;
    TESSERA_RETURN_IF_ERROR(rf.StringMap("limits", &own_limits, true));
    TESSERA_RETURN_IF_ERROR(rf.StringMap("requests", &own_requests, true));
    core::PodSpec probe;
    TESSERA_RETURN_IF_ERROR(
        ApplyContainerResources(own_limits, own_requests, p + ".resources", &probe));
    TESSERA_RETURN_IF_ERROR(AddResources(Member(res, "limits"), p + ".resources.limits", &limits));
    TESSERA_RETURN_IF_ERROR(
        AddResources(Member(res, "requests"), p + ".resources.requests", &requests));
    if (i > 0) {
      // Its requests count; it does not run.
      warnings->push_back(p + ": not acted on: Tessera runs the first container of a pod; " +
                          "container \"" + Text(c, "name") +
                          "\" is not run (its requests are counted)");
      continue;
    }
    // The container's user and group override the pod's, as in Kubernetes.
    TESSERA_RETURN_IF_ERROR(
        RunAs(Member(c, "securityContext"), p + ".securityContext", task, warnings));
    for (const char* k : {"image", "command", "args", "workingDir", "imagePullPolicy"}) {
      if (c.contains(k) && !c[k].is_null()) (*task)[k] = c[k];
    }
    TESSERA_RETURN_IF_ERROR(Ports(Member(c, "ports"), p + ".ports", &env, warnings));
    TESSERA_RETURN_IF_ERROR(Volumes(pod, c, path, p, !c.contains("image"), task, warnings));
    const json& e = Member(c, "env");
    if (!e.is_array() && !e.empty()) return FieldError(p + ".env", "must be a list");
    for (size_t k = 0; e.is_array() && k < e.size(); ++k) {
      const std::string ep = Index(p + ".env", k);
      TESSERA_RETURN_IF_ERROR(KnownFields(e[k], ep, KubeFieldsOf("EnvVar"), warnings));
      if (!Member(e[k], "name").is_string()) return FieldError(ep + ".name", "must be a string");
      const std::string var = Text(e[k], "name");
      if (const json& from = Member(e[k], "valueFrom"); !from.empty()) {
        TESSERA_RETURN_IF_ERROR(EnvFrom(from, ep + ".valueFrom", var, res, ctx, &env, &field_env));
      } else {
        env[var] = Member(e[k], "value").is_string() ? e[k]["value"] : json("");
      }
    }
  }
  json resources = json::object();
  if (!limits.empty()) resources["limits"] = limits;
  if (!requests.empty()) resources["requests"] = requests;
  if (!resources.empty()) (*task)["resources"] = resources;
  if (!env.empty()) (*task)["env"] = env;
  if (!field_env.empty()) (*task)["fieldEnv"] = field_env;
  for (const char* k :
       {"nodeSelector", "tolerations", "restartPolicy", "terminationGracePeriodSeconds"}) {
    if (pod.contains(k) && !pod[k].is_null()) (*task)[k] = pod[k];
  }
  if (const std::string node = Text(pod, "nodeName"); !node.empty()) {
    // Kubernetes binds such a pod to the node directly; here it is a selector on the node's
    // name (checked like any other).
    if (!(*task)["nodeSelector"].is_object()) (*task)["nodeSelector"] = json::object();
    (*task)["nodeSelector"]["kubernetes.io/hostname"] = node;
  }
  if (const json& affinity = Member(pod, "affinity"); !affinity.empty()) {
    TESSERA_RETURN_IF_ERROR(
        KnownFields(affinity, path + ".affinity", KubeFieldsOf("Affinity"), warnings));
    if (affinity.contains("nodeAffinity")) {
      (*task)["affinity"] = {{"nodeAffinity", affinity["nodeAffinity"]}};
    }
  }
  if (pod.contains("priorityClassName")) (*job)["priorityClassName"] = pod["priorityClassName"];
  if (const json& gates = Member(pod, "schedulingGates"); !gates.empty()) {
    if (!gates.is_array()) return FieldError(path + ".schedulingGates", "must be a list");
    json names = json::array();
    for (size_t i = 0; i < gates.size(); ++i) {
      const std::string gp = Index(path + ".schedulingGates", i);
      TESSERA_RETURN_IF_ERROR(OnlyFields(gates[i], gp, {"name"}, "unknown field"));
      if (Text(gates[i], "name").empty()) return FieldError(gp + ".name", "must be set");
      names.push_back(gates[i]["name"]);
    }
    (*job)["schedulingGates"] = names;
  }
  return Status::Ok();
}

// The queue a Kubernetes object names with the Kueue label, if any.
void QueueFromLabel(const json& meta, json* spec) {
  const std::string q = Text(Member(meta, "labels"), "kueue.x-k8s.io/queue-name");
  if (!q.empty()) (*spec)["queue"] = q;
}

// The PodGroup a pod joins (Volcano's annotation).
void GroupFromAnnotation(const json& meta, json* spec) {
  for (const char* key : {"scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name"}) {
    const std::string g = Text(Member(meta, "annotations"), key);
    if (!g.empty()) (*spec)["podGroup"] = g;
  }
}

Result<std::vector<json>> Pod(const Doc& d, const json& doc, Warnings* warnings) {
  json job = json::object(), task = {{"name", "main"}, {"replicas", 1}};
  const PodContext ctx{d.ns, &d.meta, true, d.name, warnings};
  TESSERA_RETURN_IF_ERROR(PodSpecToTask(Member(doc, "spec"), "spec", ctx, &task, &job));
  const json& containers = doc["spec"]["containers"];
  if (containers[0].contains("name") && containers[0]["name"].is_string()) {
    task["name"] = containers[0]["name"];
  }
  if (!task.contains("restartPolicy")) task["restartPolicy"] = "Always";
  job["tasks"] = json::array({task});
  QueueFromLabel(d.meta, &job);
  GroupFromAnnotation(d.meta, &job);
  // Volcano's queue of a Pod (its annotation) when no Kueue label names one.
  json annotations = Member(d.meta, "annotations");
  const std::string volcano_queue = Text(annotations, "scheduling.volcano.sh/queue-name");
  if (!volcano_queue.empty() && !job.contains("queue")) {
    VolcanoQueue({{"queue", volcano_queue}}, &job, &annotations);
  }
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

// A Job's lifetime as Kubernetes (and Volcano and Kubeflow's runPolicy) write it: how long it
// may run once started (activeDeadlineSeconds) and be kept once finished
// (ttlSecondsAfterFinished). Tessera's Job takes both as they are (DecodeJob checks them).
void CopyLifetime(const json& from, json* job) {
  for (const char* k : {"activeDeadlineSeconds", "ttlSecondsAfterFinished"}) {
    if (from.is_object() && from.contains(k)) (*job)[k] = from[k];
  }
}

// Kubernetes' default selector, which the served Job carries and kubectl edit and replace send
// back: not a choice of the client's, so not warned of.
bool DefaultSelector(const json& spec) {
  const json& selector = Member(spec, "selector");
  const json& labels = Member(selector, "matchLabels");
  return selector.is_object() && selector.size() == 1 && labels.is_object() && labels.size() == 1 &&
         labels.contains("batch.kubernetes.io/controller-uid") &&
         Member(spec, "manualSelector") != true;
}

Result<std::vector<json>> BatchJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  if (DefaultSelector(spec)) {
    json rest = spec;
    rest.erase("selector");
    TESSERA_RETURN_IF_ERROR(KnownFields(rest, "spec", KubeFieldsOf("JobSpec"), warnings));
  } else {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("JobSpec"), warnings));
  }
  json job = json::object(), task = {{"name", "main"}};
  CopyLifetime(spec, &job);
  const json& tmpl = Member(spec, "template");
  TESSERA_RETURN_IF_ERROR(
      KnownFields(tmpl, "spec.template", KubeFieldsOf("PodTemplateSpec"), warnings));
  const PodContext ctx{d.ns, &Member(tmpl, "metadata"), false, "", warnings};
  TESSERA_RETURN_IF_ERROR(
      PodSpecToTask(Member(tmpl, "spec"), "spec.template.spec", ctx, &task, &job));
  const json& par = Member(spec, "parallelism");
  const json& comp = Member(spec, "completions");
  task["replicas"] = par.is_number_integer() ? par : json(1);
  if (par == 0) {
    return FieldError("spec.parallelism",
                      "0 (a paused Job) is not supported: use spec.suspend to hold a Job");
  }
  const bool indexed = Member(spec, "completionMode") == "Indexed";
  if (indexed && !comp.is_number_integer()) {
    return FieldError("spec.completions", "is required when completionMode is Indexed");
  }
  if (indexed || (comp.is_number_integer() && comp != task["replicas"])) {
    // An array: completions tasks, parallelism at a time (never more than are left). A failed
    // index is retried as a new pod, as Kubernetes does with restartPolicy Never.
    if (comp.is_number_integer() && par.is_number_integer() && comp < par) {
      task["replicas"] = comp;
    }
    if (Text(task, "restartPolicy") == "OnFailure") {
      warnings->push_back(
          "spec.template.spec.restartPolicy: OnFailure runs as Never in an array: a failed "
          "index is retried as a new pod, counted against backoffLimit or backoffLimitPerIndex");
    }
    task["restartPolicy"] = "Never";
    for (const char* k : {"completions", "completionMode", "backoffLimit", "backoffLimitPerIndex",
                          "maxFailedIndexes"}) {
      if (spec.contains(k)) job[k] = spec[k];
    }
  } else {
    // Kubernetes' backoffLimit (default 6): failed attempts retried before the Job fails,
    // restarts (OnFailure) or new attempts (Never) alike.
    task["maxRetries"] = spec.contains("backoffLimit") ? spec["backoffLimit"] : json(6);
  }
  if (spec.contains("suspend")) job["suspend"] = spec["suspend"];
  if (const json& policy = Member(spec, "podFailurePolicy"); !policy.empty()) {
    auto checked = CheckPodFailurePolicy(
        policy, "spec.podFailurePolicy", Member(Member(tmpl, "spec"), "containers"),
        Text(Member(tmpl, "spec"), "restartPolicy"), "spec.template.spec.restartPolicy",
        Member(spec, "backoffLimitPerIndex").is_number_integer());
    if (!checked.ok()) return checked.status();
    task["podFailurePolicy"] = std::move(checked).value();
  }
  job["tasks"] = json::array({task});
  QueueFromLabel(d.meta, &job);
  return std::vector<json>{
      Object("Job", d.name, d.ns, Member(d.meta, "labels"), Member(d.meta, "annotations"), job)};
}

}  // namespace tessera::api::translate
