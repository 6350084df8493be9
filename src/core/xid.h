// NVIDIA's Xid catalog: what each Xid error means and the immediate action NVIDIA's Xid
// documentation gives it. The agent's health tracking and the diagnosis read it; nothing here
// acts. Pure data and lookups.
//
// Actions, as NVIDIA names them:
//   IGNORE       nothing to do (63, 92)
//   RESTART_APP  the application's fault, or contained: restart it (13, 31, 94; and 43 and 68,
//                which the NVIDIA device plugin skips as application errors)
//   RESET_GPU    reset the GPU before it takes work again (46, 62, 64, 95, 109, 119, 120, 136,
//                140, 143)
//   RESTART_BM   reboot the node (79: the GPU fell off the bus)
//   WORKFLOW     a diagnosis workflow decides (45, 48, 74)
// An Xid not in the catalog reads as kUnknown: treated as needing a reset, the safe side.
#ifndef TESSERA_CORE_XID_H_
#define TESSERA_CORE_XID_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::core {

enum class XidAction { kIgnore, kRestartApp, kResetGpu, kRestartBareMetal, kWorkflow, kUnknown };

struct XidInfo {
  uint64_t xid = 0;
  XidAction action = XidAction::kUnknown;
  std::string_view meaning;  // NVIDIA's name for it; empty when the catalog has none here
};

XidInfo LookupXid(uint64_t xid);

// NVIDIA's name of the action ("RESET_GPU", ...; "UNKNOWN").
std::string_view ActionName(XidAction action);

// Whether the GPU must stop taking work: RESET_GPU, RESTART_BM, a workflow, or unknown. An
// application's fault (RESTART_APP) and IGNORE leave it in service.
bool TakesGpuOutOfService(XidAction action);

// "XID 79 (GPU has fallen off the bus): RESTART_BM" for reasons and events.
std::string DescribeXid(uint64_t xid);

}  // namespace tessera::core

#endif  // TESSERA_CORE_XID_H_
