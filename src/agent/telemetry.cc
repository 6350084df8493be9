#include "agent/telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tessera::agent {

using nlohmann::json;

namespace {

// Counters and rates that move every second: never worth a write by themselves.
bool IsRate(std::string_view field) {
  return field == "nvlinkDataKiB" || field == "nvlinkKiBps" || field == "pcieTxKiBps" ||
         field == "pcieRxKiBps";
}

// Whether numbers `a` (written) and `b` (now) differ beyond `field`'s noise.
bool Moved(const std::string& field, const json& a, const json& b) {
  if (!a.is_number() || !b.is_number()) return a != b;
  const double x = a.get<double>(), y = b.get<double>(), d = std::fabs(x - y);
  if (field == "utilizationPct" || field == "memoryUtilizationPct") {
    return d >= 5 || ((x == 0) != (y == 0));
  }
  if (field == "memoryUsedMiB" || field == "memoryFreeMiB" || field == "usedMiB") return d >= 256;
  if (field == "temperatureC") return d >= 3;
  if (field == "powerMw") return d >= std::max(5000.0, 0.1 * std::fabs(x));
  if (field == "smClockMhz") return d >= 0.1 * std::fabs(x) && d > 0;
  if (IsRate(field)) return false;
  return x != y;
}

// Objects compared field by field with Moved; anything else exactly.
bool ObjectMoved(const json& a, const json& b);

bool ValueMoved(const std::string& field, const json& a, const json& b) {
  if (a.is_object() && b.is_object()) return ObjectMoved(a, b);
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return true;
    for (size_t i = 0; i < a.size(); ++i) {
      if (ValueMoved(field, a[i], b[i])) return true;
    }
    return false;
  }
  return Moved(field, a, b);
}

bool ObjectMoved(const json& a, const json& b) {
  for (const auto& [k, v] : a.items()) {
    if (!b.contains(k)) return !IsRate(k);
    if (ValueMoved(k, v, b[k])) return true;
  }
  for (const auto& [k, v] : b.items()) {
    if (!a.contains(k) && !IsRate(k)) return true;
  }
  return false;
}

}  // namespace

bool StatusMoved(const json& written, const json& current) {
  if (!written.is_object() || !current.is_object()) return written != current;
  json a = written, b = current;
  const json ta = a.contains("telemetry") ? a["telemetry"] : json();
  const json tb = b.contains("telemetry") ? b["telemetry"] : json();
  a.erase("telemetry");
  b.erase("telemetry");
  if (a != b) return true;
  return ValueMoved("telemetry", ta, tb);
}

}  // namespace tessera::agent
