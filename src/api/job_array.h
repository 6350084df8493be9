// Job arrays as Kubernetes' batch/v1 Job writes them: `completions` tasks of one template, at most
// `parallelism` (the task's replicas) at a time, each placed and charged as it starts. With
// completionMode Indexed each pod runs one index in [0, completions) (JOB_COMPLETION_INDEX) and a
// failed index is retried by itself up to backoffLimitPerIndex; otherwise failures count against
// the Job's backoffLimit.
//
// A running array's status.pods holds its slots: one entry per pod running (or just ended) and a
// null per slot waiting for a placement. Each placed entry carries the `index` it runs. Progress
// lives beside the slots, in Kubernetes' own fields: succeeded, failed, completedIndexes,
// failedIndexes ("1,3-5,7"), and indexFailures (failures so far of indexes not yet done).
#ifndef TESSERA_API_JOB_ARRAY_H_
#define TESSERA_API_JOB_ARRAY_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tessera::api {

struct ArraySpec {
  int32_t completions = 1;
  int32_t parallelism = 1;               // the task's replicas
  int32_t backoff_limit = 6;             // failed pods the Job survives (Kubernetes' default)
  int32_t backoff_limit_per_index = -1;  // -1: none (failures count against backoff_limit)
  int32_t max_failed_indexes = -1;       // -1: no limit
  nlohmann::json pod_failure_policy;     // api/pod_failure_policy.h; null: none
  std::string pod_prefix;                // "<ns>/<job>-": a pod's Kubernetes name is this + its own
};

// Indexes in [0, completions) as sorted, disjoint, non-adjacent ranges; Kubernetes' text form is
// "1,3-5,7".
class IndexSet {
 public:
  // Errors name what is wrong; every index must lie in [0, limit).
  static Result<IndexSet> Parse(std::string_view text, int32_t limit);
  std::string Text() const;
  bool Contains(int32_t i) const;
  // The smallest index at or after `i` not in the set.
  int32_t NextAbsent(int32_t i) const;
  void Insert(int32_t i);
  int32_t Count() const;

 private:
  std::vector<std::pair<int32_t, int32_t>> ranges_;  // [first, last]
};

struct ArrayProgress {
  int32_t succeeded = 0;                      // pods that succeeded
  int32_t failed = 0;                         // pods that failed
  IndexSet completed;                         // indexes that succeeded
  IndexSet failed_indexes;                    // indexes that failed for good (backoffLimitPerIndex)
  std::map<int32_t, int32_t> index_failures;  // failures of indexes not done yet
};

// Whether a Job object (tessera.io/v1) is an array: its spec gives completions.
bool IsArrayJob(const nlohmann::json& job);

// Reads the progress fields of a Job's status; absent fields are empty, malformed ones an error.
Result<ArrayProgress> ReadProgress(const nlohmann::json& status, const ArraySpec& spec);
// Writes them: completedIndexes always (a NonIndexed array tracks its tasks by index too, but
// only an Indexed one shows them to Kubernetes clients), failedIndexes with
// backoffLimitPerIndex.
void WriteProgress(const ArrayProgress& p, const ArraySpec& spec, nlohmann::json* status);
// Copies the progress fields from one status to another (a rewrite of a preempted or waiting
// array keeps what it has done).
void KeepProgress(const nlohmann::json& from, nlohmann::json* to);

// What finished pods do to an admitted array. Each entry of status.pods whose state is final
// (Succeeded, Failed) is counted, its index marked, and its slot removed; then null slots are
// added or dropped so that running plus waiting slots are min(parallelism, running + indexes
// still to start). `finished` says the Job's outcome once it has one.
struct ArrayStep {
  bool changed = false;
  std::string outcome;  // "", "Succeeded" or "Failed"
  std::string reason;   // Kubernetes' condition reason for a failure
  std::string message;
};
ArrayStep AdvanceArray(const ArraySpec& spec, nlohmann::json* status);

// Indexes still to start: neither done nor on a slot.
int32_t IndexesToStart(const ArraySpec& spec, const nlohmann::json& status);

// Gives each placed entry of status.pods that has no index yet the lowest index still to start,
// and names it "<task>-<index>" (with "-<retry>" for an index that failed before).
void AssignIndexes(const ArraySpec& spec, const std::string& task, nlohmann::json* status);

}  // namespace tessera::api

#endif  // TESSERA_API_JOB_ARRAY_H_
