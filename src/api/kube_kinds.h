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
// Objects written as tessera.io/v1 kinds have no source and appear in the tessera.io group only,
// where each kind is served as it is stored (NativeKubeKind): the identity view, through the same
// REST stages (server/kube_call.h).
#ifndef TESSERA_API_KUBE_KINDS_H_
#define TESSERA_API_KUBE_KINDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/apply.h"
#include "api/object.h"

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

// Tessera's own kind (tessera.io/v1) as a served kind whose objects are stored as themselves;
// discovery lists these from Kinds(), not from KubeKinds().
const KubeKind& NativeKubeKind(const KindInfo& kind);
// Whether `kind` is one of Tessera's own: its view of a stored object is the object itself.
inline bool IsNative(const KubeKind& kind) { return kind.group == kGroup; }

// What a translated object records of the document it came from: the document without status
// and server-set metadata, with `ns` as its namespace when the kind is namespaced.
nlohmann::json SourceDocument(const nlohmann::json& doc, std::string_view ns);

// The source document recorded on a stored Tessera object, or null.
nlohmann::json SourceOf(const nlohmann::json& stored);

// The field managers recorded on a stored Tessera object; none when there are none or they
// cannot be read.
std::vector<ManagedEntry> ManagedOf(const nlohmann::json& stored);

// Whether `stored` was made from an object of `kind` (any version) named `ns`/`name`; an empty
// `name` matches every name and an empty `ns` every namespace. A native kind's objects are
// made from themselves.
bool MadeFrom(const nlohmann::json& stored, const KubeKind& kind, std::string_view ns,
              std::string_view name);

// The object of `kind` that the stored Tessera object (served form, with resourceVersion)
// stands for; null when it has no source of that kind. A native kind's is `stored` itself.
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

// The counts of a Tessera Job's pods by state, from its status as Kubernetes reads them (a
// pod of a failed Job that has not succeeded counts failed; of a succeeded Job, succeeded).
struct PodCounts {
  int running = 0, succeeded = 0, failed = 0, placed = 0, restarts = 0;
  int failed_attempts = 0;  // of restartPolicy Never pods started again
};
PodCounts CountPods(const nlohmann::json& status);

// A condition in Kubernetes' shape: type, status, and reason, message and lastTransitionTime
// when given.
nlohmann::json KubeCondition(const char* type, bool is_true, const std::string& reason,
                             const std::string& message, const std::string& time);
// A UUID-shaped name derived from `base` and `suffix` (FNV-1a), stable across reads: the uid
// of a view that has no stored object of its own (a Job's pods, its Workload).
std::string DerivedUid(const std::string& base, const std::string& suffix);

// A core/v1 Event of a Tessera Event (served form); `involved` is what its involvedObject
// names in the Kubernetes API, when known.
nlohmann::json KubeEvent(const nlohmann::json& event, const ObjectRef* involved);

// A core/v1 Namespace. Namespaces are implicit in Tessera: every valid name is one, Active.
nlohmann::json KubeNamespace(const std::string& name);

// The events.k8s.io/v1 shape of a core/v1 Event view: regarding, note, eventTime (microseconds),
// reportingController and the deprecated* copies of the core fields.
nlohmann::json EventsV1(const nlohmann::json& core_event);

}  // namespace tessera::api

#endif  // TESSERA_API_KUBE_KINDS_H_
