#include "core/framework.h"

#include <algorithm>

namespace tessera::core {

void ScorePlugin::NormalizeScores(std::span<int64_t> scores) const { MinMaxNormalize(scores); }

void MinMaxNormalize(std::span<int64_t> scores) {
  if (scores.empty()) return;
  auto [lo_it, hi_it] = std::minmax_element(scores.begin(), scores.end());
  const int64_t lo = *lo_it;
  const int64_t hi = *hi_it;
  for (int64_t& s : scores) {
    if (hi == lo) {
      s = kMaxNodeScore;
    } else {
      // (s - lo) * kMax may overflow for huge raw ranges: divide in 128 bits.
      s = static_cast<int64_t>(static_cast<__int128>(s - lo) * kMaxNodeScore / (hi - lo));
    }
  }
}

}  // namespace tessera::core
