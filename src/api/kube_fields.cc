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

// Volcano's Job (batch.volcano.sh/v1alpha1).
constexpr FieldUse kVolcanoJobSpec[] = {
    {"minAvailable", "", "integer",
     "Pods that must be placed together before any starts (the gang); without it, the sum of "
     "the tasks' minAvailable, else every pod."},
    {"schedulerName", "", "string",
     "Which scheduler places the job; Tessera's own places every job, whatever is named."},
    {"plugins", "", "object",
     "Volcano's job plugins: ssh, svc and env (the pods' network identity) are known, others "
     "refused."},
    {"tasks", "", "[]VolcanoTaskSpec", "The job's pod sets, each from its template."},
    {"queue", "", "string",
     "The queue: Volcano's default queue is work without a queue; another name is the queue "
     "of that name."},
    {"maxRetry", "", "integer", "Restarts of a failed pod allowed; a task's own wins."},
    {"priorityClassName", "", "string",
     "The PriorityClass whose value orders and may preempt queued work."},
    {"policies", "", "[]LifecyclePolicy",
     "What events do: an evicted or preempted gang goes back to its queue whole (PodEvicted -> "
     "RestartJob); other policies are accepted with a warning."},
    {"volumes", "not acted on: Tessera has no persistent volume claims", "[]object", ""},
    {"ttlSecondsAfterFinished", "", "integer", "Seconds after the job ends that it is deleted."},
    {"minSuccess", "not acted on: the job succeeds when all its pods do", "integer", ""},
    {"runningEstimate", "", "string",
     "How long the job is expected to run (a duration such as 2h): backfill plans with it."},
    {"networkTopology", "not acted on: Tessera places by its own topology (NVLink, NUMA)", "object",
     ""},
};

// Volcano's TaskSpec.
constexpr FieldUse kVolcanoTaskSpec[] = {
    {"name", "", "string", "The task's name, unique in the job."},
    {"replicas", "", "integer", "How many pods the task runs."},
    {"template", "", "PodTemplateSpec", "The task's pods."},
    {"maxRetry", "", "integer", "Restarts of a failed pod allowed."},
    {"policies", "", "[]LifecyclePolicy", "What events do to this task (see the job's)."},
    {"minAvailable", "", "integer",
     "Pods of the task that must be placed for the job to start, 0 to replicas."},
    {"topologyPolicy",
     "not acted on: Tessera keeps a pod's GPUs in one NVLink domain or NUMA node when it can",
     "string", ""},
    {"dependsOn", "not acted on: the tasks start together", "object", ""},
    {"partitionPolicy", "not acted on: the tasks start together", "object", ""},
};

constexpr FieldUse kLifecyclePolicy[] = {
    {"event", "", "string", "The event (PodEvicted, PodFailed, TaskCompleted ...)."},
    {"events", "", "[]string", "Several events with one action."},
    {"action", "", "string", "What to do (RestartJob, AbortJob, CompleteJob ...)."},
    {"exitCode", "", "integer", "A pod's exit code that triggers the action."},
    {"timeout", "", "string", "How long after the event the action is taken."},
};

// Kubeflow's training jobs (kubeflow.org/v1).
constexpr std::string_view kStaticRendezvous =
    "not acted on: members meet at MASTER_ADDR:MASTER_PORT, which Tessera gives them";

constexpr FieldUse kPyTorchJobSpec[] = {
    {"pytorchReplicaSpecs", "", "map[string]ReplicaSpec",
     "Master (one) and Worker replicas, one gang: they meet at MASTER_ADDR:MASTER_PORT, which "
     "Tessera gives them, with WORLD_SIZE and RANK."},
    {"runPolicy", "", "RunPolicy", "Queue, priority, gang size, suspend and lifetime."},
    {"elasticPolicy", "", "ElasticPolicy", "torchrun's elastic bounds."},
    {"nprocPerNode", "", "string", "torchrun's processes per pod (PET_NPROC_PER_NODE)."},
};

constexpr FieldUse kReplicaSpec[] = {
    {"replicas", "", "integer", "How many pods of this type."},
    {"template", "", "PodTemplateSpec", "The pods."},
    {"restartPolicy", "", "string",
     "Always, OnFailure or Never; ExitCode is warned of and runs as OnFailure."},
};

constexpr FieldUse kRunPolicy[] = {
    {"schedulingPolicy", "", "SchedulingPolicy", "Queue, priority class and gang size."},
    {"suspend", "", "boolean", "While true the job does not run."},
    {"backoffLimit", "", "integer", "Restarts of a failed pod allowed before the job fails."},
    {"cleanPodPolicy", "not acted on: a finished job's pods stop; the Job is kept until deleted",
     "string", ""},
    {"activeDeadlineSeconds", "", "integer",
     "Seconds from the job's start after which it fails (DeadlineExceeded)."},
    {"ttlSecondsAfterFinished", "", "integer", "Seconds after the job ends that it is deleted."},
    {"managedBy", "not acted on: Tessera runs the job itself", "string", ""},
};

constexpr FieldUse kSchedulingPolicy[] = {
    {"queue", "", "string", "The queue (else Kueue's queue-name label)."},
    {"priorityClass", "", "string", "The PriorityClass of the job."},
    {"minAvailable", "", "integer",
     "Pods placed together before any starts (1 to the job's replicas); without it, the "
     "elastic minimum, else every replica."},
    {"minResources", "not acted on: the gang's members' own requests are what is placed",
     "map[string]Quantity", ""},
    {"scheduleTimeoutSeconds", "not acted on: a gang waits until it fits", "integer", ""},
};

constexpr FieldUse kElasticPolicy[] = {
    {"minReplicas", "", "integer",
     "The fewest workers the job starts with: the gang is the master and these."},
    {"maxReplicas", "", "integer", "The most workers: Worker replicas may not exceed it."},
    {"nProcPerNode", "", "integer",
     "torchrun's processes per pod (PET_NPROC_PER_NODE), unless spec.nprocPerNode is set."},
    {"rdzvBackend", kStaticRendezvous, "string", ""},
    {"rdzvPort", kStaticRendezvous, "integer", ""},
    {"rdzvHost", kStaticRendezvous, "string", ""},
    {"rdzvId", kStaticRendezvous, "string", ""},
    {"rdzvConf", kStaticRendezvous, "[]object", ""},
    {"standalone", kStaticRendezvous, "boolean", ""},
    {"maxRestarts", "not acted on: a failed pod restarts by its restartPolicy and backoffLimit",
     "integer", ""},
    {"metrics", "not acted on: Tessera does not scale jobs by metrics", "[]object", ""},
};

constexpr FieldUse kMpiJobSpec[] = {
    {"mpiReplicaSpecs", "", "map[string]ReplicaSpec",
     "Launcher (one) and Worker replicas, one gang; the launcher reaches its workers through "
     "tessera exec, with a hostfile and an rsh agent."},
    {"runPolicy", "", "RunPolicy", "Queue, priority, gang size, suspend and lifetime."},
    {"slotsPerWorker", "", "integer", "Slots per worker in the hostfile, 1 to 1024 (default 1)."},
    {"mpiImplementation", "", "string", "OpenMPI, Intel or MPICH."},
    {"cleanPodPolicy", "not acted on: the workers stop when the launcher ends", "string", ""},
    {"mainContainer", "not acted on: a pod runs its one container", "string", ""},
    {"sshAuthMountPath",
     "not acted on: the launcher reaches its workers through tessera exec, not ssh", "string", ""},
    {"launcherCreationPolicy",
     "not acted on: the launcher starts with its workers, one gang; its rsh agent waits for "
     "each worker to run",
     "string", ""},
    {"runLauncherAsWorker", "", "boolean",
     "Must be false: the launcher runs no ranks; add a worker instead."},
};

constexpr FieldUse kTfJobSpec[] = {
    {"tfReplicaSpecs", "", "map[string]ReplicaSpec",
     "Chief (or Master), PS, Worker and Evaluator replicas, one gang; each pod gets TF_CONFIG "
     "with every server's address and a port Tessera reserves on its node."},
    {"runPolicy", "", "RunPolicy", "Queue, priority, gang size, suspend and lifetime."},
    {"successPolicy", "", "string",
     "When the job has succeeded: \"\" (with its chief, else worker 0) or AllWorkers."},
    {"enableDynamicWorker",
     "not acted on: every pod is in TF_CONFIG's cluster, as without dynamic workers", "boolean",
     ""},
};

// Kueue's ClusterQueue, LocalQueue and ResourceFlavor (kueue.x-k8s.io). Their nested quota and
// preemption fields are checked when the queue is decoded (api/kinds.h).
constexpr std::string_view kNoAdmissionChecks =
    "not acted on: Tessera has no admission check controllers; workloads are admitted on quota "
    "and room alone";
constexpr FieldUse kClusterQueueSpec[] = {
    {"cohort", "", "string",
     "The cohort whose queues lend and borrow unused quota (cohortName in v1beta2)."},
    {"cohortName", "", "string", "The cohort (v1beta2's name for cohort)."},
    {"queueingStrategy", "", "string",
     "StrictFIFO (a blocked head holds the queue) or BestEffortFIFO (later workloads may go "
     "first)."},
    {"fairSharing", "", "object", "weight: the queue's share when fair sharing divides a cohort."},
    {"preemption", "", "object",
     "reclaimWithinCohort, borrowWithinCohort and withinClusterQueue: whom a pending workload "
     "may preempt, as Kueue decides it."},
    {"resourceGroups", "", "[]object",
     "Quota per flavor and resource: nominalQuota, borrowingLimit, lendingLimit."},
    {"namespaceSelector", "", "object",
     "The namespaces whose workloads it admits: none when unset, every one with {}."},
    {"stopPolicy", "", "string", "Hold admits nothing more; HoldAndDrain also evicts what runs."},
    {"flavorFungibility", "", "object",
     "whenCanBorrow and whenCanPreempt: whether the next flavor is tried before borrowing or "
     "preempting."},
    {"admissionChecks", kNoAdmissionChecks, "[]string", ""},
    {"admissionChecksStrategy", kNoAdmissionChecks, "object", ""},
    {"admissionScope", "not acted on", "object", ""},
};

constexpr FieldUse kLocalQueueSpec[] = {
    {"clusterQueue", "", "string", "The ClusterQueue its namespace's workloads go to."},
    {"stopPolicy", "not acted on: stop the ClusterQueue (its stopPolicy) instead", "string", ""},
    {"fairSharing", "not acted on: fair sharing weighs ClusterQueues", "object", ""},
};

constexpr FieldUse kResourceFlavorSpec[] = {
    {"nodeLabels", "", "map[string]string", "Labels of the nodes the flavor stands for."},
    {"nodeTaints", "", "[]object",
     "Taints of its nodes: a workload that does not tolerate them is not given this flavor."},
    {"tolerations", "", "[]object", "Tolerations the flavor's workloads are given."},
    {"topologyName", "not acted on: Tessera places by its own topology (NVLink, NUMA)", "string",
     ""},
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
    {"VolcanoJobSpec", "io.volcano.batch.v1alpha1.JobSpec", "How a Volcano Job runs its tasks.",
     kVolcanoJobSpec},
    {"VolcanoTaskSpec", "io.volcano.batch.v1alpha1.TaskSpec", "One pod set of a Volcano Job.",
     kVolcanoTaskSpec},
    {"LifecyclePolicy", "io.volcano.batch.v1alpha1.LifecyclePolicy",
     "What an event does to a Volcano Job.", kLifecyclePolicy},
    {"PyTorchJobSpec", "org.kubeflow.v1.PyTorchJobSpec", "A PyTorch training job.",
     kPyTorchJobSpec},
    {"ReplicaSpec", "org.kubeflow.v1.ReplicaSpec", "Pods of one type of a training job.",
     kReplicaSpec},
    {"RunPolicy", "org.kubeflow.v1.RunPolicy", "How a training job is run.", kRunPolicy},
    {"SchedulingPolicy", "org.kubeflow.v1.SchedulingPolicy", "How a training job is queued.",
     kSchedulingPolicy},
    {"ElasticPolicy", "org.kubeflow.v1.ElasticPolicy", "torchrun's elastic training.",
     kElasticPolicy},
    {"MPIJobSpec", "org.kubeflow.v2beta1.MPIJobSpec", "An MPI job: a launcher and its workers.",
     kMpiJobSpec},
    {"TFJobSpec", "org.kubeflow.v1.TFJobSpec", "A TensorFlow training job.", kTfJobSpec},
    {"ClusterQueueSpec", "x-k8s.io.kueue.v1beta1.ClusterQueueSpec",
     "A queue's quota, cohort and policies.", kClusterQueueSpec},
    {"LocalQueueSpec", "x-k8s.io.kueue.v1beta1.LocalQueueSpec",
     "A namespace's way into a ClusterQueue.", kLocalQueueSpec},
    {"ResourceFlavorSpec", "x-k8s.io.kueue.v1beta1.ResourceFlavorSpec",
     "A kind of node quota is counted in.", kResourceFlavorSpec},
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

std::span<const KubeType> KubeTypes() { return kTypes; }

const KubeType& KubeTypeNamed(std::string_view name) {
  for (const KubeType& t : kTypes) {
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
