// GPU health from what NVML reports: an XID whose action in NVIDIA's catalog takes the GPU out of
// service (core/xid.h: RESET_GPU, RESTART_BM, a workflow, or an XID the catalog lacks; not
// RESTART_APP or IGNORE) or a new double-bit (uncorrected) ECC error marks the GPU unhealthy, and
// the scheduler stops using it.
// Unlike the device plugin, a GPU recovers on its own once it has been quiet for a while.
// Pure logic: samples, XIDs and the time come in; health and its changes come out.
#ifndef TESSERA_AGENT_HEALTH_H_
#define TESSERA_AGENT_HEALTH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/gpu_info.h"

namespace tessera::agent {

struct HealthOptions {
  // XIDs that leave a GPU in service, when the admin names them (--ignore-xids); unset: those
  // NVIDIA's catalog gives RESTART_APP or IGNORE.
  std::optional<std::set<uint64_t>> ignored_xids;
  int64_t quiet_ms = 5 * 60'000;  // healthy again after this long without a new error
};

struct HealthChange {
  uint32_t gpu = 0;
  bool healthy = false;
  std::string reason;
};

class HealthTracker {
 public:
  explicit HealthTracker(HealthOptions options = {}) : options_(std::move(options)) {}

  // Feeds one round of observations; returns what changed.
  std::vector<HealthChange> Observe(int64_t now_ms, const std::vector<GpuSample>& samples,
                                    const std::vector<std::pair<uint32_t, uint64_t>>& xids);

  bool Healthy(uint32_t gpu) const;
  // The GPU was reset: healthy again at once, and its ECC baseline taken anew at the next
  // sample (a reset clears the volatile counts). Its change, when it was unhealthy.
  std::optional<HealthChange> Reset(uint32_t gpu);

 private:
  struct State {
    bool healthy = true;
    int64_t last_error_ms = 0;
    uint64_t ecc_uncorrected = 0;
    bool seen = false;
  };
  HealthOptions options_;
  std::map<uint32_t, State> gpus_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_HEALTH_H_
