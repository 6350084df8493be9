// Reading parsed stored objects without copying and without exceptions: a missing member or
// one of another type reads as empty.
#ifndef TESSERA_API_JSON_READ_H_
#define TESSERA_API_JSON_READ_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::api {

// The member `key` of `o`, or null when `o` is not an object or lacks it.
inline const nlohmann::json& Member(const nlohmann::json& o, const char* key) {
  static const nlohmann::json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

// `v` when it is an array, else an empty one.
inline const nlohmann::json& ListOf(const nlohmann::json& v) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  return v.is_array() ? v : kEmpty;
}

// The string member `key` of `o`, or "".
inline std::string Str(const nlohmann::json& o, const char* key) {
  const nlohmann::json& v = Member(o, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// The number member `key` of `o`, or 0.
inline double Num(const nlohmann::json& o, const char* key) {
  const nlohmann::json& v = Member(o, key);
  return v.is_number() ? v.get<double>() : 0;
}

}  // namespace tessera::api

#endif  // TESSERA_API_JSON_READ_H_
