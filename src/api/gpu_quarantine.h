// The quarantine the scheduling loop keeps on a Node (core/quarantine.h), in the Node's
// annotation tessera.io/gpu-quarantine as JSON, and what the loop reads of a Node to decide it:
//
//   {"gpus": [{"index": 3, "xid": 95, "since": "2026-...Z", "resetRequested": true}],
//    "reboot": {"xid": 79, "since": "...", "bootId": "..."},
//    "handledUntil": "..."}
//
// Quarantined GPUs take no work (DecodeNode marks them cordoned, as `tessera top gpus` and
// `kubectl describe node` show); `tessera uncordon NODE --gpu I` lifts a GPU's quarantine,
// `tessera uncordon NODE` the reboot mark. The node's agent reads resetRequested (and resets the
// GPU with --allow-gpu-reset) and reports status.resets and status.bootId.
#ifndef TESSERA_API_GPU_QUARANTINE_H_
#define TESSERA_API_GPU_QUARANTINE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/quarantine.h"
#include "core/status.h"

namespace tessera::api {

inline constexpr std::string_view kGpuQuarantineAnnotation = "tessera.io/gpu-quarantine";

// The node's quarantine (none: empty); an annotation that is not one is an error naming it.
Result<core::NodeQuarantine> QuarantineOf(const nlohmann::json& node);
// The annotation's value for `q`; "" when it holds nothing worth keeping but `handled_until`.
std::string QuarantineText(const core::NodeQuarantine& q);
// `node` with its annotation set to `q`.
nlohmann::json WithQuarantine(nlohmann::json node, const core::NodeQuarantine& q);

// What its agent reports of a Node for the quarantine: its Xids (status.xids), GPU resets
// (status.resets), the GPUs passing their checks (healthy, no uncorrected ECC error, no pending
// page retirement or row remap, no failed remap), its boot (status.bootId), and its kept state;
// the error of QuarantineOf when its annotation is not one.
Result<core::NodeHealthReport> HealthReportOf(const nlohmann::json& node);

// status.resets as the agent writes it: [{"gpu": 3, "time": "...", "ok": true, "message": ""}].
Status ValidateResets(const nlohmann::json* resets);

}  // namespace tessera::api

#endif  // TESSERA_API_GPU_QUARANTINE_H_
