#include "api/quantity.h"

#include <cctype>
#include <iterator>
#include <utility>

namespace tessera::api {

namespace {

constexpr __int128 kNano = 1'000'000'000;
// Largest accepted magnitude: 2^63 nano-units' worth of any suffix would overflow later math.
constexpr __int128 kMaxNano = static_cast<__int128>(INT64_MAX) * kNano;

// Duration units, largest first.
constexpr std::pair<std::string_view, int64_t> kUnits[] = {
    {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}};

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

Status Bad(std::string_view field, std::string_view text, std::string_view why) {
  return InvalidArgument(std::string(field) + ": " + std::string(why) + ", got " + Quote(text));
}

}  // namespace

Result<Quantity> ParseQuantity(std::string_view text, std::string_view field) {
  std::string_view s = text;
  if (s.empty()) return Bad(field, text, "must be a quantity");
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  __int128 mant = 0;  // digits without the point
  int frac_digits = 0;
  bool seen_point = false;
  int digits = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (seen_point) return Bad(field, text, "is not a valid quantity");
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    if (++digits > 30) return Bad(field, text, "has too many digits");
    mant = mant * 10 + (c - '0');
    if (seen_point) ++frac_digits;
  }
  if (digits == 0) return Bad(field, text, "must start with a number");
  std::string_view suffix = s.substr(i);
  // Scale as a power of ten and a power of two: value = mant * 10^dec * 2^bin / 10^frac.
  int dec = 0;
  int bin = 0;
  if (suffix.empty()) {
  } else if (suffix == "Ki") {
    bin = 10;
  } else if (suffix == "Mi") {
    bin = 20;
  } else if (suffix == "Gi") {
    bin = 30;
  } else if (suffix == "Ti") {
    bin = 40;
  } else if (suffix == "Pi") {
    bin = 50;
  } else if (suffix == "Ei") {
    bin = 60;
  } else if (suffix == "n") {
    dec = -9;
  } else if (suffix == "u") {
    dec = -6;
  } else if (suffix == "m") {
    dec = -3;
  } else if (suffix == "k") {
    dec = 3;
  } else if (suffix == "M") {
    dec = 6;
  } else if (suffix == "G") {
    dec = 9;
  } else if (suffix == "T") {
    dec = 12;
  } else if (suffix == "P") {
    dec = 15;
  } else if (suffix == "E") {
    dec = 18;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool eneg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      eneg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 2) return Bad(field, text, "has an invalid exponent");
    for (char c : e) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        return Bad(field, text, "has an invalid exponent");
      }
      dec = dec * 10 + (c - '0');
    }
    if (eneg) dec = -dec;
  } else {
    return Bad(field, text, "has an unknown suffix " + Quote(suffix));
  }
  // nano = mant * 10^(dec + 9 - frac) * 2^bin
  int p10 = dec + 9 - frac_digits;
  __int128 v = mant;
  for (; p10 > 0; --p10) {
    v *= 10;
    if (v > kMaxNano) return Bad(field, text, "is too large");
  }
  for (; p10 < 0; ++p10) {
    if (v % 10 != 0) return Bad(field, text, "is more precise than a nano-unit");
    v /= 10;
  }
  for (; bin > 0; --bin) {
    v *= 2;
    if (v > kMaxNano) return Bad(field, text, "is too large");
  }
  if (v > kMaxNano) return Bad(field, text, "is too large");
  Quantity q;
  q.nano = neg ? -v : v;
  return q;
}

namespace {

Result<int64_t> CeilDiv(const Quantity& q, __int128 unit, std::string_view field) {
  if (q.negative()) {
    return InvalidArgument(std::string(field) + ": must not be negative");
  }
  const __int128 v = (q.nano + unit - 1) / unit;
  if (v > INT64_MAX) return InvalidArgument(std::string(field) + ": is too large");
  return static_cast<int64_t>(v);
}

}  // namespace

Result<int64_t> ToMilli(const Quantity& q, std::string_view field) {
  return CeilDiv(q, kNano / 1000, field);
}

Result<int64_t> ToMebibytes(const Quantity& q, std::string_view field) {
  return CeilDiv(q, kNano * (1 << 20), field);
}

Result<int64_t> ToInteger(const Quantity& q, std::string_view field) {
  if (q.negative()) return InvalidArgument(std::string(field) + ": must not be negative");
  if (q.nano % kNano != 0) {
    return InvalidArgument(std::string(field) + ": must be a whole number");
  }
  return static_cast<int64_t>(q.nano / kNano);
}

Result<int64_t> ParseDurationMs(std::string_view text, std::string_view field, bool allow_zero) {
  constexpr int64_t kMax = 10LL * 366 * 86'400'000;
  auto bad = [&] { return Bad(field, text, "must be a duration such as 90s, 30m, 1h30m or 7d"); };
  std::string_view s = text;
  if (s.empty()) return bad();
  int64_t total = 0;
  size_t last_unit = 0;  // units must come largest first, each once
  while (!s.empty()) {
    int64_t n = 0;
    size_t i = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      if (n > kMax) return bad();
      n = n * 10 + (s[i] - '0');
    }
    if (i == 0) return bad();
    s.remove_prefix(i);
    size_t u = 0;
    for (; u < std::size(kUnits); ++u) {
      // "ms" before "m" when both could match.
      const std::string_view unit = kUnits[u].first;
      if (unit == "m" && s.substr(0, 2) == "ms") continue;
      if (s.substr(0, unit.size()) == unit) break;
    }
    if (u == std::size(kUnits) || u + 1 <= last_unit) return bad();
    last_unit = u + 1;
    s.remove_prefix(kUnits[u].first.size());
    if (n > kMax / kUnits[u].second) return Bad(field, text, "is longer than ten years");
    total += n * kUnits[u].second;
    if (total > kMax) return Bad(field, text, "is longer than ten years");
  }
  if (total == 0 && !allow_zero) return Bad(field, text, "must be longer than zero");
  return total;
}

std::string FormatDurationMs(int64_t ms) {
  if (ms <= 0) return "0s";
  std::string out;
  for (const auto& [unit, size] : kUnits) {
    if (ms >= size) {
      out += std::to_string(ms / size) + std::string(unit);
      ms %= size;
    }
  }
  return out;
}

}  // namespace tessera::api
