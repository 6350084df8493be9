// When an agent's Node status is worth writing. A real card's telemetry never stands still
// (an idle H100 reads 73.0-73.3 W from one beat to the next), so comparing samples exactly
// rewrote the Node, and woke the scheduling loop, on every beat of every node. A beat writes
// the Node when anything but telemetry changed, or when a GPU's telemetry moved by more than
// its noise; the agent still writes the whole sample at least once a minute.
#ifndef TESSERA_AGENT_TELEMETRY_H_
#define TESSERA_AGENT_TELEMETRY_H_

#include <nlohmann/json.hpp>

namespace tessera::agent {

// Whether `current` (a Node's status as the agent would write it now) differs from `written`
// (as it last wrote it) by more than telemetry noise. Per GPU of status.telemetry:
//   utilizationPct, memoryUtilizationPct  5 points, or to or from 0 (idle detection)
//   memoryUsedMiB, memoryFreeMiB          256 MiB; a process's usedMiB likewise
//   temperatureC                          3 degrees
//   powerMw                               10% of the written value, at least 5 W
//   smClockMhz                            10% of the written value
//   nvlinkDataKiB (a counter), nvlinkKiBps, pcieTxKiBps, pcieRxKiBps (rates)  never by
//                                         themselves
// Anything else (the GPUs, their health, processes and the pods they belong to, ECC and Xid
// counts, every field outside telemetry) counts at any change.
bool StatusMoved(const nlohmann::json& written, const nlohmann::json& current);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_TELEMETRY_H_
