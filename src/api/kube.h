// What Kubernetes clients (kubectl, client-go, the Python client) read first and most: the
// discovery documents that say which groups, versions and resources the server serves, core/v1
// views of Tessera's objects, and meta.k8s.io/v1 Tables for `kubectl get`.
//
// Tessera's own kinds live in the group tessera.io, version v1 (/apis/tessera.io/v1/...). The
// core group (/api/v1) serves Kubernetes' own kinds as views of the same stored objects.
#ifndef TESSERA_API_KUBE_H_
#define TESSERA_API_KUBE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/kinds.h"
#include "core/node.h"
#include "core/status.h"

namespace tessera::api {

inline constexpr std::string_view kGroup = "tessera.io";
inline constexpr std::string_view kGroupPath = "/apis/tessera.io/v1";

// One entry of an APIResourceList: a resource, its kind, scope, verbs and short names.
nlohmann::json ApiResource(std::string_view plural, std::string_view kind, bool namespaced,
                           std::vector<std::string> verbs,
                           std::vector<std::string> short_names = {});

// GET /version: the server's version in Kubernetes' version.Info shape.
nlohmann::json VersionInfo();
// GET /api: APIVersions (the core group's one version).
nlohmann::json CoreApiVersions();
// GET /api/v1: APIResourceList of the core resources served.
nlohmann::json CoreResourceList();
// GET /apis: APIGroupList (every group but the core one).
nlohmann::json ApiGroupList();
// GET /apis/tessera.io: APIGroup.
nlohmann::json TesseraGroup();
// GET /apis/tessera.io/v1: APIResourceList of Tessera's kinds.
nlohmann::json TesseraResourceList();

// The aggregated discovery documents (apidiscovery.k8s.io/v2 APIGroupDiscoveryList) kubectl
// 1.30+ asks for first: of the core group for /api, of every other group for /apis. Served
// with kAggregatedDiscoveryType when the Accept header names it (WantsAggregatedDiscovery).
inline constexpr std::string_view kAggregatedDiscoveryType =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
bool WantsAggregatedDiscovery(std::string_view accept);
nlohmann::json AggregatedDiscovery(bool core);

// Kubernetes' HumanDuration (k8s.io/apimachinery/pkg/util/duration), as kubectl shows ages:
// "45s", "5m30s", "3h", "2d4h", "1y20d".
std::string HumanDuration(int64_t ms);

// The core/v1 Node a Tessera Node (stored form, with metadata.resourceVersion) stands for:
// labels (with kubernetes.io/hostname, os and arch), spec.unschedulable and taints, capacity
// and allocatable (healthy cards only) with the GPU resources the device plugins would
// advertise for the cards as `sharing` configures them (GpuResources), the Ready condition
// from the heartbeat (Unknown once older than `grace_ms`), nodeInfo, and the GPUs under the
// annotation tessera.io/gpus.
nlohmann::json KubeNode(const nlohmann::json& node, int64_t now_ms, int64_t grace_ms,
                        const std::vector<GpuSharingConfigSpec>& sharing);

// The extended resources `node`'s cards (with their sharing applied) offer, as the NVIDIA,
// Alibaba cGPU and HAMi device plugins name them: nvidia.com/gpu for exclusive cards and
// time-slice replicas, nvidia.com/gpu.shared for renamed replicas, nvidia.com/mig-<profile>
// per MIG instance, and for cards shared by fraction tessera.io/gpu-milli (1000 a card),
// aliyun.com/gpu-mem (GiB), aliyun.com/gpu-count, aliyun.com/gpu-core and nvidia.com/gpucores
// (100 a card), nvidia.com/gpumem (MiB). nvidia.com/gpu is always there; the others when a
// card offers them. Only healthy cards count when `healthy_only`.
std::map<std::string, int64_t> GpuResources(const core::NodeSpec& node, bool healthy_only);

// The Tessera Node `stored` with what a client changed in its core/v1 view: `view` as served
// (KubeNode) and `changed` as the client made it (a patched or replaced view). Labels,
// annotations, spec.unschedulable and spec.taints carry over (kubectl cordon, label, annotate,
// taint); labels and annotations the view adds are dropped unless changed; any other change is
// an error naming it.
Result<nlohmann::json> NodeWithKubeChanges(const nlohmann::json& stored, const nlohmann::json& view,
                                           const nlohmann::json& changed);

// Whether an Accept header asks for a meta.k8s.io/v1 Table (as kubectl get does).
bool WantsTable(std::string_view accept);

// Building meta.k8s.io/v1 Tables: a column definition (priority 1: shown with -o wide only), a
// row of cells describing `obj` (the whole object rides along), the table, and an object's age
// as kubectl shows it.
nlohmann::json TableColumn(const char* name, const char* type, const char* description,
                           int priority, const char* format = "");
nlohmann::json TableRow(nlohmann::json cells, const nlohmann::json& obj);
nlohmann::json TableOf(nlohmann::json columns, nlohmann::json rows, const std::string& version);
// What each row of `table` carries, as the request's includeObject asks: "Object" the whole
// object (kubectl asks so for --sort-by and -w), "None" nothing, and otherwise ("Metadata", the
// default) its metadata as a PartialObjectMetadata.
void IncludeObjects(std::string_view include, nlohmann::json* table);
std::string AgeOf(const nlohmann::json& obj, int64_t now_ms);

// A meta.k8s.io/v1 Table of tessera.io/v1 objects of `kind`: NAME and AGE, and for Jobs PHASE,
// QUEUE, GPUS (whole GPUs asked for, all replicas) and NODES (where its pods run).
nlohmann::json TesseraTable(std::string_view kind, const std::vector<nlohmann::json>& objects,
                            const std::string& version, int64_t now_ms);

// A meta.k8s.io/v1 Table of core/v1 Nodes with kubectl's columns (NAME, STATUS, ROLES, AGE,
// VERSION) and GPUS (healthy/all); wide adds GPU-MODEL, INTERNAL-IP, OS-IMAGE and DRIVER. Each
// row carries the node.
nlohmann::json NodeTable(const std::vector<nlohmann::json>& nodes, const std::string& version,
                         int64_t now_ms);

}  // namespace tessera::api

#endif  // TESSERA_API_KUBE_H_
