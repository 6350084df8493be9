// Kubernetes resource quantities ("8", "500m", "32Gi", "1.5", "2e3") as exact integers.
#ifndef TESSERA_API_QUANTITY_H_
#define TESSERA_API_QUANTITY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

// A parsed quantity in nano-units (value x 1e9), exact for every valid input up to 9.2e9 units
// after scaling; larger values are rejected as absurd.
struct Quantity {
  __int128 nano = 0;
  bool negative() const { return nano < 0; }
};

// Parses a quantity. `field` names it in the error ("spec...limits.cpu: ...").
Result<Quantity> ParseQuantity(std::string_view text, std::string_view field);

// Conversions; each rounds up (a request never shrinks) except ToInteger, which fails on a
// fraction. All fail on negatives.
Result<int64_t> ToMilli(const Quantity& q, std::string_view field);
Result<int64_t> ToMebibytes(const Quantity& q, std::string_view field);
Result<int64_t> ToInteger(const Quantity& q, std::string_view field);

// A duration as whole numbers with units, largest first: "90s", "30m", "1h30m", "7d", "250ms".
// Milliseconds; fails (naming `field`) on anything else, on zero when `allow_zero` is false, and
// beyond ten years.
Result<int64_t> ParseDurationMs(std::string_view text, std::string_view field,
                                bool allow_zero = true);

// The duration in the same form, largest units first: 5400000 -> "1h30m", 90000 -> "1m30s".
std::string FormatDurationMs(int64_t ms);

}  // namespace tessera::api

#endif  // TESSERA_API_QUANTITY_H_
