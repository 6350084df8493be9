// The Node status fields an agent writes for `tessera doctor` (agent/checkup.h), decoded and
// checked: status.checkups (each GPU's ECC pages, row remaps, PCIe link, throttling, NVLink) and
// status.xids (recent XIDs with their time). DecodeNode refuses a malformed one naming the field;
// the doctor reads them through the same decoder.
#ifndef TESSERA_API_GPU_CHECKUP_H_
#define TESSERA_API_GPU_CHECKUP_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::api {

struct GpuCheckupView {
  int64_t index = 0;
  std::string vbios;
  std::optional<int64_t> retired_sbe, retired_dbe;
  bool retire_pending = false;
  std::optional<int64_t> remapped_correctable, remapped_uncorrectable;
  bool remap_pending = false, remap_failed = false;
  std::optional<int64_t> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  std::vector<std::string> throttle;  // NVML's reason names
  int64_t nvlinks = 0;
  std::vector<int64_t> nvlinks_down;
  std::optional<int64_t> nvlink_errors;
};

struct XidSeen {
  int64_t gpu = 0;
  int64_t xid = 0;
  std::string time;  // RFC 3339
};

// status.checkups and status.xids of a Node (absent: empty).
Result<std::vector<GpuCheckupView>> DecodeCheckups(const nlohmann::json* checkups);
Result<std::vector<XidSeen>> DecodeXids(const nlohmann::json* xids);

}  // namespace tessera::api

#endif  // TESSERA_API_GPU_CHECKUP_H_
