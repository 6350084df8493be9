// What Kubernetes clients (kubectl, client-go, the Python client) read first: the discovery
// documents that say which groups, versions and resources the server serves. Tessera's own
// kinds live in tessera.io/v1 (/apis/tessera.io/v1/...); the core group (/api/v1) and
// Kubernetes', Kueue's and Volcano's groups serve their kinds as views of the same stored
// objects (api/kube_kinds.h).
#ifndef TESSERA_API_DISCOVERY_H_
#define TESSERA_API_DISCOVERY_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::api {

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

// APIGroup documents for /apis (every group with served kinds, Tessera's last) and one group.
nlohmann::json KubeGroups();
nlohmann::json KubeGroup(std::string_view group);  // null for a group not served
// APIResourceList of one group version's kinds; null for one not served.
nlohmann::json KubeResourceList(std::string_view group, std::string_view version);

// metrics.k8s.io (api/resource_metrics.h): the group's entry in an APIGroupList (no kind or
// apiVersion), the APIGroup and the group version's APIResourceList (nodes and pods, get and
// list).
nlohmann::json MetricsGroupEntry();
nlohmann::json MetricsGroup();
nlohmann::json MetricsResourceList();

}  // namespace tessera::api

#endif  // TESSERA_API_DISCOVERY_H_
