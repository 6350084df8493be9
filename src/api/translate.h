// Inside the manifest translation (api/manifest.h is its interface): what the translators of
// each family share, and each family's entry points. Only api/manifest.cc and the
// api/translate_*.cc files include it.
//
//   translate_pod.cc            v1 Pod, batch/v1 Job, and the pod template every family uses
//   translate_volcano.cc        Volcano Job, PodGroup, Queue and Command
//   translate_kubeflow.cc       Kubeflow PyTorchJob, MPIJob, TFJob
//   translate_kueue.cc          Kueue ClusterQueue, LocalQueue, ResourceFlavor, Cohort
//   translate_device_plugin.cc  NVIDIA device-plugin configs (ConfigMaps, Helm values)
#ifndef TESSERA_API_TRANSLATE_H_
#define TESSERA_API_TRANSLATE_H_

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

// In their own namespace: names as plain as Pod and Member must not meet api/json_read.h's.
namespace tessera::api::translate {

using Warnings = std::vector<std::string>;

// The document being translated: its apiVersion, kind, name and namespace (defaulted), and
// metadata.
struct Doc {
  std::string api, kind, name, ns;
  nlohmann::json meta;
};

// ---- shared helpers (api/manifest.cc) ----

// A tessera.io/v1 object.
nlohmann::json Object(std::string_view kind, const std::string& name, const std::string& ns,
                      const nlohmann::json& labels, const nlohmann::json& annotations,
                      nlohmann::json spec);
extern const nlohmann::json kEmpty;
// `obj[key]`, or an empty object when `obj` is no object or lacks it (or it is null).
const nlohmann::json& Member(const nlohmann::json& obj, const char* key);
// `obj[key]` when it is a string, else "".
std::string Text(const nlohmann::json& obj, const char* key);
// Checks that `obj` has no fields beyond `allowed`; `why` says what to do about the others.
Status OnlyFields(const nlohmann::json& obj, const std::string& path,
                  std::initializer_list<const char*> allowed, std::string_view why);
inline constexpr std::string_view kNotRun = "not supported: Tessera does not act on it";

// ---- the pod template (translate_pod.cc) ----

// What a pod template's translation knows besides its spec.
struct PodContext {
  std::string ns;
  const nlohmann::json* meta = nullptr;  // the pod's (or template's) metadata
  bool bare_pod = false;                 // a v1 Pod: metadata.name is the pod's own name
  std::string pod_name;                  // for a bare pod
  Warnings* warnings = nullptr;
};

// Translates a pod template's spec into a task (without name and replicas) and the job-level
// fields it implies (priorityClassName, schedulingGates).
Status PodSpecToTask(const nlohmann::json& pod, const std::string& path, const PodContext& ctx,
                     nlohmann::json* task, nlohmann::json* job);
// The queue a Kubernetes object names with the Kueue label, if any.
void QueueFromLabel(const nlohmann::json& meta, nlohmann::json* spec);
// A Job's lifetime: activeDeadlineSeconds and ttlSecondsAfterFinished, as they are.
void CopyLifetime(const nlohmann::json& from, nlohmann::json* job);

// ---- each family's kinds ----

Result<std::vector<nlohmann::json>> Pod(const Doc& d, const nlohmann::json& doc,
                                        Warnings* warnings);
Result<std::vector<nlohmann::json>> BatchJob(const Doc& d, const nlohmann::json& doc,
                                             Warnings* warnings);

// Volcano's queue of a Job or PodGroup (`default`: no queue, recorded in an annotation).
void VolcanoQueue(const nlohmann::json& spec, nlohmann::json* out, nlohmann::json* annotations);
Result<std::vector<nlohmann::json>> VolcanoJob(const Doc& d, const nlohmann::json& doc,
                                               Warnings* warnings);
Result<std::vector<nlohmann::json>> VolcanoPodGroup(const Doc& d, const nlohmann::json& doc,
                                                    Warnings* warnings);
Result<std::vector<nlohmann::json>> VolcanoQueueKind(const Doc& d, const nlohmann::json& doc,
                                                     Warnings* warnings);

Result<std::vector<nlohmann::json>> PyTorchJob(const Doc& d, const nlohmann::json& doc,
                                               Warnings* warnings);
Result<std::vector<nlohmann::json>> MpiJob(const Doc& d, const nlohmann::json& doc,
                                           Warnings* warnings);
Result<std::vector<nlohmann::json>> TfJob(const Doc& d, const nlohmann::json& doc,
                                          Warnings* warnings);

// ClusterQueue, LocalQueue, ResourceFlavor or Cohort.
Result<std::vector<nlohmann::json>> Kueue(const Doc& d, const nlohmann::json& doc,
                                          Warnings* warnings);

// GpuSharingConfigs named "<prefix>-<key>" from device-plugin configs by name (`data`, at
// `path`); `default_name` covers unlabeled nodes, with a warning saying its reach.
Result<std::vector<nlohmann::json>> SharingConfigs(const std::string& prefix,
                                                   const nlohmann::json& data,
                                                   const std::string& path,
                                                   const std::string& default_name,
                                                   Warnings* warnings);

}  // namespace tessera::api::translate

#endif  // TESSERA_API_TRANSLATE_H_
