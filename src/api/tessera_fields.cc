// The field tables of Tessera's own kinds (tessera.io/v1), for the OpenAPI documents and
// `kubectl explain`. Their decoding (api/kinds.cc) is their check; the test
// TesseraFieldsTest holds each table to it. A declared table: its length is its content.
#include "api/kube_fields.h"

namespace tessera::api {

namespace {

constexpr FieldUse kJobSpec[] = {
    {"tasks", "", "[]TesseraTaskSpec", "The job's pod sets (at most 64), each of replicas pods."},
    {"queue", "", "string",
     "The LocalQueue of the namespace (or a Queue it may use) whose quota admits the job; none: "
     "placed without a queue."},
    {"priorityClassName", "", "string", "The PriorityClass: queue order and preemption."},
    {"minMember", "", "integer",
     "Pods that must be placed together before any starts (the gang); 0: every pod."},
    {"suspend", "", "boolean", "While true nothing runs; setting it stops what runs."},
    {"podGroup", "", "string", "A PodGroup of the namespace whose gang the pods join."},
    {"schedulingGates", "", "[]string", "While any is listed the job is not scheduled."},
    {"estimatedRuntimeSeconds", "", "integer",
     "How long it is expected to run: backfill places it in a hole that long."},
    {"activeDeadlineSeconds", "", "integer",
     "Seconds after admission when it is stopped and fails (DeadlineExceeded)."},
    {"ttlSecondsAfterFinished", "", "integer", "Seconds after it ends that it is deleted."},
    {"completesWith", "", "string",
     "A task, or one pod (<task>-<index>), whose success is the job's: the others stop then."},
    {"tfConfig", "", "boolean", "Give each pod TF_CONFIG naming every pod of the job."},
    {"mpi", "", "object",
     "launcher: the task that runs mpirun over the others; slotsPerWorker (default 1)."},
    {"completions", "", "integer",
     "An array: its one task runs this many times, replicas at a time."},
    {"completionMode", "", "string", "NonIndexed or Indexed (JOB_COMPLETION_INDEX)."},
    {"backoffLimit", "", "integer", "An array's failed pods allowed before it fails (default 6)."},
    {"backoffLimitPerIndex", "", "integer", "Failures allowed per index (Indexed)."},
    {"maxFailedIndexes", "", "integer", "Failed indexes allowed before the job fails."},
};

constexpr FieldUse kTaskSpec[] = {
    {"name", "", "string", "The task's name, unique in the job; its pods are <job>-<name>-<i>."},
    {"replicas", "", "integer", "How many pods (1 to 10000)."},
    {"minMember", "", "integer", "Pods of this task that must be placed with the gang."},
    {"image", "", "string", "A container image; empty: a process on the node."},
    {"command", "", "[]string", "The program and its arguments."},
    {"args", "", "[]string", "Arguments after the command."},
    {"env", "", "map[string]string", "Environment variables."},
    {"fieldEnv", "", "map[string]string",
     "Variables set from the pod: metadata.name, spec.nodeName, status.hostIP(s), "
     "status.podIP(s)."},
    {"workingDir", "", "string", "An absolute directory to start in."},
    {"resources", "", "object",
     "limits and requests: cpu, memory, nvidia.com/gpu (whole GPUs), nvidia.com/gpu.shared (a "
     "time-slice replica), nvidia.com/mig-<profile>, and a share of one GPU: "
     "tessera.io/gpu-milli, nvidia.com/gpumem, nvidia.com/gpucores (or aliyun.com/gpu-mem, "
     "gpu-core)."},
    {"restartPolicy", "", "string", "Never, OnFailure or Always."},
    {"maxRetries", "", "integer", "Restarts allowed under OnFailure."},
    {"podFailurePolicy", "", "object",
     "Kubernetes' rules on a failed pod's exit code: FailJob, FailIndex, Ignore, Count."},
    {"nodeSelector", "", "map[string]string", "Labels a node must have."},
    {"affinity", "", "object", "nodeAffinity: required and preferred node selector terms."},
    {"tolerations", "", "[]object", "Taints the pods tolerate."},
    {"gpuModels", "", "[]string", "GPU models the pods may use (A100-80GB, H100, ...)."},
    {"runAsUser", "", "integer", "The uid the processes run as."},
    {"runAsGroup", "", "integer", "The gid the processes run as."},
    {"imagePullPolicy", "", "string", "IfNotPresent, Always or Never."},
    {"terminationGracePeriodSeconds", "", "integer",
     "Seconds between SIGTERM and SIGKILL when the pod is stopped."},
    {"volumes", "", "[]object",
     "name, mountPath, and hostPath (a node directory) or emptyDir: true; readOnly."},
};

constexpr FieldUse kPodGroupSpec[] = {
    {"minMember", "", "integer", "Pods of the group that must be placed together."},
    {"minTaskMember", "", "map[string]integer",
     "Per task name, pods of that task that must be placed with the gang."},
    {"queue", "", "string", "The queue of the group's jobs."},
    {"priorityClassName", "", "string", "The group's PriorityClass."},
    {"minResources",
     "not acted on: a gang's needs are counted from its pods' requests, which are admitted as one",
     "map[string]Quantity", ""},
};

constexpr FieldUse kQueueSpec[] = {
    {"cohort", "", "string", "The cohort whose queues lend and borrow unused quota."},
    {"resourceGroups", "", "[]object",
     "coveredResources and flavors[]: name, resources[] {name, nominalQuota, borrowingLimit, "
     "lendingLimit}."},
    {"allowedNamespaces", "", "[]string",
     "Namespaces whose tokens may point LocalQueues at it (* every one)."},
    {"namespaceSelector", "", "object", "The namespaces whose workloads it admits."},
    {"queueingStrategy", "", "string", "StrictFIFO or BestEffortFIFO (default)."},
    {"fairSharing", "", "object", "weight: its share when fair sharing divides the cohort."},
    {"preemption", "", "object",
     "withinClusterQueue, reclaimWithinCohort, borrowWithinCohort {policy, "
     "maxPriorityThreshold}."},
    {"flavorFungibility", "", "object", "whenCanBorrow, whenCanPreempt."},
    {"idleReclaim", "", "object",
     "after (a duration: 2h) and maxPriority: stop jobs whose GPUs stay idle that long."},
    {"reclaimable", "", "boolean", "Whether the cohort may reclaim what it borrowed."},
    {"stopPolicy", "", "string", "None, Hold or HoldAndDrain."},
};

constexpr FieldUse kCohortSpec[] = {
    {"parent", "", "string", "The cohort this one lends to and borrows from."},
    {"resourceGroups", "", "[]object", "Quota the cohort holds for its queues to borrow."},
    {"fairSharing", "", "object", "weight: its share when fair sharing divides its parent."},
};

constexpr FieldUse kLocalQueueSpec[] = {
    {"clusterQueue", "", "string", "The Queue its namespace's jobs go to."},
    {"queue", "", "string", "The same, by Tessera's older name."},
};

constexpr FieldUse kResourceFlavorSpec[] = {
    {"nodeLabels", "", "map[string]string", "Labels of the nodes the flavor stands for."},
    {"gpuModels", "", "[]string", "GPU models of its nodes."},
    {"nodeTaints", "", "[]object", "Taints its workloads must tolerate."},
    {"tolerations", "", "[]object", "Tolerations its workloads are given."},
};

constexpr FieldUse kPriorityClassSpec[] = {
    {"value", "", "integer", "The priority: higher is queued first and may preempt lower."},
    {"preemptionPolicy", "", "string", "PreemptLowerPriority (default) or Never."},
    {"globalDefault", "", "boolean", "The class of jobs that name none."},
    {"description", "", "string", "What the class is for."},
};

constexpr FieldUse kNamespaceQuotaSpec[] = {
    {"hard", "", "map[string]Quantity",
     "Limits on the namespace's unfinished work: [requests.|limits.]nvidia.com/gpu, cpu, memory; "
     "pods, count/pods."},
};

constexpr FieldUse kGpuSharingConfigSpec[] = {
    {"nodeSelector", "", "map[string]string", "Labels of the nodes it configures."},
    {"default", "", "boolean", "It configures the nodes no other config selects."},
    {"gpus", "", "[]string", "GPU indices or UUIDs it configures; empty: every GPU."},
    {"timeSlicing", "", "object",
     "replicas (2 to 1024), renameByDefault, failRequestsGreaterThanOne: each GPU offered as "
     "that many replicas."},
    {"shared", "", "object",
     "mps: each GPU shared by memory and compute fractions, enforced on the card."},
    {"mig", "", "object", "layout: MIG profiles and counts, as 1g.10gb: 7."},
    {"exclusive", "", "object", "{}: whole GPUs only."},
};

constexpr FieldUse kEventSpec[] = {
    {"type", "", "string", "Normal or Warning."},
    {"reason", "", "string", "Why, in one word."},
    {"message", "", "string", "What happened."},
    {"time", "", "string", "When (RFC 3339)."},
    {"involvedObject", "", "object", "kind and name of the object it is about."},
};

constexpr FieldUse kNodeSpec[] = {
    {"unschedulable", "", "boolean", "Cordoned: no new pod is placed on it."},
    {"taints", "", "[]object", "key, value, effect: pods must tolerate them."},
};

constexpr FieldUse kLeaseSpec[] = {
    {"holderIdentity", "", "string", "The node agent holding it."},
    {"leaseDurationSeconds", "", "integer", "How long a renewal holds."},
    {"renewTime", "", "string", "The last renewal (RFC 3339, the server's clock)."},
};

constexpr KubeType kTypes[] = {
    {"TesseraJobSpec", "io.tessera.v1.JobSpec", "Pods to run: a gang, an array, or both.",
     kJobSpec},
    {"TesseraTaskSpec", "io.tessera.v1.TaskSpec", "One pod set of a job.", kTaskSpec},
    {"TesseraPodGroupSpec", "io.tessera.v1.PodGroupSpec", "A gang of several jobs' pods.",
     kPodGroupSpec},
    {"TesseraQueueSpec", "io.tessera.v1.QueueSpec", "Quota, cohort and policies.", kQueueSpec},
    {"TesseraCohortSpec", "io.tessera.v1.CohortSpec", "Queues lending each other quota.",
     kCohortSpec},
    {"TesseraLocalQueueSpec", "io.tessera.v1.LocalQueueSpec", "A namespace's way into a Queue.",
     kLocalQueueSpec},
    {"TesseraResourceFlavorSpec", "io.tessera.v1.ResourceFlavorSpec",
     "A kind of node quota is counted in.", kResourceFlavorSpec},
    {"TesseraPriorityClassSpec", "io.tessera.v1.PriorityClassSpec", "A named priority.",
     kPriorityClassSpec},
    {"NamespaceQuotaSpec", "io.tessera.v1.NamespaceQuotaSpec", "A namespace's hard limits.",
     kNamespaceQuotaSpec},
    {"GpuSharingConfigSpec", "io.tessera.v1.GpuSharingConfigSpec", "How nodes' GPUs are offered.",
     kGpuSharingConfigSpec},
    {"TesseraEventSpec", "io.tessera.v1.EventSpec", "What the scheduler did and why.", kEventSpec},
    {"TesseraNodeSpec", "io.tessera.v1.NodeSpec", "Whether and to whom a node is open.", kNodeSpec},
    {"LeaseSpec", "io.tessera.v1.LeaseSpec", "A node agent's liveness.", kLeaseSpec},
};

}  // namespace

std::span<const KubeType> TesseraKubeTypes() { return kTypes; }

}  // namespace tessera::api
