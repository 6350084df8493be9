#include "api/kube_fields.h"

#include <algorithm>
#include <cstdlib>

#include "api/fields.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr std::string_view kNoServiceAccounts =
    "not acted on: Tessera has no service accounts and mounts no token";
constexpr std::string_view kNodeNamespaces =
    "not acted on: a process shares the node's namespaces, a container gets the runtime's "
    "defaults";
constexpr std::string_view kNoDns = "not acted on: Tessera has no cluster DNS";
constexpr std::string_view kNoProbes =
    "not acted on: probes are not run; the pod is running while its process runs";
constexpr std::string_view kNotApplied = "not acted on: the task runs without it";
constexpr std::string_view kServerSets = "not acted on: set by the server";
constexpr std::string_view kNoTerminal = "not acted on: a task has no terminal";

// Kubernetes' PodSpec.
constexpr FieldUse kPodSpec[] = {
    {"containers", "", "[]Container",
     "The pod's containers. Tessera runs the first; the others' requests are counted."},
    {"nodeSelector", "", "map[string]string",
     "Labels a node must have for the pod to be placed on it."},
    {"nodeName", "", "string",
     "The node the pod must run on: a selector on the node's name, checked like any other."},
    {"affinity", "", "Affinity", "Node affinity: required and preferred node labels."},
    {"tolerations", "", "[]object", "Node taints the pod tolerates."},
    {"restartPolicy", "", "string",
     "Always, OnFailure or Never: whether a failed container runs again in the same pod."},
    {"priorityClassName", "", "string",
     "The PriorityClass whose value orders and may preempt queued work."},
    {"schedulerName", "", "string",
     "Which scheduler places the pod; Tessera's own places every pod, whatever is named."},
    {"schedulingGates", "", "[]object", "While any gate is listed the pod is not placed."},
    {"terminationGracePeriodSeconds", "", "integer",
     "Seconds between SIGTERM and SIGKILL when the pod is stopped."},
    {"securityContext", "", "SecurityContext",
     "The user and group the pod's processes run as; a container's own overrides it."},
    {"volumes", "", "[]object",
     "Volumes the containers mount: hostPath and emptyDir are provided, other kinds are "
     "accepted with a warning."},
    {"initContainers", "not acted on: init containers are not run", "[]Container", ""},
    {"ephemeralContainers", "not acted on: ephemeral containers are not run", "[]object", ""},
    {"priority", "not acted on: the priority comes from priorityClassName", "integer", ""},
    {"preemptionPolicy", "not acted on: the preemption policy comes from the PriorityClass",
     "string", ""},
    {"serviceAccountName", kNoServiceAccounts, "string", ""},
    {"serviceAccount", kNoServiceAccounts, "string", ""},
    {"automountServiceAccountToken", kNoServiceAccounts, "boolean", ""},
    {"imagePullSecrets",
     "not acted on: images are pulled with the container runtime's own credentials", "[]object",
     ""},
    {"hostNetwork", kNodeNamespaces, "boolean", ""},
    {"hostPID", kNodeNamespaces, "boolean", ""},
    {"hostIPC", kNodeNamespaces, "boolean", ""},
    {"hostUsers", kNodeNamespaces, "boolean", ""},
    {"shareProcessNamespace", kNodeNamespaces, "boolean", ""},
    {"dnsPolicy", kNoDns, "string", ""},
    {"dnsConfig", kNoDns, "object", ""},
    {"hostAliases", kNoDns, "[]object", ""},
    {"hostname", kNoDns, "string", ""},
    {"subdomain", kNoDns, "string", ""},
    {"setHostnameAsFQDN", kNoDns, "boolean", ""},
    {"enableServiceLinks", "not acted on: Tessera has no Services", "boolean", ""},
    {"activeDeadlineSeconds", "not acted on: no deadline is enforced", "integer", ""},
    {"topologySpreadConstraints", "not acted on: pods are spread or packed by the placement policy",
     "[]object", ""},
    {"readinessGates", "not acted on: Tessera has no readiness", "[]object", ""},
    {"runtimeClassName", "not acted on: the node's container runtime runs every image", "string",
     ""},
    {"overhead", "not acted on: only container requests are counted", "map[string]Quantity", ""},
    {"resources", "not acted on: pod-level resources; set them per container",
     "ResourceRequirements", ""},
    {"os", "not acted on: every node runs Linux", "object", ""},
    {"resourceClaims", "not acted on: Tessera has no dynamic resource allocation", "[]object", ""},
};

// Kubernetes' Container.
constexpr FieldUse kContainer[] = {
    {"name", "", "string", "The container's name, unique in the pod (logs -c, exec -c)."},
    {"image", "", "string",
     "The image to run in the node's container runtime; without one the command runs as a "
     "process on the node."},
    {"command", "", "[]string", "The entrypoint: the program and its first arguments."},
    {"args", "", "[]string", "Arguments after the command."},
    {"env", "", "[]EnvVar", "Environment variables of the task."},
    {"resources", "", "ResourceRequirements",
     "CPU, memory and GPUs (nvidia.com/gpu, shares, MIG slices) the container asks for."},
    {"imagePullPolicy", "", "string", "Always, IfNotPresent or Never."},
    {"securityContext", "", "SecurityContext", "The user and group the container runs as."},
    {"workingDir", "", "string", "The task's working directory."},
    {"ports", "", "[]ContainerPort",
     "Ports the task listens on, given to it as TESSERA_PORTS and TESSERA_PORT_<NAME>."},
    {"volumeMounts", "", "[]VolumeMount", "Where the pod's volumes appear."},
    {"livenessProbe", kNoProbes, "object", ""},
    {"readinessProbe", kNoProbes, "object", ""},
    {"startupProbe", kNoProbes, "object", ""},
    {"lifecycle", "not acted on: lifecycle hooks are not run", "object", ""},
    {"envFrom", "not acted on: Tessera has no ConfigMaps or Secrets; these variables are not set",
     "[]object", ""},
    {"terminationMessagePath", "not acted on: the pod's log is kept instead", "string", ""},
    {"terminationMessagePolicy", "not acted on: the pod's log is kept instead", "string", ""},
    {"stdin", kNoTerminal, "boolean", ""},
    {"stdinOnce", kNoTerminal, "boolean", ""},
    {"tty", kNoTerminal, "boolean", ""},
    {"resizePolicy", "not acted on: resources are fixed while a pod runs", "[]object", ""},
    {"restartPolicy", "not acted on: sidecar containers are not run", "string", ""},
    {"volumeDevices", "not acted on: Tessera has no block volumes", "[]object", ""},
};

// Kubernetes' PodSecurityContext and SecurityContext (runAsUser and runAsGroup are applied).
constexpr FieldUse kSecurityContext[] = {
    {"runAsUser", "", "integer",
     "The uid the processes run as; 0 only in a namespace labelled privileged."},
    {"runAsGroup", "", "integer", "The gid the processes run as."},
    {"runAsNonRoot", "", "boolean", "Refuses to run as uid 0."},
    {"fsGroup", kNotApplied, "integer", ""},
    {"fsGroupChangePolicy", kNotApplied, "string", ""},
    {"supplementalGroups", kNotApplied, "[]integer", ""},
    {"supplementalGroupsPolicy", kNotApplied, "string", ""},
    {"seLinuxOptions", kNotApplied, "object", ""},
    {"seLinuxChangePolicy", kNotApplied, "string", ""},
    {"seccompProfile", kNotApplied, "object", ""},
    {"appArmorProfile", kNotApplied, "object", ""},
    {"sysctls", kNotApplied, "[]object", ""},
    {"windowsOptions", kNotApplied, "object", ""},
    {"allowPrivilegeEscalation", kNotApplied, "boolean", ""},
    {"capabilities", kNotApplied, "object", ""},
    {"privileged", kNotApplied, "boolean", ""},
    {"procMount", kNotApplied, "string", ""},
    {"readOnlyRootFilesystem", kNotApplied, "boolean", ""},
};

constexpr FieldUse kAffinity[] = {
    {"nodeAffinity", "", "object",
     "requiredDuringSchedulingIgnoredDuringExecution filters nodes, "
     "preferredDuringSchedulingIgnoredDuringExecution ranks them."},
    {"podAffinity", "not acted on: Tessera places by node labels, not by other pods", "object", ""},
    {"podAntiAffinity", "not acted on: Tessera places by node labels, not by other pods", "object",
     ""},
};

constexpr FieldUse kResourceRequirements[] = {
    {"limits", "", "map[string]Quantity",
     "The most the container may use: cpu and memory through the pod's cgroup where the node "
     "has the controllers, GPUs whole or as shares held to their memory."},
    {"requests", "", "map[string]Quantity", "What the scheduler reserves for the container."},
    {"claims", "not acted on: no dynamic resources", "[]object", ""},
};

constexpr FieldUse kContainerPort[] = {
    {"name", "", "string", "The port's name, given to the task as TESSERA_PORT_<NAME>."},
    {"containerPort", "", "integer", "The port number, 1-65535."},
    {"protocol", "", "string", "TCP, UDP or SCTP."},
    {"hostPort", "", "integer",
     "The task listens on the node itself: a hostPort other than containerPort is warned of."},
    {"hostIP", "not acted on: the task binds the addresses it chooses", "string", ""},
};

constexpr FieldUse kVolumeMount[] = {
    {"name", "", "string", "The volume's name in spec.volumes."},
    {"mountPath", "", "string", "Where the volume appears to the task."},
    {"readOnly", "", "boolean", "Whether the volume is mounted read-only."},
    {"subPath", "not acted on: the whole volume is provided", "string", ""},
    {"subPathExpr", "not acted on: the whole volume is provided", "string", ""},
    {"mountPropagation", "not acted on", "string", ""},
    {"recursiveReadOnly", "not acted on", "string", ""},
};

constexpr FieldUse kEnvVar[] = {
    {"name", "", "string", "The variable's name."},
    {"value", "", "string", "Its value; $(VAR) names an earlier variable."},
    {"valueFrom", "", "EnvVarSource", "A value taken from the pod or its container."},
};

constexpr FieldUse kEnvVarSource[] = {
    {"fieldRef", "", "object",
     "A field of the pod: metadata.name, metadata.namespace, metadata.uid, metadata.labels['k'], "
     "metadata.annotations['k'], spec.nodeName, status.podIP, status.hostIP ..."},
    {"resourceFieldRef", "", "object", "A container's request or limit (limits.cpu ...)."},
    {"configMapKeyRef", "not acted on: Tessera has no ConfigMaps; the variable is not set",
     "object", ""},
    {"secretKeyRef", "not acted on: Tessera has no Secrets; the variable is not set", "object", ""},
    {"fileKeyRef", "not acted on: the variable is not set", "object", ""},
};

// Kubernetes' JobSpec.
constexpr FieldUse kJobSpec[] = {
    {"template", "", "PodTemplateSpec", "The pods the Job runs."},
    {"parallelism", "", "integer", "How many pods run at once."},
    {"completions", "", "integer", "How many pods must succeed; unset: one."},
    {"backoffLimit", "", "integer",
     "Failed pods allowed before the Job fails (default 6); with restartPolicy Never each "
     "failure is a new pod."},
    {"suspend", "", "boolean", "While true no pod runs; running pods are stopped."},
    {"activeDeadlineSeconds", "", "integer",
     "Seconds from the Job's start after which its pods are stopped and it fails "
     "(DeadlineExceeded)."},
    {"ttlSecondsAfterFinished", "", "integer", "Seconds after the Job ends that it is deleted."},
    {"completionMode", "", "string",
     "NonIndexed, or Indexed: each pod gets an index (JOB_COMPLETION_INDEX)."},
    {"backoffLimitPerIndex", "", "integer", "Failures allowed per index (Indexed Jobs)."},
    {"maxFailedIndexes", "", "integer", "Failed indexes allowed before the Job fails."},
    {"podFailurePolicy", "", "object",
     "Rules on a failed pod's exit code, in order: FailJob fails the Job at once, FailIndex "
     "fails the index, Ignore does not count the failure, Count counts it. Rules on pod "
     "conditions never match: a disrupted pod's Job goes back to its queue, uncounted."},
    {"podReplacementPolicy", "not acted on: a failed pod is replaced once it has ended", "string",
     ""},
    {"successPolicy", "not acted on: the Job succeeds when all its pods do", "object", ""},
    {"selector", "not acted on: a Job owns the pods of its template", "object", ""},
    {"manualSelector", "not acted on: a Job owns the pods of its template", "boolean", ""},
    {"managedBy", "not acted on: Tessera manages every Job it is given", "string", ""},
};

constexpr FieldUse kPodTemplateSpec[] = {
    {"metadata", "", "ObjectMeta", "The pods' labels and annotations."},
    {"spec", "", "PodSpec", "The pods' specification."},
};

// Kubernetes' ObjectMeta: what the server sets is accepted (as `kubectl get -o yaml` writes it)
// and not acted on.
constexpr FieldUse kObjectMeta[] = {
    {"name", "", "string", "The object's name, unique in its namespace for its kind."},
    {"namespace", "", "string", "Its namespace; default when none is given."},
    {"labels", "", "map[string]string", "Labels that selectors match."},
    {"annotations", "", "map[string]string", "Notes for tools; a few are acted on."},
    {"generateName", "", "string", "A prefix the server completes into a unique name."},
    {"uid", kServerSets, "string", ""},
    {"resourceVersion", kServerSets, "string", ""},
    {"generation", kServerSets, "integer", ""},
    {"creationTimestamp", kServerSets, "string", ""},
    {"deletionTimestamp", kServerSets, "string", ""},
    {"deletionGracePeriodSeconds", kServerSets, "integer", ""},
    {"selfLink", kServerSets, "string", ""},
    {"managedFields", kServerSets, "[]object", ""},
    {"ownerReferences", "not acted on: Tessera deletes nothing by ownership", "[]object", ""},
    {"finalizers", "not acted on: objects are deleted at once", "[]string", ""},
};

// Objects whose fields sit at the top (ConfigMap, PriorityClass, Event) list apiVersion, kind
// and metadata too.
constexpr FieldUse kTop[] = {
    {"apiVersion", "", "string", "The object's group and version."},
    {"kind", "", "string", "The object's kind."},
    {"metadata", "", "ObjectMeta", "The object's name, namespace and labels."},
};

// A ConfigMap: the NVIDIA device plugin's config, each key one config.
constexpr FieldUse kConfigMap[] = {
    kTop[0],
    kTop[1],
    kTop[2],
    {"data", "", "map[string]string",
     "Each key an NVIDIA device-plugin config (sharing.timeSlicing, sharing.mps, "
     "flags.migStrategy): nodes labelled nvidia.com/device-plugin.config=<key> take it; the key "
     "any covers nodes without the label. Becomes GpuSharingConfigs."},
    {"binaryData", "not acted on: device-plugin configs are text, in data", "map[string]string",
     ""},
    {"immutable", "not acted on: the configs may be replaced", "boolean", ""},
};

constexpr FieldUse kResourceQuotaSpec[] = {
    {"hard", "", "map[string]Quantity",
     "Limits on the namespace's unfinished work: [requests.|limits.]nvidia.com/gpu, cpu, memory; "
     "pods, count/pods."},
    {"scopes", "not supported: Tessera quotas are hard limits only", "[]string", ""},
    {"scopeSelector", "not supported: Tessera quotas are hard limits only", "object", ""},
};

constexpr FieldUse kPriorityClass[] = {
    kTop[0],
    kTop[1],
    kTop[2],
    {"value", "", "integer",
     "The priority of pods that name this class: higher is queued first and may preempt lower."},
    {"globalDefault", "", "boolean", "The class of pods that name none."},
    {"preemptionPolicy", "", "string",
     "PreemptLowerPriority (default) or Never: whether its pods may preempt others."},
    {"description", "", "string", "What the class is for."},
};

constexpr FieldUse kNamespaceSpec[] = {
    {"finalizers", "", "[]string", "kubernetes only; a namespace's objects are deleted with it."},
};

// A Node as served (read from what its agent reports; cordon and taints may be changed).
constexpr FieldUse kNodeSpec[] = {
    {"unschedulable", "", "boolean", "Cordoned: no new pod is placed on it (kubectl cordon)."},
    {"taints", "", "[]object",
     "key, value, effect: pods that do not tolerate a NoSchedule or NoExecute taint are not "
     "placed here."},
};

// Events (read-only): what the scheduler did and why.
constexpr FieldUse kEvent[] = {
    kTop[0],
    kTop[1],
    kTop[2],
    {"involvedObject", "", "object", "The object it is about: apiVersion, kind, name, uid."},
    {"reason", "", "string", "Why, in one word (Scheduled, Preempted, FailedScheduling, ...)."},
    {"message", "", "string", "What happened."},
    {"type", "", "string", "Normal or Warning."},
    {"source", "", "object", "component: tessera-scheduler."},
    {"reportingComponent", "", "string", "tessera-scheduler."},
    {"firstTimestamp", "", "string", "When it happened."},
    {"lastTimestamp", "", "string", "When it happened (each event is recorded once)."},
    {"count", "", "integer", "1."},
};

constexpr FieldUse kEventsV1[] = {
    kTop[0],
    kTop[1],
    kTop[2],
    {"regarding", "", "object", "The object it is about: apiVersion, kind, name, uid."},
    {"reason", "", "string", "Why, in one word."},
    {"action", "", "string", "What was done (the reason again)."},
    {"note", "", "string", "What happened."},
    {"type", "", "string", "Normal or Warning."},
    {"eventTime", "", "string", "When it happened, in microseconds."},
    {"reportingController", "", "string", "tessera.io/scheduler."},
    {"reportingInstance", "", "string", "tessera-scheduler."},
    {"deprecatedSource", "", "object", "core/v1's source."},
    {"deprecatedFirstTimestamp", "", "string", "core/v1's firstTimestamp."},
    {"deprecatedLastTimestamp", "", "string", "core/v1's lastTimestamp."},
    {"deprecatedCount", "", "integer", "core/v1's count."},
};

constexpr KubeType kTypes[] = {
    {"ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
     "Metadata every object has: name, namespace, labels and annotations.", kObjectMeta},
    {"PodSpec", "io.k8s.api.core.v1.PodSpec", "What a pod runs and where it may run.", kPodSpec},
    {"Container", "io.k8s.api.core.v1.Container", "One program of a pod.", kContainer},
    {"SecurityContext", "io.k8s.api.core.v1.SecurityContext", "Who the processes run as.",
     kSecurityContext},
    {"Affinity", "io.k8s.api.core.v1.Affinity", "Where the pod may and would rather run.",
     kAffinity},
    {"ResourceRequirements", "io.k8s.api.core.v1.ResourceRequirements",
     "What a container asks for and may use.", kResourceRequirements},
    {"ContainerPort", "io.k8s.api.core.v1.ContainerPort", "A port a container listens on.",
     kContainerPort},
    {"VolumeMount", "io.k8s.api.core.v1.VolumeMount", "Where a volume appears in a container.",
     kVolumeMount},
    {"EnvVar", "io.k8s.api.core.v1.EnvVar", "An environment variable.", kEnvVar},
    {"EnvVarSource", "io.k8s.api.core.v1.EnvVarSource", "Where a variable's value comes from.",
     kEnvVarSource},
    {"JobSpec", "io.k8s.api.batch.v1.JobSpec", "How a batch Job runs its pods.", kJobSpec},
    {"PodTemplateSpec", "io.k8s.api.core.v1.PodTemplateSpec", "The pods a controller makes.",
     kPodTemplateSpec},
    {"ConfigMap", "io.k8s.api.core.v1.ConfigMap", "Named configs: here the device plugin's.",
     kConfigMap},
    {"ResourceQuotaSpec", "io.k8s.api.core.v1.ResourceQuotaSpec",
     "Limits on what a namespace's work may ask for.", kResourceQuotaSpec},
    {"PriorityClass", "io.k8s.api.scheduling.v1.PriorityClass", "A named priority.",
     kPriorityClass},
    {"NamespaceSpec", "io.k8s.api.core.v1.NamespaceSpec", "A namespace's finalizers.",
     kNamespaceSpec},
    {"NodeSpec", "io.k8s.api.core.v1.NodeSpec", "Whether and to whom a node is open.", kNodeSpec},
    {"Event", "io.k8s.api.core.v1.Event", "Something the scheduler did, and why.", kEvent},
    {"EventsV1", "io.k8s.api.events.v1.Event", "Something the scheduler did, and why.", kEventsV1},
    {"Quantity",
     "io.k8s.apimachinery.pkg.api.resource.Quantity",
     "A number with an optional suffix: 500m, 2, 16Gi, 1.5.",
     {}},
};

}  // namespace

bool AsksNothing(const json& v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v == 0) ||
         (v.is_string() && v.get<std::string>().empty()) ||
         ((v.is_object() || v.is_array()) && v.empty());
}

std::span<const KubeType> KubeTypes() {
  static const std::vector<KubeType> all = [] {
    std::vector<KubeType> out(std::begin(kTypes), std::end(kTypes));
    for (auto family : {CrdKubeTypes(), TesseraKubeTypes()}) {
      out.insert(out.end(), family.begin(), family.end());
    }
    return out;
  }();
  return all;
}

const KubeType& KubeTypeNamed(std::string_view name) {
  for (const KubeType& t : KubeTypes()) {
    if (t.name == name) return t;
  }
  std::abort();
}

std::span<const FieldUse> KubeFieldsOf(std::string_view name) { return KubeTypeNamed(name).fields; }

Status KnownFields(const json& obj, const std::string& path, std::span<const FieldUse> known,
                   Warnings* warnings) {
  if (obj.is_null()) return Status::Ok();
  if (!obj.is_object()) return FieldError(path, "must be an object");
  for (const auto& [k, v] : obj.items()) {
    const std::string at = path.empty() ? k : path + "." + k;
    const auto it =
        std::find_if(known.begin(), known.end(), [&](const FieldUse& f) { return f.name == k; });
    if (it == known.end()) {
      std::vector<std::string_view> names;
      for (const FieldUse& f : known) names.push_back(f.name);
      return UnknownField(at, k, names);
    }
    if (!it->ignored.empty() && !AsksNothing(v)) {
      warnings->push_back(at + ": " + std::string(it->ignored));
    }
  }
  return Status::Ok();
}

json FieldSchema(std::string_view type, std::string_view description, std::string_view ref_prefix) {
  json out;
  if (type.starts_with("[]")) {
    json items = FieldSchema(type.substr(2), "", ref_prefix);
    out = {{"type", "array"}, {"items", std::move(items)}};
  } else if (type.starts_with("map[string]")) {
    // A map's values refer to their type directly, as Kubernetes' documents do (kubectl
    // explain then names it: map[string]Quantity).
    const std::string_view value = type.substr(11);
    json values = FieldSchema(value, "", ref_prefix);
    if (values.contains("allOf")) values = values["allOf"][0];
    out = {{"type", "object"}, {"additionalProperties", std::move(values)}};
  } else if (type == "string" || type == "integer" || type == "boolean") {
    out = {{"type", type}};
    if (type == "integer") out["format"] = "int64";
  } else if (type.empty() || type == "object") {
    out = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  } else {
    // As Kubernetes' v3 documents refer: allOf with one $ref, so that a description may sit
    // beside it.
    out = {{"allOf", json::array({{{"$ref", std::string(ref_prefix) +
                                                std::string(KubeTypeNamed(type).schema)}}})}};
  }
  if (!description.empty()) out["description"] = description;
  return out;
}

json TypeSchema(const KubeType& type, std::string_view ref_prefix) {
  if (type.fields.empty()) {
    // A Quantity is written as a string or a number (Kubernetes' schema says so the same way).
    return {{"oneOf", json::array({{{"type", "string"}}, {{"type", "number"}}})},
            {"description", type.description}};
  }
  json properties = json::object();
  for (const FieldUse& f : type.fields) {
    const std::string description =
        f.ignored.empty() ? std::string(f.description)
                          : std::string(f.ignored) +
                                (f.description.empty() ? "" : ". " + std::string(f.description));
    properties[std::string(f.name)] = FieldSchema(f.type, description, ref_prefix);
  }
  return {
      {"type", "object"}, {"description", type.description}, {"properties", std::move(properties)}};
}

}  // namespace tessera::api
