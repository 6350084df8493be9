// Manifests users already have, translated into Tessera's kinds (tessera.io/v1):
//
//   v1 Pod                                  -> Job with one task of one replica
//   batch/v1 Job (kueue.x-k8s.io/queue-name) -> Job, replicas = parallelism, queue from the label;
//                                              completions other than parallelism, or Indexed:
//                                              an array (api/job_array.h)
//   batch.volcano.sh Job                    -> Job: tasks, minAvailable -> minMember, queue
//   scheduling.volcano.sh PodGroup          -> PodGroup
//   scheduling.volcano.sh Queue             -> Queue in the cohort "volcano" (with that Cohort
//                                              and the ResourceFlavor volcano-default)
//   kueue.x-k8s.io ClusterQueue, LocalQueue, ResourceFlavor, Cohort
//                                           -> Queue, LocalQueue, ResourceFlavor, Cohort
//   v1 ResourceQuota                        -> NamespaceQuota
//   scheduling.k8s.io PriorityClass         -> PriorityClass
//   v1 ConfigMap of NVIDIA device-plugin configs, and the Helm values block
//   devicePlugin.config                     -> GpuSharingConfig per config (a node picks one
//                                              with the label nvidia.com/device-plugin.config;
//                                              the default config covers the other nodes)
//   tessera.io/v1 objects                   -> unchanged
//   bus.volcano.sh Command (OpenQueue, CloseQueue)
//                                           -> carried out by the server, not stored
//                                              (ParseVolcanoCommand)
//
// The YAML loader is api/yaml.h; each family's translation is its own file (api/translate.h).
//
// Kinds Tessera does not take are an error that says what to use instead (the device plugin
// DaemonSet, Prometheus rules, Deployments ...). In the kinds it takes, every field of the
// original's schema is either acted on or accepted with a warning saying what happens instead,
// never dropped silently; a field of no schema is an error that suggests the closest name.
#ifndef TESSERA_API_MANIFEST_H_
#define TESSERA_API_MANIFEST_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::api {

// Translates one document into Tessera objects (usually one; none for an empty document).
// Objects without a namespace get `default_namespace` when their kind is namespaced. A field
// Tessera knows but does not act on adds a warning "<path>: not acted on: <what happens
// instead>" to `warnings`; a field it does not know is an error "<path>: unknown field (did you
// mean "<closest>"?)".
Result<std::vector<nlohmann::json>> TranslateDocument(const nlohmann::json& doc,
                                                      std::string_view default_namespace,
                                                      std::vector<std::string>* warnings = nullptr);

// Appends one document's translated objects to `out` and, per object, its warnings to
// `warnings`: the document's `notes` with its last object (the one it describes; a Volcano
// Queue's cohort and flavor come first), none with the others.
void AppendDocument(std::vector<nlohmann::json> objs, const std::vector<std::string>& notes,
                    std::vector<nlohmann::json>* out,
                    std::vector<std::vector<std::string>>* warnings);

// How errors name document `index` (from 0) of a manifest: "<source>: document <n> (<kind>
// <name>)".
std::string DocumentPlace(std::string_view source, size_t index, const nlohmann::json& doc);

// Parses and translates every document of a manifest. Errors are prefixed with
// "<source>: document <n> (<kind> <name>): ". With `warnings`, one list per object returned,
// in order: its document's warnings with the document's last object, none with the others.
Result<std::vector<nlohmann::json>> TranslateManifest(
    std::string_view text, std::string_view source, std::string_view default_namespace,
    std::vector<std::vector<std::string>>* warnings = nullptr);

// A Volcano bus.volcano.sh Command on a Queue, as vcctl queue operate creates it: the server
// carries it out when it is created (the queue's state changes) and keeps nothing, as Volcano's
// controller deletes each Command it has handled.
struct VolcanoCommand {
  std::string name;           // metadata.name; empty: generate_name is set
  std::string generate_name;  // metadata.generateName
  std::string ns;             // metadata.namespace, else the default namespace
  bool close = false;         // action CloseQueue; false: OpenQueue
  std::string queue;          // target.name: the Volcano Queue
  nlohmann::json doc;         // the document, namespace defaulted
};

// Whether `doc` is a bus.volcano.sh Command (any version).
bool IsVolcanoCommand(const nlohmann::json& doc);

// Reads a Command: its action must be OpenQueue or CloseQueue and its target a
// scheduling.volcano.sh Queue by name; other actions (the Job ones vcctl job sends) are refused
// naming the field. Unknown fields are errors as in TranslateDocument.
Result<VolcanoCommand> ParseVolcanoCommand(const nlohmann::json& doc,
                                           std::string_view default_namespace,
                                           std::vector<std::string>* warnings);

}  // namespace tessera::api

#endif  // TESSERA_API_MANIFEST_H_
