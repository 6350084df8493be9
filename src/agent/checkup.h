// What an agent reports for `tessera doctor` in its Node's status, beside telemetry:
//   status.checkups  each GPU's health facts from NVML (agent/gpu_info.h GpuCheckup): ECC page
//                    retirement, row remapping, PCIe link, clock throttling, NVLink links;
//   status.xids      the XIDs seen lately, with their GPU and time (the newest kXidsKept).
// The formats are api/doctor.h's input; DecodeNode checks them.
#ifndef TESSERA_AGENT_CHECKUP_H_
#define TESSERA_AGENT_CHECKUP_H_

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/gpu_info.h"

namespace tessera::agent {

// status.checkups: per GPU, only the facts NVML gave. Throttle reasons by NVML's names
// ("HwSlowdown", "SwThermalSlowdown", ...), idle and application-clock settings left out.
nlohmann::json CheckupJson(const std::vector<GpuCheckup>& checkups);

// The XIDs seen since the agent started, the newest kept.
class XidLog {
 public:
  static constexpr size_t kXidsKept = 32;
  void Add(uint32_t gpu, uint64_t xid, const std::string& time);
  // status.xids: [{"gpu": 0, "xid": 79, "time": "..."}], oldest first.
  nlohmann::json Json() const;

 private:
  std::deque<nlohmann::json> seen_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_CHECKUP_H_
