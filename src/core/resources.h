// Integer resource arithmetic: CPU in millicores, memory in MiB, GPU in milli-GPUs.
#ifndef TESSERA_CORE_RESOURCES_H_
#define TESSERA_CORE_RESOURCES_H_

#include <cstdint>

namespace tessera::core {

// One whole GPU expressed in milli-GPUs.
inline constexpr int64_t kMilliPerGpu = 1000;
// Most GPUs a node may carry; device picks are stored inline up to this bound.
inline constexpr int kMaxGpusPerNode = 16;

struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;

  Resources& operator+=(const Resources& o) {
    cpu_milli += o.cpu_milli;
    memory_mib += o.memory_mib;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    cpu_milli -= o.cpu_milli;
    memory_mib -= o.memory_mib;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend bool operator==(const Resources&, const Resources&) = default;
  // True when every dimension of this fits within `cap`.
  bool FitsIn(const Resources& cap) const {
    return cpu_milli <= cap.cpu_milli && memory_mib <= cap.memory_mib;
  }
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_RESOURCES_H_
