#include "api/time.h"

#include <cstdio>
#include <ctime>
#include <string>

namespace tessera::api {

std::string FormatTime(int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

int64_t ParseTime(std::string_view text) {
  std::tm tm{};
  int ms = 0;
  const std::string t(text);
  const char* rest = strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return -1;
  if (*rest == '.') {
    int digits = 0;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, ++digits) {
      if (digits < 3) ms = ms * 10 + (*rest - '0');
    }
    for (; digits < 3; ++digits) ms *= 10;
  }
  if (std::string_view(rest) != "Z") return -1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

}  // namespace tessera::api
