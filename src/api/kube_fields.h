// Kubernetes' own types as Tessera reads them, field by field: each field's type, what it
// means, and what Tessera does with it (acts on it, or accepts it with a note that it does
// not). One table per type serves both readers of it: the manifest translation checks a
// document against it (KnownFields: an unknown field is an error naming the closest known one,
// a field not acted on a warning), and the OpenAPI documents describe the type with it, so that
// `kubectl explain pod.spec.containers` shows the fields and says which are not acted on.
#ifndef TESSERA_API_KUBE_FIELDS_H_
#define TESSERA_API_KUBE_FIELDS_H_

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::api {

// What Tessera does with a field of a Kubernetes object: acts on it (`ignored` empty), or
// accepts it with a warning saying what happens instead. `type` is the field's type as
// `kubectl explain` shows it: string, integer, boolean, object (any object), a type of
// KubeTypes() by name, "[]T" a list and "map[string]T" a map of one of those; empty:
// undescribed. `description` says what it is.
struct FieldUse {
  std::string_view name;
  std::string_view ignored;
  std::string_view type = {};
  std::string_view description = {};
};

// A described type: its name as kubectl shows it ("PodSpec"), its schema's name in the OpenAPI
// documents ("io.k8s.api.core.v1.PodSpec"), what it is, and its fields (none: Quantity, a
// string or a number).
struct KubeType {
  std::string_view name;
  std::string_view schema;
  std::string_view description;
  std::span<const FieldUse> fields;
};

// Every described type: Kubernetes' (ObjectMeta, PodSpec, Container and what they hold,
// JobSpec, PodTemplateSpec, Quantity, ...), then each family's.
std::span<const KubeType> KubeTypes();
// One family's types: Volcano's, Kubeflow's and Kueue's (api/crd_fields.cc); Tessera's own
// tessera.io/v1 kinds' (api/tessera_fields.cc).
std::span<const KubeType> CrdKubeTypes();
std::span<const KubeType> TesseraKubeTypes();
// The type named `name`; aborts on a name not in KubeTypes() (a programming error).
const KubeType& KubeTypeNamed(std::string_view name);
// Its fields, for KnownFields.
std::span<const FieldUse> KubeFieldsOf(std::string_view name);

using Warnings = std::vector<std::string>;

// A value that asks for nothing (null, false, 0, "", {} or []): accepted without a warning.
bool AsksNothing(const nlohmann::json& v);

// Checks `obj`'s fields against `known`: a field not listed is an error, "unknown field" with
// the closest known name; a listed one with a note adds the warning "<path>.<field>: <note>"
// unless its value asks for nothing (null, false, 0, "", {} or []). `path` names `obj`.
Status KnownFields(const nlohmann::json& obj, const std::string& path,
                   std::span<const FieldUse> known, Warnings* warnings);

// The OpenAPI v3 schema of field type `type` (as FieldUse::type), with `description`; named
// types are referenced under `ref_prefix` ("#/components/schemas/").
nlohmann::json FieldSchema(std::string_view type, std::string_view description,
                           std::string_view ref_prefix);
// The OpenAPI v3 schema of a described type: its properties, each field's description the
// note when Tessera does not act on it.
nlohmann::json TypeSchema(const KubeType& type, std::string_view ref_prefix);

}  // namespace tessera::api

#endif  // TESSERA_API_KUBE_FIELDS_H_
