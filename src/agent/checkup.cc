#include "agent/checkup.h"

#include <utility>

namespace tessera::agent {

using nlohmann::json;

namespace {

// nvmlClocksThrottleReasons that say something is wrong or limiting (agent/nvml_abi.h), by
// NVML's names. GpuIdle, ApplicationsClocksSetting and the display clock are normal states.
constexpr std::pair<uint64_t, const char*> kThrottles[] = {
    {0x4, "SwPowerCap"},         {0x8, "HwSlowdown"},         {0x10, "SyncBoost"},
    {0x20, "SwThermalSlowdown"}, {0x40, "HwThermalSlowdown"}, {0x80, "HwPowerBrakeSlowdown"},
};

template <typename T>
void Put(json& obj, const char* key, const std::optional<T>& v) {
  if (v) obj[key] = *v;
}

}  // namespace

json CheckupJson(const std::vector<GpuCheckup>& checkups) {
  json out = json::array();
  for (const GpuCheckup& c : checkups) {
    json g = {{"index", c.index}};
    if (!c.vbios.empty()) g["vbios"] = c.vbios;
    json pages = json::object();
    Put(pages, "singleBit", c.retired_sbe);
    Put(pages, "doubleBit", c.retired_dbe);
    Put(pages, "pending", c.retire_pending);
    if (!pages.empty()) g["retiredPages"] = pages;
    json rows = json::object();
    Put(rows, "correctable", c.remapped_correctable);
    Put(rows, "uncorrectable", c.remapped_uncorrectable);
    Put(rows, "pending", c.remap_pending);
    Put(rows, "failed", c.remap_failed);
    if (!rows.empty()) g["remappedRows"] = rows;
    json pcie = json::object();
    Put(pcie, "gen", c.pcie_gen);
    Put(pcie, "maxGen", c.pcie_gen_max);
    Put(pcie, "width", c.pcie_width);
    Put(pcie, "maxWidth", c.pcie_width_max);
    if (!pcie.empty()) g["pcie"] = pcie;
    if (c.throttle_reasons) {
      json reasons = json::array();
      for (const auto& [bit, name] : kThrottles) {
        if (*c.throttle_reasons & bit) reasons.push_back(name);
      }
      g["throttle"] = reasons;
    }
    if (c.nvlinks > 0) {
      g["nvlink"] = {{"links", c.nvlinks}, {"down", c.nvlinks_down}};
      Put(g["nvlink"], "errors", c.nvlink_errors);
    }
    out.push_back(std::move(g));
  }
  return out;
}

void XidLog::Add(uint32_t gpu, uint64_t xid, const std::string& time) {
  seen_.push_back({{"gpu", gpu}, {"xid", xid}, {"time", time}});
  while (seen_.size() > kXidsKept) seen_.pop_front();
}

json XidLog::Json() const { return json(seen_); }

}  // namespace tessera::agent
