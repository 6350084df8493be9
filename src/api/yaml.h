// YAML text (one or more documents; JSON is YAML) as JSON values, with libyaml. Plain scalars
// become booleans, integers, floats or null as YAML 1.2's core schema says; quoted ones stay
// strings. Readers that only parse YAML (the CLI's config, apply's bodies) need nothing more.
#ifndef TESSERA_API_YAML_H_
#define TESSERA_API_YAML_H_

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::api {

// Parses `text` into its documents. Errors give the line; nesting deeper than 64 or more than
// 1,000,000 nodes after alias expansion are errors.
Result<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text);

}  // namespace tessera::api

#endif  // TESSERA_API_YAML_H_
