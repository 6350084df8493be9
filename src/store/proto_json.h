// Protobuf messages to and from nlohmann JSON, in protobuf's JSON mapping as etcd's gateway speaks
// it: original field names, 64-bit integers as strings, bytes in base64, enums by name, fields at
// their default left out. The etcd client keeps a JSON interface over its gRPC messages; these two
// walk the message by reflection, where protobuf's json_util prints text and parses it again
// (16% of the benchmark process's samples on etcd's write path, 4.4% by reflection: measured in
// docs/BENCHMARKS.md).
#ifndef TESSERA_STORE_PROTO_JSON_H_
#define TESSERA_STORE_PROTO_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace google::protobuf {
class Message;
}

namespace tessera::store {

// `in` into `out` (cleared first). Field names as declared or in lowerCamelCase; a 64-bit integer
// as a string or a number; an enum by name or number; null leaves a field at its default. A field
// the message does not have, or a value of the wrong type, is an error naming it.
Status JsonToMessage(const nlohmann::json& in, google::protobuf::Message* out);

// `in` as JSON: every field that is set (not at its default), by its declared name.
nlohmann::json MessageToJson(const google::protobuf::Message& in);

}  // namespace tessera::store

#endif  // TESSERA_STORE_PROTO_JSON_H_
