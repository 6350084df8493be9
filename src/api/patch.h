// The patch formats Kubernetes' PATCH verb takes, applied to an object in its Kubernetes shape:
//
//   application/merge-patch+json            JSON merge patch (RFC 7386)
//   application/json-patch+json             JSON patch (RFC 6902)
//   application/strategic-merge-patch+json  Kubernetes' strategic merge patch, for the kinds
//                                           kubectl patches that way (Pod, Job, ConfigMap ...)
//
// Strategic merge follows k8s.io/apimachinery/pkg/util/strategicpatch: lists of objects with a
// patch merge key are merged element by element on that key (containers, env, volumes ...), the
// other lists are replaced; null deletes a field; the directives $patch (replace, delete, merge),
// $setElementOrder/<list>, $retainKeys and $deleteFromPrimitiveList/<list> are honoured. The
// merge key of a list is found by the list's field name, as Kubernetes' types name it.
#ifndef TESSERA_API_PATCH_H_
#define TESSERA_API_PATCH_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

// kApply is server-side apply (application/apply-patch+yaml), merged by api/apply.h's Apply.
enum class PatchType : uint8_t { kMerge, kJson, kStrategicMerge, kApply };

// The patch type a Content-Type names; an error (naming the types taken) for any other, and
// for server-side apply unless `apply_served`.
Result<PatchType> PatchTypeOf(std::string_view content_type, bool apply_served = false);

// `target` with `patch` applied (kApply is an error: see Apply). Errors (a JSON patch whose test
// fails or whose path does not exist, a directive Tessera does not know, a patch of the wrong
// shape) name the place.
Result<nlohmann::json> ApplyPatch(const nlohmann::json& target, const nlohmann::json& patch,
                                  PatchType type);

// The merge key of a list field under strategic merge ("name" for containers), or "" when the
// list is replaced as a whole.
std::string_view StrategicMergeKey(std::string_view field);

}  // namespace tessera::api

#endif  // TESSERA_API_PATCH_H_
