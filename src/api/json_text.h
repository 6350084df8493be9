// JSON and text from outside the process, read with bounds: JSON parsing that never throws and
// names the field at fault, UTF-8 checks, and text made safe to echo in messages.
#ifndef TESSERA_API_JSON_TEXT_H_
#define TESSERA_API_JSON_TEXT_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

struct JsonLimits {
  int max_depth = 32;                   // nested objects/arrays
  size_t max_string_bytes = 256 << 10;  // any one string value or key
};

// Parses JSON text. InvalidArgument naming the field path ("spec.tasks[0].command[1]: ...")
// when the text is malformed, a number is outside the double range, a string is not UTF-8 or
// longer than the limit, an object repeats a key, or nesting is deeper than the limit. Never
// throws.
Result<nlohmann::json> ParseJson(std::string_view text, const JsonLimits& limits);
Result<nlohmann::json> ParseJson(std::string_view text, int max_depth = 32);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool ValidUtf8(std::string_view text);

// `text` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, and cut to
// at most `max_bytes` (with "..." when cut): safe to put in a message or a JSON string.
std::string SafeText(std::string_view text, size_t max_bytes = 512);

// `value.dump()`, with invalid UTF-8 replaced instead of throwing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace tessera::api

#endif  // TESSERA_API_JSON_TEXT_H_
