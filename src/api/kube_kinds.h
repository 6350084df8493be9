// The Kubernetes, Kueue and Volcano kinds served at their own API groups, as views of the
// Tessera objects their manifests translate into (api/manifest.h):
//
//   v1                              pods, configmaps, resourcequotas   (nodes: api/kube.h)
//   batch/v1                        jobs
//   scheduling.k8s.io/v1            priorityclasses
//   kueue.x-k8s.io/v1beta1          clusterqueues, localqueues, resourceflavors
//   kueue.x-k8s.io/v1alpha1         cohorts
//   scheduling.volcano.sh/v1beta1   podgroups, queues
//   batch.volcano.sh/v1alpha1       jobs
//
// One store, several views: a translated object keeps the document it was made from in the
// annotation tessera.io/source (without status and the fields the server sets), and the view of
// that document is the source with the stored object's metadata (uid, resourceVersion,
// creationTimestamp) and a status in the kind's own shape drawn from the Tessera object's.
// Objects written as tessera.io/v1 kinds have no source and appear in the tessera.io group only.
#ifndef TESSERA_API_KUBE_KINDS_H_
#define TESSERA_API_KUBE_KINDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/apply.h"

namespace tessera::api {

inline constexpr std::string_view kSourceAnnotation = "tessera.io/source";
// The field managers of the document (metadata.managedFields of its view), as JSON.
inline constexpr std::string_view kManagedAnnotation = "tessera.io/managed-fields";

struct KubeKind {
  std::string_view group;  // "" for the core group
  std::string_view version;
  std::string_view kind;
  std::string_view plural;
  bool namespaced = true;
  std::string_view short_names;  // comma-separated, as kubectl's discovery lists them
  std::string_view stored;       // the Tessera kind its manifests translate into ("": none,
                                 // a request carried out when created: Volcano's Command)
  bool writable = true;          // false: a read-only view (Events)

  // "v1" for the core group, else "<group>/<version>".
  std::string GroupVersion() const;
};

// Every served Kubernetes kind, grouped by group and version in discovery order.
const std::vector<KubeKind>& KubeKinds();
const KubeKind* FindKubeKind(std::string_view group, std::string_view version,
                             std::string_view plural);
// The served kind a document's apiVersion and kind name (any version of the group).
const KubeKind* KubeKindOf(std::string_view api_version, std::string_view kind);

// What a translated object records of the document it came from: the document without status
// and server-set metadata, with `ns` as its namespace when the kind is namespaced.
nlohmann::json SourceDocument(const nlohmann::json& doc, std::string_view ns);

// The source document recorded on a stored Tessera object, or null.
nlohmann::json SourceOf(const nlohmann::json& stored);

// The field managers recorded on a stored Tessera object; none when there are none or they
// cannot be read.
std::vector<ManagedEntry> ManagedOf(const nlohmann::json& stored);

// Whether `stored` was made from an object of `kind` (any version) named `ns`/`name`; an empty
// `name` matches every name and an empty `ns` every namespace.
bool MadeFrom(const nlohmann::json& stored, const KubeKind& kind, std::string_view ns,
              std::string_view name);

// The object of `kind` that the stored Tessera object (served form, with resourceVersion)
// stands for; null when it has no source of that kind.
nlohmann::json KubeObject(const KubeKind& kind, const nlohmann::json& stored);

// The core/v1 Pods of a Tessera Job (served form): the Pod it was made from, or one Pod per
// task replica named <job>-<task>-<index> (placed or not), with the job's labels, job-name
// and an owner reference to the object the job was made from.
std::vector<nlohmann::json> JobPods(const nlohmann::json& job);
// The Tessera pod ("<task>-<index>") a core/v1 Pod of JobPods stands for.
std::string TesseraPodName(const nlohmann::json& pod);

// Where a Tessera object an Event names lives in the Kubernetes API: the apiVersion, kind and
// uid of what it was made from (its own tessera.io/v1 kind when it has no source).
struct ObjectRef {
  std::string api_version, kind, uid;
};
ObjectRef RefOf(const nlohmann::json& stored);

// A core/v1 Event of a Tessera Event (served form); `involved` is what its involvedObject
// names in the Kubernetes API, when known.
nlohmann::json KubeEvent(const nlohmann::json& event, const ObjectRef* involved);

// Kueue's view of the work that goes through queues. A Workload per Job that names a queue
// (spec.queue), named <kind>-<job> as Kueue names them ("job-llm-training", "pod-x",
// "tessera-job-y"): spec.queueName and podSets, status.admission (clusterQueue, flavors per
// resource) and the QuotaReserved, Admitted and Finished conditions. Null for a Job without a
// queue.
nlohmann::json KueueWorkload(const nlohmann::json& job);
// A condition of a Job's status as Kueue writes a Workload's (QuotaReserved, Admitted, Evicted,
// Preempted): every field set, its transition at `now_ms`.
nlohmann::json WorkloadCondition(const char* type, bool status, const std::string& reason,
                                 const std::string& message, int64_t now_ms);

// The status Kueue keeps on a ClusterQueue or LocalQueue view (`view`, kind read from it):
// pendingWorkloads, reservingWorkloads, admittedWorkloads and flavorsUsage (for LocalQueues
// flavorUsage), from the Jobs (served form) and the LocalQueues (stored Tessera objects, to tell
// which ClusterQueue a pending job's queue points at).
void AddQueueStatus(const std::vector<nlohmann::json>& jobs,
                    const std::vector<nlohmann::json>& local_queues, nlohmann::json* view);

// A core/v1 Namespace. Namespaces are implicit in Tessera: every valid name is one, Active.
nlohmann::json KubeNamespace(const std::string& name);

// Volcano's status on a PodGroup view: phase (Pending; Inqueue once a member Job is admitted;
// Running once minMember pods run; Completed when every member Job succeeded), and the running,
// succeeded and failed pod counts of the Jobs (served form) that join it (spec.podGroup).
void AddPodGroupStatus(const std::vector<nlohmann::json>& jobs, nlohmann::json* view);

// Whether a stored Tessera Queue is a Volcano Queue closed by a CloseQueue command (its
// stopPolicy is set).
bool VolcanoQueueClosed(const nlohmann::json& queue);

// Volcano's status on a Queue view made from the Tessera Queue `queue`: state (Open; a closed
// queue is Closing while any PodGroup is in it and Closed once none is, as Volcano's queue
// controller keeps it) and the number of its PodGroups by phase (pending, inqueue, running,
// completed). Its PodGroups are the PodGroups (stored) that name it and the Jobs (served form)
// that name it without joining a PodGroup.
void AddVolcanoQueueStatus(const nlohmann::json& queue, const std::vector<nlohmann::json>& jobs,
                           const std::vector<nlohmann::json>& pod_groups, nlohmann::json* view);

// The events.k8s.io/v1 shape of a core/v1 Event view: regarding, note, eventTime (microseconds),
// reportingController and the deprecated* copies of the core fields.
nlohmann::json EventsV1(const nlohmann::json& core_event);

// APIGroup documents for /apis (every group with served kinds, Tessera's last) and one group.
nlohmann::json KubeGroups();
nlohmann::json KubeGroup(std::string_view group);  // null for a group not served
// APIResourceList of one group version's kinds; null for one not served.
nlohmann::json KubeResourceList(std::string_view group, std::string_view version);

// A meta.k8s.io/v1 Table of objects of `kind` with the columns kubectl shows for it (Pods:
// READY, STATUS, RESTARTS, AGE, NODE and GPUS; Jobs: STATUS, COMPLETIONS, AGE ...).
nlohmann::json KubeTable(const KubeKind& kind, const std::vector<nlohmann::json>& objects,
                         const std::string& version, int64_t now_ms);

}  // namespace tessera::api

#endif  // TESSERA_API_KUBE_KINDS_H_
