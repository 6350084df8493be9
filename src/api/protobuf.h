// Kubernetes' protobuf encoding of request bodies (Content-Type
// application/vnd.kubernetes.protobuf), which kubectl's typed clients send for built-in kinds
// (kubectl create namespace, configmap, priorityclass, quota, job): the "k8s\0" prefix, then a
// runtime.Unknown holding the object's apiVersion, kind and its own protobuf message.
//
// Decoded into the object's JSON form for the kinds whose field numbers are listed here
// (k8s.io/api's generated.proto): core/v1 Namespace, ConfigMap and ResourceQuota,
// scheduling.k8s.io/v1 PriorityClass and batch/v1 Job (the fields kubectl create sets and the
// common ones of a pod template). A field number not listed is an error naming it, never
// dropped.
#ifndef TESSERA_API_PROTOBUF_H_
#define TESSERA_API_PROTOBUF_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

inline constexpr std::string_view kProtobufContentType = "application/vnd.kubernetes.protobuf";

// The object a protobuf body holds, as JSON (apiVersion and kind included). Errors:
// InvalidArgument for a malformed body, naming the field (a truncated value, a string that is
// not UTF-8); FailedPrecondition for a well-formed body holding what is not decoded here (a kind
// or field number not listed, a content encoding), which is to be sent as JSON.

Result<nlohmann::json> KubeProtobufToJson(std::string_view body);

}  // namespace tessera::api

#endif  // TESSERA_API_PROTOBUF_H_
