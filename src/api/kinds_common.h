// What the decoders of Tessera's kinds share across their files (api/kinds.cc: gangs, sharing
// configs, nodes; api/job_decode.cc: jobs; api/queue_kinds.cc: the queueing kinds). Only those
// files include it.
#ifndef TESSERA_API_KINDS_COMMON_H_
#define TESSERA_API_KINDS_COMMON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/fields.h"
#include "core/node.h"
#include "core/status.h"

namespace tessera::api::kinds_detail {

extern const nlohmann::json kNull;
// The object's spec, or null.
const nlohmann::json& Spec(const nlohmann::json& obj);
// metadata.<key> when it is a string, else "".
std::string MetaString(const nlohmann::json& obj, const char* key);
// Tolerations and taints as Kubernetes writes them, at `key` of `f`.
Result<std::vector<core::Toleration>> DecodeTolerations(Fields& f, std::string_view key);
Result<std::vector<core::Taint>> DecodeTaints(Fields& f, std::string_view key);

// Calls `each(item, path)` for each element of the list at `key` (none when it is absent).
template <typename Fn>
Status ForEachItem(Fields& f, std::string_view key, Fn each) {
  const nlohmann::json* list = f.Get(key);
  if (list == nullptr) return Status::Ok();
  const std::string path = f.At(key);
  if (!list->is_array()) return FieldError(path, "must be a list");
  for (size_t i = 0; i < list->size(); ++i) {
    TESSERA_RETURN_IF_ERROR(each((*list)[i], Index(path, i)));
  }
  return Status::Ok();
}

}  // namespace tessera::api::kinds_detail

#endif  // TESSERA_API_KINDS_COMMON_H_
