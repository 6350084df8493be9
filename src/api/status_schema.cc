#include "api/status_schema.h"

#include <cstdint>
#include <string>

#include "api/fields.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr int64_t kMaxInt32 = INT32_MAX;
constexpr int64_t kMaxInt64 = INT64_MAX;

// A list at `key` of `f` whose entries `each` checks; absent is fine.
template <class Fn>
Status List(Fields& f, std::string_view key, size_t max, Fn each) {
  const json* v = f.Get(key);
  if (v == nullptr) return Status::Ok();
  const std::string path = f.At(key);
  if (!v->is_array()) return FieldError(path, "must be a list");
  if (v->size() > max) return FieldError(path, "at most " + std::to_string(max) + " entries");
  for (size_t i = 0; i < v->size(); ++i) TESSERA_RETURN_IF_ERROR(each((*v)[i], Index(path, i)));
  return Status::Ok();
}

Status Device(const json& d, const std::string& path) {
  Fields f(d, path, false);
  int64_t n = 0;
  std::string s;
  int kind = 0;
  TESSERA_RETURN_IF_ERROR(f.Int("gpu", &n, 0, 63, true));
  TESSERA_RETURN_IF_ERROR(f.Int("index", &n, 0, kMaxInt32));
  TESSERA_RETURN_IF_ERROR(f.String("uuid", &s));
  TESSERA_RETURN_IF_ERROR(f.Enum("kind", {"whole", "share", "mig", "replica"}, &kind));
  if (f.Get("kind") == nullptr) return FieldError(f.At("kind"), "is required");
  TESSERA_RETURN_IF_ERROR(f.Int("milli", &n, 0, 1000));
  TESSERA_RETURN_IF_ERROR(f.Int("memoryMiB", &n, 0, kMaxInt64));
  TESSERA_RETURN_IF_ERROR(f.Int("gpuMilli", &n, 0, 1000));
  TESSERA_RETURN_IF_ERROR(f.Int("migInstance", &n, 0, 255));
  TESSERA_RETURN_IF_ERROR(f.String("migProfile", &s));
  TESSERA_RETURN_IF_ERROR(f.Int("replicas", &n, 0, 65535));
  bool mps = false;
  TESSERA_RETURN_IF_ERROR(f.Bool("mps", &mps));
  return f.Finish();
}

Status PodState(const json& st, const std::string& path) {
  Fields f(st, path, false);
  int64_t n = 0;
  std::string s;
  int phase = 0;
  TESSERA_RETURN_IF_ERROR(f.Enum("phase", {"Running", "Succeeded", "Failed"}, &phase));
  TESSERA_RETURN_IF_ERROR(f.Int("restarts", &n, 0, kMaxInt32));
  TESSERA_RETURN_IF_ERROR(f.Int("failures", &n, 0, kMaxInt32));  // failed attempts (Never)
  TESSERA_RETURN_IF_ERROR(f.Int("exitCode", &n, -1, 255));
  TESSERA_RETURN_IF_ERROR(f.Int("signal", &n, 0, 128));
  TESSERA_RETURN_IF_ERROR(f.String("message", &s));
  TESSERA_RETURN_IF_ERROR(f.String("reason", &s));  // PodFailurePolicy: a rule ended it
  TESSERA_RETURN_IF_ERROR(f.String("limits", &s));
  TESSERA_RETURN_IF_ERROR(f.String("finishedAt", &s));
  return f.Finish();
}

Status Pod(const json& pod, const std::string& path) {
  if (pod.is_null()) return Status::Ok();
  Fields f(pod, path, false);
  int64_t n = 0;
  std::string s;
  TESSERA_RETURN_IF_ERROR(f.String("name", &s, true));
  TESSERA_RETURN_IF_ERROR(f.String("node", &s, true));
  TESSERA_RETURN_IF_ERROR(f.String("address", &s));
  TESSERA_RETURN_IF_ERROR(f.Int("port", &n, 1, 65535));
  TESSERA_RETURN_IF_ERROR(f.Int("cpuMilli", &n, 0, kMaxInt64));
  TESSERA_RETURN_IF_ERROR(f.Int("memoryMiB", &n, 0, kMaxInt64));
  TESSERA_RETURN_IF_ERROR(f.Int("index", &n, 0, kMaxInt32));  // an array's task
  TESSERA_RETURN_IF_ERROR(f.String("boundAt", &s));
  bool removed = false;  // evicted after its Job finished: gone from the Pod views
  TESSERA_RETURN_IF_ERROR(f.Bool("removed", &removed));
  TESSERA_RETURN_IF_ERROR(List(f, "devices", 64, Device));
  if (const json* st = f.Get("state")) TESSERA_RETURN_IF_ERROR(PodState(*st, f.At("state")));
  return f.Finish();
}

// A member of a running gang not placed yet, and why.
Status WaitingPod(const json& pod, const std::string& path) {
  Fields f(pod, path, false);
  std::string s;
  TESSERA_RETURN_IF_ERROR(f.String("name", &s, true));
  TESSERA_RETURN_IF_ERROR(f.String("reason", &s));
  int64_t count = 1;  // the pods the entry stands for, from the one it names on
  TESSERA_RETURN_IF_ERROR(f.Int("count", &count, 1, kMaxJobPods));
  return f.Finish();
}

// Where a distributed job's members meet.
Status Rendezvous(const json& r, const std::string& path) {
  Fields f(r, path, false);
  std::string s;
  int64_t n = 0;
  TESSERA_RETURN_IF_ERROR(f.String("masterNode", &s, true));
  TESSERA_RETURN_IF_ERROR(f.String("masterAddr", &s, true));
  TESSERA_RETURN_IF_ERROR(f.Int("masterPort", &n, 1, 65535, true));
  TESSERA_RETURN_IF_ERROR(f.Int("worldSize", &n, 1, kMaxInt32, true));
  return f.Finish();
}

Status Idle(const json& idle, const std::string& path) {
  Fields f(idle, path, false);
  std::string s;
  std::vector<std::string> pods;
  TESSERA_RETURN_IF_ERROR(f.String("since", &s));
  TESSERA_RETURN_IF_ERROR(f.StringList("pods", &pods));
  TESSERA_RETURN_IF_ERROR(f.String("message", &s));
  return f.Finish();
}

// A condition as Kubernetes writes one.
Status Condition(const json& c, const std::string& path) {
  Fields f(c, path, false);
  std::string s;
  int state = 0;
  TESSERA_RETURN_IF_ERROR(f.String("type", &s, true));
  TESSERA_RETURN_IF_ERROR(f.Enum("status", {"True", "False", "Unknown"}, &state));
  TESSERA_RETURN_IF_ERROR(f.String("reason", &s));
  TESSERA_RETURN_IF_ERROR(f.String("message", &s));
  TESSERA_RETURN_IF_ERROR(f.String("lastTransitionTime", &s));
  return f.Finish();
}

Status JobStatus(const json& status) {
  Fields f(status, "status");
  std::string s;
  int64_t n = 0;
  int phase = 0;
  std::map<std::string, std::string> flavors;
  TESSERA_RETURN_IF_ERROR(f.Enum("phase", {"Pending", "Admitted", "Succeeded", "Failed"}, &phase));
  TESSERA_RETURN_IF_ERROR(f.String("message", &s));
  TESSERA_RETURN_IF_ERROR(f.String("queue", &s));
  TESSERA_RETURN_IF_ERROR(f.StringMap("flavors", &flavors));
  // Per pod set, when the sets' flavors differ.
  if (const json* per_set = f.Get("podSetFlavors"); per_set != nullptr && !per_set->is_null()) {
    if (!per_set->is_array()) return FieldError(f.At("podSetFlavors"), "must be a list");
    for (size_t i = 0; i < per_set->size(); ++i) {
      const std::string at = Index(f.At("podSetFlavors"), i);
      if (!(*per_set)[i].is_object()) return FieldError(at, "must be a map of strings");
      for (const auto& [resource, flavor] : (*per_set)[i].items()) {
        if (!flavor.is_string()) return FieldError(at + "." + resource, "must be a string");
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(f.Int("priority", &n, INT32_MIN, kMaxInt32));
  TESSERA_RETURN_IF_ERROR(f.String("admittedAt", &s));
  TESSERA_RETURN_IF_ERROR(f.String("finishedAt", &s));
  TESSERA_RETURN_IF_ERROR(f.String("reason", &s));
  // An array's progress (api/job_array.h).
  TESSERA_RETURN_IF_ERROR(f.Int("succeeded", &n, 0, kMaxInt32));
  TESSERA_RETURN_IF_ERROR(f.Int("failed", &n, 0, kMaxInt32));
  TESSERA_RETURN_IF_ERROR(f.String("completedIndexes", &s));
  TESSERA_RETURN_IF_ERROR(f.String("failedIndexes", &s));
  if (const json* failures = f.Get("indexFailures"); failures != nullptr && !failures->is_null()) {
    if (!failures->is_object()) {
      return FieldError(f.At("indexFailures"), "must map indexes to failure counts");
    }
    for (auto it = failures->begin(); it != failures->end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 1 ||
          it.value().get<int64_t>() > kMaxInt32) {
        return FieldError(f.At("indexFailures") + "." + it.key(), "must be a failure count");
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(List(f, "pods", static_cast<size_t>(kMaxJobPods), Pod));
  TESSERA_RETURN_IF_ERROR(List(f, "waitingPods", static_cast<size_t>(kMaxJobPods), WaitingPod));
  if (const json* idle = f.Get("idle")) TESSERA_RETURN_IF_ERROR(Idle(*idle, f.At("idle")));
  if (const json* r = f.Get("rendezvous")) {
    TESSERA_RETURN_IF_ERROR(Rendezvous(*r, f.At("rendezvous")));
  }
  TESSERA_RETURN_IF_ERROR(List(f, "conditions", 16, Condition));
  // A preempted Job's preemptor, which holds the quota it freed (core::Workload::yields_to).
  if (const json* by = f.Get("preemptedBy"); by != nullptr && !by->is_null()) {
    Fields b(*by, f.At("preemptedBy"));
    TESSERA_RETURN_IF_ERROR(b.String("workload", &s, /*required=*/true));
    TESSERA_RETURN_IF_ERROR(b.String("holdUntil", &s));
    TESSERA_RETURN_IF_ERROR(b.Finish());
  }
  return f.Finish();
}

Status QueueStatus(const json& status) {
  Fields f(status, "status");
  bool active = false;
  std::string s;
  TESSERA_RETURN_IF_ERROR(f.Bool("active", &active));
  TESSERA_RETURN_IF_ERROR(f.String("message", &s));
  return f.Finish();
}

}  // namespace

Status ValidateStatus(std::string_view kind, const json& status) {
  if (status.is_null()) return Status::Ok();
  if (!status.is_object()) return FieldError("status", "must be an object");
  if (kind == "Job") return JobStatus(status);
  if (kind == "Queue") return QueueStatus(status);
  return Status::Ok();
}

}  // namespace tessera::api
