#include "api/discovery.h"

#include <algorithm>

#include "api/json_read.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/resource_metrics.h"

namespace tessera::api {

using nlohmann::json;

namespace {

// The verbs of a kind served for reading and writing: Tessera's own and every writable view.
const std::vector<std::string>& ReadWriteVerbs() {
  static const std::vector<std::string> v = {"create", "delete", "deletecollection", "get",
                                             "list",   "patch",  "update",           "watch"};
  return v;
}

}  // namespace

json ApiResource(std::string_view plural, std::string_view kind, bool namespaced,
                 std::vector<std::string> verbs, std::vector<std::string> short_names) {
  json r = {{"name", plural},
            {"singularName", ""},
            {"namespaced", namespaced},
            {"kind", kind},
            {"verbs", std::move(verbs)}};
  if (!short_names.empty()) r["shortNames"] = std::move(short_names);
  return r;
}

json VersionInfo() {
  // The Kubernetes API level whose object shapes and discovery Tessera serves.
  return {{"major", "1"},    {"minor", "32"},      {"gitVersion", "v1.32.0-tessera"},
          {"gitCommit", ""}, {"gitTreeState", ""}, {"buildDate", ""},
          {"goVersion", ""}, {"compiler", "g++"},  {"platform", "linux/amd64"}};
}

json CoreApiVersions() {
  return {
      {"kind", "APIVersions"}, {"versions", {"v1"}}, {"serverAddressByClientCIDRs", json::array()}};
}

json CoreResourceList() {
  json list = KubeResourceList("", "v1");
  list["resources"].push_back(ApiResource("nodes", "Node", false, {"get", "list"}, {"no"}));
  // Services: none (a pod shares its node's network), read so that kubectl cluster-info and
  // get svc answer (server/services.cc).
  json services = ApiResource("services", "Service", true, {"get", "list", "watch"}, {"svc"});
  services["categories"] = {"all"};
  list["resources"].push_back(std::move(services));
  // The pods' subresources served: their logs, and the eviction API (kubectl drain looks for
  // pods/eviction with its group and version before it evicts rather than deletes).
  list["resources"].push_back(ApiResource("pods/log", "Pod", true, {"get"}, {}));
  json eviction = ApiResource("pods/eviction", "Eviction", true, {"create"}, {});
  eviction["group"] = "policy";
  eviction["version"] = "v1";
  list["resources"].push_back(std::move(eviction));
  return list;
}

json TesseraGroup() {
  const std::string gv = std::string(kGroup) + "/v1";
  const json version = {{"groupVersion", gv}, {"version", "v1"}};
  return {{"kind", "APIGroup"},
          {"apiVersion", "v1"},
          {"name", kGroup},
          {"versions", json::array({version})},
          {"preferredVersion", version}};
}

json ApiGroupList() {
  json groups = KubeGroups();
  json group = TesseraGroup();
  group.erase("kind");
  group.erase("apiVersion");
  groups.push_back(std::move(group));
  groups.push_back(MetricsGroupEntry());
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

json TesseraResourceList() {
  json resources = json::array();
  for (const KindInfo& k : Kinds()) {
    std::vector<std::string> shorts;
    if (!k.short_name.empty()) shorts.emplace_back(k.short_name);
    resources.push_back(ApiResource(k.plural, k.kind, k.namespaced, ReadWriteVerbs(), shorts));
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", std::string(kGroup) + "/v1"},
          {"resources", std::move(resources)}};
}

bool WantsAggregatedDiscovery(std::string_view accept) {
  return accept.find("g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") !=
         std::string_view::npos;
}

namespace {

// One group's entry in an APIGroupDiscoveryList, from its legacy APIResourceLists.
json DiscoveryGroup(const std::string& group, const std::vector<json>& lists) {
  json versions = json::array();
  for (const json& list : lists) {
    const std::string gv = Str(list, "groupVersion");
    const std::string version = gv.substr(gv.find('/') + 1);
    json resources = json::array();
    for (const json& r : ListOf(Member(list, "resources"))) {
      const std::string name = Str(r, "name");
      if (const size_t slash = name.find('/'); slash != std::string::npos) {
        // A subresource: listed under its resource, with the kind it answers in.
        for (json& parent : resources) {
          if (Str(parent, "resource") != name.substr(0, slash)) continue;
          json kind = {
              {"group", Member(r, "group").is_string() ? Member(r, "group") : json(group)},
              {"version", Member(r, "version").is_string() ? Member(r, "version") : json(version)},
              {"kind", Member(r, "kind")}};
          parent["subresources"].push_back({{"subresource", name.substr(slash + 1)},
                                            {"responseKind", std::move(kind)},
                                            {"verbs", Member(r, "verbs")}});
        }
        continue;
      }
      std::string singular = Str(r, "kind");
      for (char& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      json entry = {
          {"resource", Member(r, "name")},
          {"responseKind", {{"group", group}, {"version", version}, {"kind", Member(r, "kind")}}},
          {"scope", Member(r, "namespaced") == true ? "Namespaced" : "Cluster"},
          {"singularResource", singular},
          {"verbs", Member(r, "verbs")}};
      if (Member(r, "shortNames").is_array()) entry["shortNames"] = Member(r, "shortNames");
      if (Member(r, "categories").is_array()) entry["categories"] = Member(r, "categories");
      resources.push_back(std::move(entry));
    }
    versions.push_back(
        {{"version", version}, {"resources", std::move(resources)}, {"freshness", "Current"}});
  }
  return {{"metadata", {{"name", group}}}, {"versions", std::move(versions)}};
}

}  // namespace

json AggregatedDiscovery(bool core) {
  json items = json::array();
  if (core) {
    items.push_back(DiscoveryGroup("", {CoreResourceList()}));
  } else {
    const json list = ApiGroupList();
    for (const json& g : ListOf(Member(list, "groups"))) {
      const std::string name = Str(g, "name");
      std::vector<json> lists;
      for (const json& v : ListOf(Member(g, "versions"))) {
        lists.push_back(name == kGroup          ? TesseraResourceList()
                        : name == kMetricsGroup ? MetricsResourceList()
                                                : KubeResourceList(name, Str(v, "version")));
      }
      items.push_back(DiscoveryGroup(name, lists));
    }
  }
  return {{"kind", "APIGroupDiscoveryList"},
          {"apiVersion", "apidiscovery.k8s.io/v2"},
          {"metadata", json::object()},
          {"items", std::move(items)}};
}

namespace {

json GroupEntry(std::string_view group) {
  json versions = json::array();
  for (const KubeKind& k : KubeKinds()) {
    if (k.group != group) continue;
    const json v = {{"groupVersion", k.GroupVersion()}, {"version", k.version}};
    if (std::find(versions.begin(), versions.end(), v) == versions.end()) versions.push_back(v);
  }
  if (versions.empty()) return json();
  return {{"name", group}, {"versions", versions}, {"preferredVersion", versions[0]}};
}

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
  }
  return out;
}

}  // namespace

json KubeGroups() {
  json groups = json::array();
  std::vector<std::string_view> seen;
  for (const KubeKind& k : KubeKinds()) {
    if (k.group.empty() || std::find(seen.begin(), seen.end(), k.group) != seen.end()) continue;
    seen.push_back(k.group);
    groups.push_back(GroupEntry(k.group));
  }
  return groups;
}

json KubeGroup(std::string_view group) {
  json g = GroupEntry(group);
  if (g.is_null() || group.empty()) return json();
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

json KubeResourceList(std::string_view group, std::string_view version) {
  json resources = json::array();
  for (const KubeKind& k : KubeKinds()) {
    if (k.group != group || k.version != version) continue;
    resources.push_back(
        ApiResource(k.plural, k.kind, k.namespaced,
                    k.stored.empty()        ? std::vector<std::string>{"create", "get", "list"}
                    : k.writable            ? ReadWriteVerbs()
                    : k.kind == "Namespace" ? std::vector<std::string>{"get", "list"}
                                            : std::vector<std::string>{"get", "list", "watch"},
                    Split(k.short_names)));
    // kubectl get all: the category Kubernetes gives its workloads (Pods, batch/v1 Jobs).
    if ((group.empty() && k.kind == "Pod") || (group == "batch" && k.kind == "Job")) {
      resources.back()["categories"] = {"all"};
    }
  }
  if (resources.empty()) return json();
  const std::string gv =
      group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", gv},
          {"resources", std::move(resources)}};
}

namespace {

std::string MetricsGroupVersion() {
  return std::string(kMetricsGroup) + "/" + std::string(kMetricsVersion);
}

}  // namespace

json MetricsGroupEntry() {
  const json version = {{"groupVersion", MetricsGroupVersion()}, {"version", kMetricsVersion}};
  return {
      {"name", kMetricsGroup}, {"versions", json::array({version})}, {"preferredVersion", version}};
}

json MetricsGroup() {
  json g = MetricsGroupEntry();
  g["kind"] = "APIGroup";
  g["apiVersion"] = "v1";
  return g;
}

json MetricsResourceList() {
  return {
      {"kind", "APIResourceList"},
      {"apiVersion", "v1"},
      {"groupVersion", MetricsGroupVersion()},
      {"resources", json::array({ApiResource("nodes", "NodeMetrics", false, {"get", "list"}, {}),
                                 ApiResource("pods", "PodMetrics", true, {"get", "list"}, {})})}};
}

}  // namespace tessera::api
