// The specs of Tessera's own kinds (tessera.io/v1) and their decoding into core types. Decoding
// is the validation: every field is checked for type and range and unknown fields are errors,
// each naming its path ("spec.tasks[0].resources.limits.nvidia.com/gpu: ...").
//
//   Job              spec: queue, priorityClassName, minMember, estimatedRuntimeSeconds, suspend,
//                    podGroup, tasks[]: name, replicas, image, command, args, env, resources
//                    {limits, requests}, restartPolicy, maxRetries, nodeSelector, tolerations,
//                    gpuModels; completions, completionMode (Indexed | NonIndexed),
//                    backoffLimit, backoffLimitPerIndex, maxFailedIndexes: an array (see
//                    api/job_array.h)
//   PodGroup         spec: minMember, minTaskMember, queue, priorityClassName (a Volcano gang);
//                    minResources is checked and not acted on
//   Queue            spec as Kueue's ClusterQueue: cohort, allowedNamespaces (namespaces whose
//                    tokens may point LocalQueues at it; "*": all), queueingStrategy,
//                    fairSharing.weight,
//                    preemption, resourceGroups[] {coveredResources, flavors[] {name,
//                    resources[] {name, nominalQuota, borrowingLimit, lendingLimit}}},
//                    idleReclaim {after (a duration, "2h"), maxPriority}: stop jobs whose GPUs
//                    stay idle that long
//   Cohort           spec: parent, resourceGroups, fairSharing.weight
//   LocalQueue       spec: clusterQueue (or queue)
//   ResourceFlavor   spec: nodeLabels, gpuModels, tolerations
//   PriorityClass    spec: value, preemptionPolicy, globalDefault, description
//   NamespaceQuota   spec: hard {requests.nvidia.com/gpu, limits.nvidia.com/gpu, requests.cpu,
//                    cpu, requests.memory, memory, ...}
//   GpuSharingConfig spec: nodeSelector or default (nodes no other config selects), gpus
//                    (indices or UUIDs; empty: every GPU), and one of
//                    timeSlicing {replicas, renameByDefault, failRequestsGreaterThanOne},
//                    shared {}, mig {layout: {profile: count}}, exclusive {}
//   Event            spec: type (Normal | Warning), reason, message, time, involvedObject
//                    {kind, name}: what the scheduler did and why
//   Node             metadata.labels; spec: unschedulable, taints; status (reported by the node
//                    agent): allocatable {cpu, memory}, gpus[] {index, uuid, model, memoryMiB,
//                    numaNode, nvlinkDomain, health}, heartbeat (RFC 3339), driverVersion
//   Lease            one per node, named as it (Kubernetes' node leases): spec holderIdentity,
//                    leaseDurationSeconds, renewTime (RFC 3339, the server's clock). The agent
//                    renews it instead of writing its Node when nothing else changed.
#ifndef TESSERA_API_KINDS_H_
#define TESSERA_API_KINDS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/job_array.h"
#include "core/node.h"
#include "core/queue_spec.h"
#include "core/status.h"
#include "core/workload.h"

namespace tessera::api {

// How to run one task of a Job (what the node agent needs beyond placement).
struct TaskRun {
  std::string name;
  int32_t replicas = 1;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string restart_policy = "Never";  // Never | OnFailure | Always
  int32_t max_retries = 0;
  // The uid and gid the task runs as (securityContext.runAsUser/runAsGroup); -1: the agent's.
  int64_t run_as_user = -1;
  int64_t run_as_group = -1;
};

struct JobSpec {
  core::Workload workload;  // name "<namespace>/<name>"; created_ms left 0
  std::vector<TaskRun> tasks;
  bool suspend = false;
  std::string pod_group;  // a PodGroup of the namespace the pods belong to
  // Kubernetes' schedulingGates: while any is listed, the Job waits to be scheduled.
  std::vector<std::string> scheduling_gates;
  // spec.completions: an array of that many tasks of its one task's template, the task's
  // replicas at a time (see api/job_array.h).
  std::optional<ArraySpec> array;
};

struct PodGroupSpec {
  std::string namespace_name;
  std::string name;
  int32_t min_member = 1;
  std::string queue;
  std::string priority_class;
  // Volcano's minResources, checked and not acted on: the gang's needs are its pods' requests.
  core::PodSpec min_resources;
  // Volcano's minTaskMember: pods of each task (by name) a member Job must have placed.
  std::map<std::string, int32_t> min_task_member;
};

enum class SharingChoice : uint8_t { kExclusive, kTimeSlicing, kShared, kMig };

struct GpuSharingConfigSpec {
  std::string name;
  bool is_default = false;        // covers nodes no other config selects
  core::Labels node_selector;     // empty: every node
  std::vector<std::string> gpus;  // GPU indices ("0") or UUIDs; empty: every GPU of the node
  core::GpuSharing sharing;       // mode, time-slicing flags; MIG layout left empty
  std::vector<std::pair<std::string, int>> mig_layout;  // profile -> count, for kMig
};

// Each takes a full object whose envelope ValidateEnvelope accepted.
Result<JobSpec> DecodeJob(const nlohmann::json& obj);
Result<PodGroupSpec> DecodePodGroup(const nlohmann::json& obj);
Result<core::QueueSpec> DecodeQueue(const nlohmann::json& obj);
Result<core::CohortSpec> DecodeCohort(const nlohmann::json& obj);
// Whether a Queue object's spec.allowedNamespaces lists `ns` (or "*"); false for no Queue.
bool QueueAllowsNamespace(const nlohmann::json& queue, std::string_view ns);
Result<core::LocalQueueSpec> DecodeLocalQueue(const nlohmann::json& obj);
Result<core::ResourceFlavor> DecodeResourceFlavor(const nlohmann::json& obj);
Result<core::PriorityClassSpec> DecodePriorityClass(const nlohmann::json& obj);
Result<core::NamespaceQuota> DecodeNamespaceQuota(const nlohmann::json& obj);
Result<GpuSharingConfigSpec> DecodeGpuSharingConfig(const nlohmann::json& obj);
// Gives each GPU of `node` the sharing of the first of `configs` (in name order) that selects
// the node and lists the GPU (or lists none); a node no config selects takes the default
// configs. A layout a card cannot take leaves that card exclusive and is recorded in `invalid`
// (when given) under the config's name.
void ApplySharing(const std::vector<GpuSharingConfigSpec>& configs, core::NodeSpec* node,
                  std::map<std::string, std::vector<std::string>>* invalid);
// A name as the suffix of the environment variable a task is given for it
// (TESSERA_VOLUME_<NAME>, TESSERA_PORT_<NAME>): upper case, '-' and '.' as '_'.
std::string EnvVarSuffix(std::string_view name);
// Every GPU exclusive: sharing comes from GpuSharingConfigs. A GPU named (by UUID or index) in
// the node's kCordonedGpusAnnotation is kCordoned.
Result<core::NodeSpec> DecodeNode(const nlohmann::json& obj);

// The admin's per-GPU cordon: a Node annotation listing the cards (UUIDs or indexes,
// comma-separated) that take no new work (`tessera cordon NODE --gpu G`, or kubectl annotate).
inline constexpr std::string_view kCordonedGpusAnnotation = "tessera.io/cordoned-gpus";
// The entries of that annotation's value, trimmed.
std::vector<std::string> CordonedGpus(const nlohmann::json& node);
// Whether `name` (an entry of that annotation, or what an admin typed) is the GPU with this UUID
// or index.
bool NamesGpu(std::string_view name, std::string_view uuid, int64_t index);

// Decodes the object by its kind; Ok when its spec is valid.
Status ValidateSpec(const nlohmann::json& obj);

// Whether a Node label is one its agent reports (what it discovered of the node's GPUs:
// nvidia.com/..., tessera.io/gpu.source, tessera.io/simulated) and may change after the node is
// registered. The other labels, the annotations and the spec are the admin's, as Kubernetes'
// NodeRestriction holds a kubelet to its node's status.
bool AgentReportedNodeLabel(std::string_view key);

// Ok when an agent's write `next` of its registered Node `stored` changes only what the agent
// reports: its status and AgentReportedNodeLabel labels; else PermissionDenied naming the first
// field of the admin's it changes.
Status CheckAgentNodeChange(const nlohmann::json& stored, const nlohmann::json& next);

// When a node's agent last reported: the later of the Node's status.heartbeat and its Lease's
// spec.renewTime (`lease` null when it has none), as RFC 3339; empty when neither is set.
std::string NodeHeartbeat(const nlohmann::json& node, const nlohmann::json& lease);

}  // namespace tessera::api

#endif  // TESSERA_API_KINDS_H_
