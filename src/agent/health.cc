#include "agent/health.h"

#include "core/xid.h"

namespace tessera::agent {

std::vector<HealthChange> HealthTracker::Observe(
    int64_t now_ms, const std::vector<GpuSample>& samples,
    const std::vector<std::pair<uint32_t, uint64_t>>& xids) {
  std::vector<HealthChange> out;
  std::map<uint32_t, std::string> errors;  // gpu -> what went wrong in this round
  for (const auto& [gpu, xid] : xids) {
    const core::XidInfo info = core::LookupXid(xid);
    if (options_.ignored_xids ? options_.ignored_xids->contains(xid)
                              : !core::TakesGpuOutOfService(info.action)) {
      continue;
    }
    errors[gpu] = core::DescribeXid(xid);
  }
  for (const GpuSample& s : samples) {
    State& st = gpus_[s.index];
    // The first sample sets the baseline: errors from before the agent started are history.
    if (st.seen && s.ecc_uncorrected > st.ecc_uncorrected) {
      errors[s.index] =
          std::to_string(s.ecc_uncorrected - st.ecc_uncorrected) + " new double-bit ECC error(s)";
    }
    st.ecc_uncorrected = s.ecc_uncorrected;
    st.seen = true;
  }
  for (auto& [gpu, st] : gpus_) {
    auto e = errors.find(gpu);
    if (e != errors.end()) {
      st.last_error_ms = now_ms;
      if (st.healthy) {
        st.healthy = false;
        out.push_back({gpu, false, e->second});
      }
    } else if (!st.healthy && now_ms - st.last_error_ms >= options_.quiet_ms) {
      st.healthy = true;
      out.push_back(
          {gpu, true, "no new errors for " + std::to_string(options_.quiet_ms / 1000) + " s"});
    }
  }
  // XIDs for GPUs no sample mentioned yet.
  for (const auto& [gpu, why] : errors) {
    if (gpus_.contains(gpu)) continue;
    State& st = gpus_[gpu];
    st.healthy = false;
    st.last_error_ms = now_ms;
    out.push_back({gpu, false, why});
  }
  return out;
}

std::optional<HealthChange> HealthTracker::Reset(uint32_t gpu) {
  State& st = gpus_[gpu];
  const bool was = st.healthy;
  st = State{};
  if (was) return std::nullopt;
  return HealthChange{gpu, true, "the GPU was reset"};
}

bool HealthTracker::Healthy(uint32_t gpu) const {
  auto it = gpus_.find(gpu);
  return it == gpus_.end() || it->second.healthy;
}

}  // namespace tessera::agent
