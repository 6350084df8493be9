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
//
// Every patch is bounded, so that one request cannot hold the server (docs/SECURITY.md):
// - its result may be at most kMaxObjectBytes (etcd's request limit), checked as it grows;
// - a JSON patch has at most kMaxJsonPatchOperations operations (kube-apiserver's limit), and
//   copies at most kMaxPatchWorkBytes in all (a chain of copies that each double the object
//   stops at the size bound long before);
// - nesting stays within kMaxPatchDepth;
// - strategic merges of keyed lists, $setElementOrder, $deleteFromPrimitiveList and merged
//   primitive lists run in time linear in the lists (hashing, no pairwise scans).
// A result over a bound is TooLarge (HTTP 413) naming the bound.
#ifndef TESSERA_API_PATCH_H_
#define TESSERA_API_PATCH_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

// The largest object a write may make: etcd's default request limit, 1.5 MiB.
inline constexpr size_t kMaxObjectBytes = 1536 * 1024;
// kube-apiserver's maxJSONPatchOperations.
inline constexpr size_t kMaxJsonPatchOperations = 10'000;
// What the operations of one JSON patch may copy, in bytes of JSON text, all together.
inline constexpr size_t kMaxPatchWorkBytes = 64 << 20;
// The deepest nesting a patch may make (request bodies are read to 32 levels).
inline constexpr int kMaxPatchDepth = 64;

// The length of `value`'s compact JSON text, counted without writing it; `depth` (when set)
// gets its nesting depth. Stops counting past `limit` (returning a value above it) and past
// kMaxPatchDepth levels (setting depth above it).
size_t JsonTextSize(const nlohmann::json& value, size_t limit = SIZE_MAX, int* depth = nullptr);

// TooLarge naming the bound when `value`'s JSON text passes kMaxObjectBytes or its nesting
// passes kMaxPatchDepth; `what` names it ("the patched object").
Status CheckObjectBounds(const nlohmann::json& value, std::string_view what);

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
