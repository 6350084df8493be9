// Kubernetes' Job podFailurePolicy: rules, in order, that decide what a failed pod means for its
// Job by its container's exit code.
//   FailJob    the Job fails at once (reason PodFailurePolicy), whatever its backoffLimit;
//   FailIndex  the pod's index fails for good (Indexed Jobs with backoffLimitPerIndex);
//   Ignore     the failure does not count against backoffLimit: the pod runs again;
//   Count      it counts, as without a rule (also when no rule matches).
// Rules on pod conditions (onPodConditions, e.g. DisruptionTarget) are accepted and never match
// an exit: a pod disrupted by preemption, eviction or a node's loss is not a failure here; its
// Job goes back to its queue whole and nothing is counted.
//
// The translation of a batch/v1 Job checks the policy as Kubernetes' validation does; the node
// agent (a Job of one pod set) and the array controller (api/job_array.h) apply it.
#ifndef TESSERA_API_POD_FAILURE_POLICY_H_
#define TESSERA_API_POD_FAILURE_POLICY_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::api {

// Checks spec.podFailurePolicy (at `path`) of a Job whose pod runs `containers` (their names;
// the first is the one run) with `restart_policy` (at `restart_path`); `per_index`: the Job
// sets backoffLimitPerIndex. Errors name the field and say what Kubernetes says. Returns the
// policy as a task carries it: {container (the first's name), rules}, each onPodConditions
// status defaulted to True.
Result<nlohmann::json> CheckPodFailurePolicy(const nlohmann::json& policy, const std::string& path,
                                             const nlohmann::json& containers,
                                             std::string_view restart_policy,
                                             const std::string& restart_path, bool per_index);

// What a failed pod's exit means under `policy` (a checked policy; null: none).
struct FailureVerdict {
  std::string action = "Count";  // FailJob, FailIndex, Ignore or Count
  int rule = -1;                 // the index of the rule that matched, -1: none
  // For FailJob and FailIndex, as Kubernetes words it: "Container main for pod ns/pod failed
  // with exit code 42 matching FailJob rule at index 0".
  std::string message;
};
// `exit_code` is the container's (128 + the signal for one killed by a signal); `pod` names it
// as "<ns>/<pod>".
FailureVerdict JudgeFailure(const nlohmann::json& policy, int exit_code, std::string_view pod);

}  // namespace tessera::api

#endif  // TESSERA_API_POD_FAILURE_POLICY_H_
