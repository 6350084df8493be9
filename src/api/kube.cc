#include "api/kube.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "api/json_read.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/resource_metrics.h"
#include "api/time.h"
#include "core/mig.h"

namespace tessera::api {

using nlohmann::json;

namespace {

const std::vector<std::string>& ReadWriteVerbs() {
  static const std::vector<std::string> v = {"create", "delete", "get", "list", "update", "watch"};
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

std::string HumanDuration(int64_t ms) {
  const int64_t seconds = ms / 1000;
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return std::to_string(minutes) + "m" + (s == 0 ? "" : std::to_string(s) + "s");
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return std::to_string(hours) + "h" + (m == 0 ? "" : std::to_string(m) + "m");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return std::to_string(hours / 24) + "d" + (h == 0 ? "" : std::to_string(h) + "h");
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t d = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (d == 0 ? "" : std::to_string(d) + "d");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::map<std::string, int64_t> GpuResources(const core::NodeSpec& node, bool healthy_only) {
  std::map<std::string, int64_t> out = {{"nvidia.com/gpu", 0}};
  const auto add = [&](const std::string& name, int64_t n, bool counts) {
    out[name] += counts ? n : 0;
  };
  for (const core::GpuDevice& g : node.gpus) {
    const bool counts = !healthy_only || g.health == core::GpuHealth::kHealthy;
    switch (g.sharing.mode) {
      case core::SharingMode::kExclusive:
        add("nvidia.com/gpu", 1, counts);
        break;
      case core::SharingMode::kTimeSlice:
        add(g.sharing.rename ? "nvidia.com/gpu.shared" : "nvidia.com/gpu", g.sharing.replicas,
            counts);
        break;
      case core::SharingMode::kMig: {
        const core::MigGeometry* geo = core::FindMigGeometry(g.model);
        for (const core::MigInstance& m : g.sharing.mig) {
          if (geo == nullptr || m.profile >= geo->profiles.size()) continue;
          add("nvidia.com/mig-" + std::string(geo->profiles[m.profile].name), 1, counts);
        }
        break;
      }
      case core::SharingMode::kShared:
        add("tessera.io/gpu-milli", 1000, counts);
        add("aliyun.com/gpu-mem", g.memory_mib / 1024, counts);
        add("aliyun.com/gpu-count", 1, counts);
        add("aliyun.com/gpu-core", 100, counts);
        add("nvidia.com/gpumem", g.memory_mib, counts);
        add("nvidia.com/gpucores", 100, counts);
        break;
    }
  }
  return out;
}

json KubeNode(const json& node, int64_t now_ms, int64_t grace_ms,
              const std::vector<GpuSharingConfigSpec>& sharing) {
  const json& meta = Member(node, "metadata");
  const json& spec = Member(node, "spec");
  const json& status = Member(node, "status");
  const std::string name = Str(meta, "name");
  json labels = Member(meta, "labels").is_object() ? Member(meta, "labels") : json::object();
  labels.emplace("kubernetes.io/hostname", name);
  labels.emplace("kubernetes.io/os", "linux");
  labels.emplace("beta.kubernetes.io/os", "linux");
  json out_meta = {{"name", name}};
  for (const char* k : {"resourceVersion", "creationTimestamp"}) {
    if (Member(meta, k).is_string()) out_meta[k] = Member(meta, k);
  }
  json annotations =
      Member(meta, "annotations").is_object() ? Member(meta, "annotations") : json::object();

  json kspec = json::object();
  if (Member(spec, "unschedulable") == true) kspec["unschedulable"] = true;
  if (Member(spec, "taints").is_array() && !Member(spec, "taints").empty()) {
    kspec["taints"] = Member(spec, "taints");
  }

  json capacity = json::object();
  json allocatable = json::object();
  const json& alloc = Member(status, "allocatable");
  for (const char* r : {"cpu", "memory"}) {
    const json& v = Member(alloc, r);
    if (v.is_string() || v.is_number()) {
      capacity[r] = v.is_string() ? v.get<std::string>() : v.dump();
      allocatable[r] = capacity[r];
    }
  }
  int64_t gpus = 0, healthy = 0;
  std::string model;
  const json& cards = Member(status, "gpus");
  if (cards.is_array()) {
    for (const json& g : cards) {
      ++gpus;
      if (Str(g, "health") != "Unhealthy") ++healthy;
      if (model.empty()) model = Str(g, "model");
    }
    annotations["tessera.io/gpus"] = cards.dump();
  }
  if (const std::string driver = Str(status, "driverVersion"); !driver.empty()) {
    annotations["tessera.io/driver-version"] = driver;
  }
  // The cards' resources as their sharing offers them (every card exclusive when the node
  // cannot be read as a Tessera node).
  if (auto spec = DecodeNode(node); spec.ok()) {
    ApplySharing(sharing, &*spec, nullptr);
    for (const auto& [r, n] : GpuResources(*spec, false)) capacity[r] = std::to_string(n);
    for (const auto& [r, n] : GpuResources(*spec, true)) allocatable[r] = std::to_string(n);
  } else {
    capacity["nvidia.com/gpu"] = std::to_string(gpus);
    allocatable["nvidia.com/gpu"] = std::to_string(healthy);
  }
  capacity["pods"] = "110";
  allocatable["pods"] = "110";
  if (!model.empty()) labels.emplace("nvidia.com/gpu.product", model);
  if (!annotations.empty()) out_meta["annotations"] = std::move(annotations);
  out_meta["labels"] = std::move(labels);

  const std::string beat = Str(status, "heartbeat");
  const int64_t at = beat.empty() ? -1 : ParseTime(beat);
  json ready = {{"type", "Ready"}};
  if (at < 0) {
    ready["status"] = "Unknown";
    ready["reason"] = "NodeStatusNeverUpdated";
    ready["message"] = "the node's agent has not reported yet";
  } else if (grace_ms > 0 && now_ms - at > grace_ms) {
    ready["status"] = "Unknown";
    ready["reason"] = "NodeStatusUnknown";
    ready["message"] = "no heartbeat from the node's agent since " + beat;
  } else {
    ready["status"] = "True";
    ready["reason"] = "AgentReady";
    ready["message"] = "the node's agent is posting heartbeats";
  }
  if (at >= 0) {
    ready["lastHeartbeatTime"] = beat;
    ready["lastTransitionTime"] = beat;
  }
  json info = {{"machineID", ""},
               {"systemUUID", ""},
               {"bootID", ""},
               {"kernelVersion", ""},
               {"osImage", ""},
               {"containerRuntimeVersion", ""},
               {"kubeletVersion", "tessera-agent"},
               {"kubeProxyVersion", ""},
               {"operatingSystem", "linux"},
               {"architecture", "amd64"}};
  json kstatus = {{"capacity", std::move(capacity)},
                  {"allocatable", std::move(allocatable)},
                  {"conditions", json::array({std::move(ready)})},
                  {"nodeInfo", std::move(info)}};
  // Where other nodes, and the node's pods' clients, reach it (the agent's advertised address).
  json addresses = json::array();
  if (const std::string address = Str(status, "address"); !address.empty()) {
    addresses.push_back({{"type", "InternalIP"}, {"address", address}});
  }
  addresses.push_back({{"type", "Hostname"}, {"address", Str(Member(node, "metadata"), "name")}});
  kstatus["addresses"] = std::move(addresses);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", std::move(out_meta)},
          {"spec", std::move(kspec)},
          {"status", std::move(kstatus)}};
}

Result<json> NodeWithKubeChanges(const json& stored, const json& view, const json& changed) {
  if (!changed.is_object()) return InvalidArgument("body: must be a Node");
  // What may change, taken out of both sides; the rest must be as served.
  auto rest = [](json n) {
    if (n["metadata"].is_object()) {
      for (const char* k : {"labels", "annotations", "resourceVersion", "uid", "managedFields",
                            "creationTimestamp", "generation"}) {
        n["metadata"].erase(k);
      }
    }
    if (n["spec"].is_object()) {
      n["spec"].erase("unschedulable");
      n["spec"].erase("taints");
      if (n["spec"].empty()) n.erase("spec");
    }
    n.erase("status");
    return n;
  };
  const json before = rest(view), after = rest(changed);
  if (before != after) {
    // The first difference as a field path: "/spec" with {"podCIDR": ...} is spec.podCIDR.
    const json diff = json::diff(before, after);
    std::string where = diff.empty() ? "" : Str(diff[0], "path");
    const json& value = diff.empty() ? json() : Member(diff[0], "value");
    if (value.is_object() && !value.empty()) where += "/" + value.begin().key();
    std::replace(where.begin(), where.end(), '/', '.');
    return InvalidArgument(
        (where.empty() ? std::string("node") : where.substr(1)) +
        ": a node's labels, annotations, spec.unschedulable and spec.taints may be changed here; "
        "the rest is reported by its agent");
  }
  json out = stored;
  out["metadata"].erase("resourceVersion");
  // Labels and annotations: the client's, less those the view adds and the client kept.
  auto own = [&](const char* field) {
    const json& was = Member(Member(stored, "metadata"), field);
    const json& shown = Member(Member(view, "metadata"), field);
    json now = Member(Member(changed, "metadata"), field);
    if (!now.is_object()) now = json::object();
    for (const auto& [k, v] : shown.items()) {
      const bool added = !was.is_object() || !was.contains(k);
      if (added && now.contains(k) && now[k] == v) now.erase(k);
    }
    if (now.empty()) {
      out["metadata"].erase(field);
    } else {
      out["metadata"][field] = std::move(now);
    }
  };
  own("labels");
  own("annotations");
  if (!out["spec"].is_object()) out["spec"] = json::object();
  const json& spec = Member(changed, "spec");
  if (Member(spec, "unschedulable") == true) {
    out["spec"]["unschedulable"] = true;
  } else {
    out["spec"].erase("unschedulable");
  }
  if (Member(spec, "taints").is_array() && !Member(spec, "taints").empty()) {
    out["spec"]["taints"] = Member(spec, "taints");
  } else {
    out["spec"].erase("taints");
  }
  return out;
}

bool WantsTable(std::string_view accept) {
  return accept.find("as=Table") != std::string_view::npos;
}

json TableColumn(const char* name, const char* type, const char* description, int priority,
                 const char* format) {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

json TableRow(json cells, const json& obj) {
  return {{"cells", std::move(cells)}, {"object", obj}};
}

void IncludeObjects(std::string_view include, json* table) {
  if (include == "Object") return;
  for (json& row : (*table)["rows"]) {
    if (include == "None") {
      row.erase("object");
      continue;
    }
    json& obj = row["object"];
    obj = {{"kind", "PartialObjectMetadata"},
           {"apiVersion", "meta.k8s.io/v1"},
           {"metadata", Member(obj, "metadata")}};
  }
}

json TableOf(json columns, json rows, const std::string& version) {
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", version}}},
          {"columnDefinitions", std::move(columns)},
          {"rows", std::move(rows)}};
}

std::string AgeOf(const json& obj, int64_t now_ms) {
  const int64_t created = ParseTime(Str(Member(obj, "metadata"), "creationTimestamp"));
  return created < 0 ? "<unknown>" : HumanDuration(now_ms - created);
}

json TesseraTable(std::string_view kind, const std::vector<json>& objects,
                  const std::string& version, int64_t now_ms) {
  const bool job = kind == "Job";
  json columns = json::array({TableColumn("Name", "string", "The object's name.", 0, "name")});
  if (job) {
    columns.push_back(TableColumn("Phase", "string", "Pending, Admitted, Succeeded, Failed.", 0));
    columns.push_back(TableColumn("Queue", "string", "The queue it was admitted by, or asks.", 0));
    columns.push_back(TableColumn("GPUs", "integer", "Whole GPUs asked for, all replicas.", 0));
    columns.push_back(TableColumn("Nodes", "string", "Where its pods run.", 0));
  }
  columns.push_back(TableColumn("Age", "string", "Time since the object was created.", 0));
  json rows = json::array();
  for (const json& o : objects) {
    json cells = json::array({Str(Member(o, "metadata"), "name")});
    if (job) {
      const json& spec = Member(o, "spec");
      const json& st = Member(o, "status");
      int64_t gpus = 0;
      for (const json& t : ListOf(Member(spec, "tasks"))) {
        const json& g = Member(Member(Member(t, "resources"), "limits"), "nvidia.com/gpu");
        const int64_t each = g.is_number_integer() ? g.get<int64_t>()
                             : g.is_string()       ? std::atoll(g.get<std::string>().c_str())
                                                   : 0;
        const json& r = Member(t, "replicas");
        gpus += each * (r.is_number_integer() ? r.get<int64_t>() : 1);
      }
      std::vector<std::string> nodes;
      for (const json& p : ListOf(Member(st, "pods"))) {
        const std::string n = Str(p, "node");
        if (!n.empty() && std::find(nodes.begin(), nodes.end(), n) == nodes.end()) {
          nodes.push_back(n);
        }
      }
      std::string where;
      for (const std::string& n : nodes) where += (where.empty() ? "" : ",") + n;
      const std::string queue = Str(st, "queue").empty() ? Str(spec, "queue") : Str(st, "queue");
      cells.push_back(Str(st, "phase").empty() ? "Pending" : Str(st, "phase"));
      cells.push_back(queue.empty() ? "<none>" : queue);
      cells.push_back(gpus);
      cells.push_back(where.empty() ? "<none>" : where);
    }
    cells.push_back(AgeOf(o, now_ms));
    rows.push_back(TableRow(std::move(cells), o));
  }
  return TableOf(std::move(columns), std::move(rows), version);
}

json NodeTable(const std::vector<json>& nodes, const std::string& version, int64_t now_ms) {
  json columns = json::array({
      TableColumn("Name", "string", "The node's name.", 0, "name"),
      TableColumn("Status", "string",
                  "Ready, NotReady or Unknown, and SchedulingDisabled when cordoned.", 0),
      TableColumn("Roles", "string", "The node's roles (node-role.kubernetes.io/ labels).", 0),
      TableColumn("Age", "string", "Time since the node registered.", 0),
      TableColumn("Version", "string", "The node agent.", 0),
      TableColumn("GPUs", "string", "Healthy GPUs / all GPUs.", 0),
      TableColumn("GPU-Model", "string", "The model of the node's first GPU.", 1),
      TableColumn("Internal-IP", "string", "The node's internal address.", 1),
      TableColumn("OS-Image", "string", "The node's OS image.", 1),
      TableColumn("Driver", "string", "The NVIDIA driver version.", 1),
  });
  json rows = json::array();
  for (const json& n : nodes) {
    const json& status = Member(n, "status");
    std::string state = "Unknown";
    for (const json& c : Member(status, "conditions")) {
      if (Str(c, "type") != "Ready") continue;
      const std::string s = Str(c, "status");
      state = s == "True" ? "Ready" : s == "False" ? "NotReady" : "Unknown";
    }
    if (Member(Member(n, "spec"), "unschedulable") == true) state += ",SchedulingDisabled";
    std::string roles;
    for (const auto& [k, v] : Member(Member(n, "metadata"), "labels").items()) {
      constexpr std::string_view kRole = "node-role.kubernetes.io/";
      if (k.starts_with(kRole) && k.size() > kRole.size()) {
        roles += (roles.empty() ? "" : ",") + k.substr(kRole.size());
      }
    }
    const json& cap = Member(status, "capacity");
    const json& alloc = Member(status, "allocatable");
    const std::string gpus = Str(alloc, "nvidia.com/gpu") + "/" + Str(cap, "nvidia.com/gpu");
    std::string model = Str(Member(Member(n, "metadata"), "labels"), "nvidia.com/gpu.product");
    const json& info = Member(status, "nodeInfo");
    const std::string driver =
        Str(Member(Member(n, "metadata"), "annotations"), "tessera.io/driver-version");
    rows.push_back(TableRow(
        {Str(Member(n, "metadata"), "name"), state, roles.empty() ? "<none>" : roles,
         AgeOf(n, now_ms), Str(info, "kubeletVersion"), gpus, model.empty() ? "<none>" : model,
         "<none>", Str(info, "osImage").empty() ? "<unknown>" : Str(info, "osImage"),
         driver.empty() ? "<none>" : driver},
        n));
  }
  return TableOf(std::move(columns), std::move(rows), version);
}

}  // namespace tessera::api
