// Times as the API writes them: RFC 3339 in UTC with milliseconds ("2026-11-21T08:40:00.123Z").
#ifndef TESSERA_API_TIME_H_
#define TESSERA_API_TIME_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::api {

std::string FormatTime(int64_t ms_since_epoch);
// Milliseconds since the epoch; -1 when malformed.
int64_t ParseTime(std::string_view text);

}  // namespace tessera::api

#endif  // TESSERA_API_TIME_H_
