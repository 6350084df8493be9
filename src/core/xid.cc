#include "core/xid.h"

#include <algorithm>
#include <array>

namespace tessera::core {

namespace {

constexpr std::array kCatalog = {
    XidInfo{13, XidAction::kRestartApp, "Graphics Engine Exception"},
    XidInfo{31, XidAction::kRestartApp, "GPU memory page fault"},
    XidInfo{43, XidAction::kRestartApp, "GPU stopped processing"},
    XidInfo{45, XidAction::kWorkflow, "Preemptive cleanup, due to previous errors"},
    XidInfo{46, XidAction::kResetGpu, "GPU stopped processing"},
    XidInfo{48, XidAction::kWorkflow, "Double Bit ECC Error"},
    XidInfo{62, XidAction::kResetGpu, "Internal micro-controller halt"},
    XidInfo{63, XidAction::kIgnore, "ECC page retirement or row remapping recording event"},
    XidInfo{64, XidAction::kResetGpu, "ECC page retirement or row remapper recording failure"},
    XidInfo{68, XidAction::kRestartApp, "NVDEC0 Exception"},
    XidInfo{74, XidAction::kWorkflow, "NVLINK Error"},
    XidInfo{79, XidAction::kRestartBareMetal, "GPU has fallen off the bus"},
    XidInfo{92, XidAction::kIgnore, "High single-bit ECC error rate"},
    XidInfo{94, XidAction::kRestartApp, "Contained ECC error"},
    XidInfo{95, XidAction::kResetGpu, "Uncontained ECC error"},
    XidInfo{109, XidAction::kResetGpu, "Context Switch Timeout Error"},
    XidInfo{119, XidAction::kResetGpu, "GSP RPC Timeout"},
    XidInfo{120, XidAction::kResetGpu, "GSP Error"},
    XidInfo{136, XidAction::kResetGpu, ""},
    XidInfo{140, XidAction::kResetGpu, ""},
    XidInfo{143, XidAction::kResetGpu, ""},
};

static_assert(std::is_sorted(kCatalog.begin(), kCatalog.end(),
                             [](const XidInfo& a, const XidInfo& b) { return a.xid < b.xid; }));

}  // namespace

XidInfo LookupXid(uint64_t xid) {
  auto it = std::lower_bound(kCatalog.begin(), kCatalog.end(), xid,
                             [](const XidInfo& info, uint64_t x) { return info.xid < x; });
  if (it != kCatalog.end() && it->xid == xid) return *it;
  return {xid, XidAction::kUnknown, ""};
}

std::string_view ActionName(XidAction action) {
  switch (action) {
    case XidAction::kIgnore:
      return "IGNORE";
    case XidAction::kRestartApp:
      return "RESTART_APP";
    case XidAction::kResetGpu:
      return "RESET_GPU";
    case XidAction::kRestartBareMetal:
      return "RESTART_BM";
    case XidAction::kWorkflow:
      return "WORKFLOW";
    case XidAction::kUnknown:
      break;
  }
  return "UNKNOWN";
}

bool TakesGpuOutOfService(XidAction action) {
  return action != XidAction::kIgnore && action != XidAction::kRestartApp;
}

std::string DescribeXid(uint64_t xid) {
  const XidInfo info = LookupXid(xid);
  std::string out = "XID " + std::to_string(xid);
  if (!info.meaning.empty()) out += " (" + std::string(info.meaning) + ")";
  return out + ": " + std::string(ActionName(info.action));
}

}  // namespace tessera::core
