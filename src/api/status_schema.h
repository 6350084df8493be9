// The status of each kind is the system's (the scheduling loop's and the node agents'), and it is
// checked on every write, by every principal, against the shape those writers produce, so a
// stored status can always be read back:
//
//   Job    phase (Pending | Admitted | Succeeded | Failed), message, queue, flavors {resource:
//          flavor}, priority, admittedAt, finishedAt, pods[] (null for a gang member not placed,
//          else {name, node, cpuMilli, memoryMiB, devices[] {gpu, index, uuid, kind, milli,
//          memoryMiB, gpuMilli, migInstance, migProfile, replicas}, state {phase (Running |
//          Succeeded | Failed), restarts, exitCode, signal, message, limits, finishedAt}}),
//          waitingPods[] {name, reason, count (the pods it stands for, from the one it names
//          on)}, idle {since, pods[], message}
//   Queue  active, message
//   Node   see DecodeNode
//   others an object (nothing reads it)
#ifndef TESSERA_API_STATUS_SCHEMA_H_
#define TESSERA_API_STATUS_SCHEMA_H_

#include <cstdint>

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

// The most pods a Job may have in all (as Kubernetes' Indexed Jobs: 100,000 completions): its
// status lists each of them (`pods`, `waitingPods`), and a status beyond this is unreadable.
inline constexpr int64_t kMaxJobPods = 100'000;

// Checks `status` (null: none) of an object of `kind`; errors name the field ("status.pods[0].
// node: must be a string, got 5").
Status ValidateStatus(std::string_view kind, const nlohmann::json& status);

}  // namespace tessera::api

#endif  // TESSERA_API_STATUS_SCHEMA_H_
