// Reading a JSON object field by field with exact error paths: each getter checks the type and
// range of one field and records it as known; Finish() rejects any field nobody asked for.
#ifndef TESSERA_API_FIELDS_H_
#define TESSERA_API_FIELDS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::api {

class Fields {
 public:
  // `obj` must outlive the reader. A non-object (null counts as an empty object when
  // `null_ok`) makes every call fail with "<path>: must be an object".
  Fields(const nlohmann::json& obj, std::string path, bool null_ok = true);

  const std::string& path() const { return path_; }
  // "<path>.<key>" (or "<key>" at the top).
  std::string At(std::string_view key) const;

  // The field, or null when absent; marks it known.
  const nlohmann::json* Get(std::string_view key);

  Status String(std::string_view key, std::string* out, bool required = false);
  // A JSON integer in [min, max]; a string of digits is not accepted.
  Status Int(std::string_view key, int64_t* out, int64_t min, int64_t max, bool required = false);
  Status Bool(std::string_view key, bool* out);
  // One of `allowed`; its index into `allowed` in *out.
  Status Enum(std::string_view key, const std::vector<std::string_view>& allowed, int* out);
  Status StringList(std::string_view key, std::vector<std::string>* out);
  // A map of strings; with `quantities`, numbers are accepted too and kept as their text.
  Status StringMap(std::string_view key, std::map<std::string, std::string>* out,
                   bool quantities = false);
  Status StringMap(std::string_view key, std::map<std::string, std::string, std::less<>>* out);

  // Ok when the value was an object and every field of it was asked for.
  Status Finish() const;

 private:
  Status Pairs(std::string_view key, bool quantities,
               std::vector<std::pair<std::string, std::string>>* out);

  const nlohmann::json& obj_;
  std::string path_;
  bool is_object_;
  std::set<std::string, std::less<>> known_;
};

// InvalidArgument "<path>: <what>".
Status FieldError(const std::string& path, std::string_view what);

// The name of `known` closest to `name` by edit distance (case-insensitive; a swap of two
// neighbours counts one), when it is close enough to be a misspelling of it; empty otherwise.
std::string ClosestName(std::string_view name, const std::vector<std::string_view>& known);

// InvalidArgument "<path>: unknown field" with the closest known name suggested, as
// "<path>: unknown field (did you mean \"<name>\"?)".
Status UnknownField(const std::string& path, std::string_view name,
                    const std::vector<std::string_view>& known);

// "<path>[<i>]".
std::string Index(std::string_view path, size_t i);

}  // namespace tessera::api

#endif  // TESSERA_API_FIELDS_H_
