// Server-side apply: Kubernetes' field management, on objects in their Kubernetes shape.
//
// Every field of an object is owned by the managers that set it last: the one that applied it
// (operation Apply, kubectl apply --server-side, fieldManager=kubectl) or the one whose create,
// update or patch changed it (operation Update). Apply merges a manager's whole intent into the
// live object: the fields it names are set (a conflict when another manager owns one with a
// different value, unless forced, which takes the field over), and the fields it applied before
// and names no more are removed unless another manager owns them too.
//
// As sigs.k8s.io/structured-merge-diff does, a field is a path of fieldsV1 elements: "f:<name>"
// for a map key and "k:{"<key>":<value>}" for the item of a list merged on a key; "." after an
// item's path is the item itself. Lists are merged on the key Kubernetes' types give them
// (StrategicMergeKey: containers on name ...); every other list is atomic, owned and replaced as
// a whole, as are scalars.
#ifndef TESSERA_API_APPLY_H_
#define TESSERA_API_APPLY_H_

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::api {

using FieldPath = std::vector<std::string>;
using FieldSet = std::set<FieldPath>;

// One entry of metadata.managedFields.
struct ManagedEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string time;  // RFC 3339
  FieldSet fields;
};

// The fields `obj` sets: its scalars, lists without a merge key and empty maps, and the items
// of lists with one. apiVersion, kind, status and the metadata the server owns (name,
// namespace, uid, resourceVersion, creationTimestamp ...) are nobody's.
FieldSet FieldsOf(const nlohmann::json& obj);

// metadata.managedFields as Kubernetes writes it (fieldsType FieldsV1), and back; a malformed
// list is an error naming the place.
nlohmann::json ManagedFieldsJson(const std::vector<ManagedEntry>& managed);
Result<std::vector<ManagedEntry>> ParseManagedFields(const nlohmann::json& list);

// A field set by the applier and owned, with another value, by `manager`.
struct FieldConflict {
  std::string manager;
  std::string api_version;
  std::string field;  // as Kubernetes prints it: .spec.containers[name="main"].image
};

struct Applied {
  nlohmann::json object;  // the live object with the configuration merged in
  std::vector<ManagedEntry> managed;
  std::vector<FieldConflict> conflicts;  // not empty: the apply is refused (not forced)
};

// `manager` applies `config` (api_version `api_version`, at `time`) to `live` (null when the
// object does not exist yet) whose fields `managed` own. With `force`, conflicting fields
// change owner instead of refusing the apply.
Applied Apply(const nlohmann::json& live, const nlohmann::json& config,
              const std::vector<ManagedEntry>& managed, std::string_view manager,
              std::string_view api_version, std::string_view time, bool force);

// The owners after `manager` changed `before` (null: created) into `after` with a create,
// update or patch: the fields it changed become its own (operation Update) and no one else's;
// fields gone are no one's.
std::vector<ManagedEntry> RecordUpdate(const nlohmann::json& before, const nlohmann::json& after,
                                       std::vector<ManagedEntry> managed, std::string_view manager,
                                       std::string_view api_version, std::string_view time);

// The body of an apply patch: a JSON object or one YAML document holding one.
Result<nlohmann::json> ParseApplyConfiguration(std::string_view body);

// Kubernetes' words for a refused apply: "Apply failed with 1 conflict: conflict with
// \"kubectl-client-side-apply\" using batch/v1: .spec.parallelism".
std::string ConflictMessage(const std::vector<FieldConflict>& conflicts);

// The manager of a write that names none (fieldManager): the User-Agent up to its first '/',
// as kube-apiserver derives it ("kubectl", "OpenAPI-Generator"); "unknown" without one.
std::string DefaultManager(std::string_view user_agent);

// An error naming fieldManager when `name` is not a valid manager (1 to 128 printable ASCII
// characters).
Status ValidateManager(std::string_view name);

}  // namespace tessera::api

#endif  // TESSERA_API_APPLY_H_
