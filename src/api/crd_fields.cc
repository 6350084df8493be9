// The field tables of Volcano's, Kubeflow's and Kueue's kinds (see api/kube_fields.h): what
// each field is and what Tessera does with it. A declared table: its length is its content.
#include "api/kube_fields.h"

namespace tessera::api {

namespace {

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

// Volcano's PodGroup (scheduling.volcano.sh/v1beta1).
constexpr FieldUse kPodGroupSpec[] = {
    {"minMember", "", "integer",
     "Pods of the group that must be placed together before any starts."},
    {"minTaskMember", "", "map[string]integer",
     "Per task name, pods of that task that must be placed with the gang."},
    {"queue", "", "string",
     "The queue: a LocalQueue of the namespace, else a Volcano Queue; default runs without one."},
    {"priorityClassName", "", "string", "The PriorityClass of the group's pods."},
    {"minResources",
     "not acted on: a gang's needs are counted from its pods' requests, which are admitted as one",
     "map[string]Quantity", ""},
    {"networkTopology", "not acted on: Tessera places by its own topology (NVLink, NUMA)", "object",
     ""},
};

// Volcano's Queue (scheduling.volcano.sh/v1beta1): a Tessera Queue in the cohort volcano.
constexpr FieldUse kVolcanoQueueSpec[] = {
    {"weight", "", "integer",
     "The queue's share of the cluster when queues divide it (fair sharing)."},
    {"capability", "", "map[string]Quantity",
     "The most the queue may use: nvidia.com/gpu, cpu, memory (others not counted)."},
    {"guarantee", "", "object",
     "resource: what the queue is always given (its nominal quota); others may borrow it while "
     "idle."},
    {"deserved", "", "map[string]Quantity", "What the queue deserves when guarantee is unset."},
    {"reclaimable", "", "boolean",
     "Whether other queues may take back what it borrowed by preempting its jobs."},
    {"parent", "not acted on: Volcano queues are one level here (the cohort volcano)", "string",
     ""},
    {"affinity", "not acted on: use a node selector in the jobs", "object", ""},
    {"extendClusters", "not acted on", "[]object", ""},
    {"type", "not acted on", "string", ""},
};

// Volcano's Command (bus.volcano.sh/v1alpha1): its fields sit at the top of the object.
constexpr FieldUse kCommand[] = {
    {"apiVersion", "", "string", "bus.volcano.sh/v1alpha1."},
    {"kind", "", "string", "Command."},
    {"metadata", "", "ObjectMeta", "The command's name and namespace."},
    {"action", "", "string",
     "OpenQueue or CloseQueue, carried out when the command is created (vcctl queue operate)."},
    {"target", "", "object",
     "The Queue it acts on: apiVersion scheduling.volcano.sh/v1beta1, "
     "kind Queue, name."},
    {"reason", "", "string", "Why, for the reader."},
    {"message", "", "string", "More words, for the reader."},
};

// Kueue's Cohort (kueue.x-k8s.io/v1alpha1).
constexpr FieldUse kCohortSpec[] = {
    {"parentName", "", "string", "The cohort this one lends to and borrows from (a tree)."},
    {"parent", "", "string", "The parent cohort (v1beta2's name for parentName)."},
    {"resourceGroups", "", "[]object",
     "Quota the cohort itself holds for its queues to borrow, as a ClusterQueue's."},
    {"fairSharing", "", "object",
     "weight: the cohort's share when fair sharing divides its parent."},
};

// Kueue's Workload (kueue.x-k8s.io/v1beta1): a view of a queued Tessera Job, read-only.
constexpr FieldUse kWorkloadSpec[] = {
    {"queueName", "", "string", "The LocalQueue (or Tessera Queue) the job was sent to."},
    {"podSets", "", "[]object",
     "The job's pod sets: name, count and a template of their container's requests."},
    {"priorityClassName", "", "string", "The job's PriorityClass."},
    {"priority", "", "integer", "The priority it is queued and preempted with."},
    {"active", "", "boolean", "Always true: a Tessera job is deactivated by suspending it."},
};

constexpr KubeType kTypes[] = {
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
    {"PodGroupSpec", "io.volcano.scheduling.v1beta1.PodGroupSpec",
     "A gang: pods placed together or not at all.", kPodGroupSpec},
    {"VolcanoQueueSpec", "io.volcano.scheduling.v1beta1.QueueSpec",
     "A share of the cluster that jobs are sent to.", kVolcanoQueueSpec},
    {"VolcanoCommand", "io.volcano.bus.v1alpha1.Command", "An action on a Volcano Queue.",
     kCommand},
    {"CohortSpec", "x-k8s.io.kueue.v1alpha1.CohortSpec",
     "Queues that lend each other unused quota.", kCohortSpec},
    {"WorkloadSpec", "x-k8s.io.kueue.v1beta1.WorkloadSpec",
     "What a queued job asks for, as Kueue shows it.", kWorkloadSpec},
};

}  // namespace

std::span<const KubeType> CrdKubeTypes() { return kTypes; }

}  // namespace tessera::api
