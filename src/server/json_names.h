// The names the files of src/server read and write JSON objects with (api/json_read.h,
// api/time.h, nlohmann's json), declared once for the folder. An internal header: nothing
// outside src/server includes it.
#ifndef TESSERA_SERVER_JSON_NAMES_H_
#define TESSERA_SERVER_JSON_NAMES_H_

#include <nlohmann/json.hpp>

#include "api/json_read.h"
#include "api/time.h"

namespace tessera::server {

using api::FormatTime;
using api::ListOf;
using api::Member;
using api::Num;
using api::ParseTime;
using api::Str;
using nlohmann::json;

}  // namespace tessera::server

#endif  // TESSERA_SERVER_JSON_NAMES_H_
