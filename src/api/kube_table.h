// meta.k8s.io/v1 Tables for `kubectl get`: the builders, and the tables of Tessera's kinds,
// of Nodes and of the Kubernetes, Kueue and Volcano kinds with kubectl's columns.
#ifndef TESSERA_API_KUBE_TABLE_H_
#define TESSERA_API_KUBE_TABLE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/kube_kinds.h"

namespace tessera::api {

// Kubernetes' HumanDuration (k8s.io/apimachinery/pkg/util/duration), as kubectl shows ages:
// "45s", "5m30s", "3h", "2d4h", "1y20d".
std::string HumanDuration(int64_t ms);

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

// A meta.k8s.io/v1 Table of objects of `kind` with the columns kubectl shows for it (Pods:
// READY, STATUS, RESTARTS, AGE, NODE and GPUS; Jobs: STATUS, COMPLETIONS, AGE ...).
nlohmann::json KubeTable(const KubeKind& kind, const std::vector<nlohmann::json>& objects,
                         const std::string& version, int64_t now_ms);

}  // namespace tessera::api

#endif  // TESSERA_API_KUBE_TABLE_H_
