#include "api/openapi.h"

#include <functional>
#include <vector>

#include "api/kube_fields.h"
#include "api/kube_kinds.h"
#include "api/object.h"

namespace tessera::api {

using nlohmann::json;

namespace {

struct Served {
  std::string group, version, kind, plural;
  bool namespaced = true;
  bool writable = true;
};

std::vector<Served> AllServed() {
  std::vector<Served> out;
  for (const KubeKind& k : KubeKinds()) {
    out.push_back({std::string(k.group), std::string(k.version), std::string(k.kind),
                   std::string(k.plural), k.namespaced, k.writable});
  }
  out.push_back({"", "v1", "Node", "nodes", false, false});
  for (const KindInfo& k : Kinds()) {
    out.push_back({std::string(kGroup), "v1", std::string(k.kind), std::string(k.plural),
                   k.namespaced, true});
  }
  return out;
}

std::string GvPath(const std::string& group, const std::string& version) {
  return group.empty() ? "api/" + version : "apis/" + group + "/" + version;
}

json Gvk(const Served& s) { return {{"group", s.group}, {"version", s.version}, {"kind", s.kind}}; }

json QueryParam(const char* name, const char* description) {
  return {{"name", name},
          {"in", "query"},
          {"description", description},
          {"schema", {{"type", "string"}}},
          {"uniqueItems", true}};
}

json Operation(const Served& s, const char* action, const char* id, bool v3) {
  json op = {{"operationId", std::string(id) + s.kind},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", Gvk(s)},
             {"responses", {{"200", {{"description", "OK"}}}}}};
  const std::string ref = v3 ? "#/components/schemas/" : "#/definitions/";
  const json body = {{"$ref", ref + s.group + "." + s.version + "." + s.kind}};
  const std::string action_name = action;
  // Server-side apply is served on the Kubernetes, Kueue and Volcano kinds' views.
  const bool applies = s.group != kGroup && s.kind != "Node";
  if (action_name == "patch" || action_name == "post" || action_name == "put") {
    json params = json::array(
        {QueryParam("fieldValidation",
                    "Strict (the only behaviour): unknown and duplicate fields are refused"),
         QueryParam("dryRun", "All: check and answer without writing"),
         QueryParam("fieldManager",
                    "The writer's name in managedFields; required for apply patch")});
    if (action_name == "patch" && applies) {
      params.push_back(QueryParam(
          "force", "Apply patch only: take the fields other managers own instead of a conflict"));
    }
    if (!v3) {
      for (json& p : params) {
        p["type"] = "string";
        p.erase("schema");
      }
    }
    op["parameters"] = std::move(params);
    if (v3) {
      json content = json::object();
      if (action_name == "patch") {
        for (const char* t : {"application/merge-patch+json", "application/json-patch+json",
                              "application/apply-patch+yaml"}) {
          if (std::string_view(t).starts_with("application/apply") && !applies) continue;
          content[t] = {{"schema", {{"type", "object"}}}};
        }
      } else {
        content["application/json"] = {{"schema", body}};
      }
      op["requestBody"] = {{"content", std::move(content)}};
    } else if (action_name == "patch") {
      op["consumes"] = {"application/merge-patch+json", "application/json-patch+json",
                        "application/strategic-merge-patch+json"};
      if (applies) op["consumes"].push_back("application/apply-patch+yaml");
    }
  }
  return op;
}

// The paths of `s`: its collection and its objects.
void AddPaths(const Served& s, bool v3, json* paths) {
  const std::string base = "/" + GvPath(s.group, s.version);
  const std::string coll = base + (s.namespaced ? "/namespaces/{namespace}/" : "/") + s.plural;
  json c = {{"get", Operation(s, "list", "list", v3)}};
  json item = {{"get", Operation(s, "get", "read", v3)}};
  if (s.writable) {
    c["post"] = Operation(s, "post", "create", v3);
    c["delete"] = Operation(s, "deletecollection", "deleteCollection", v3);
    item["put"] = Operation(s, "put", "replace", v3);
    item["patch"] = Operation(s, "patch", "patch", v3);
    item["delete"] = Operation(s, "delete", "delete", v3);
  }
  (*paths)[coll] = std::move(c);
  (*paths)[coll + "/{name}"] = std::move(item);
  if (s.namespaced)
    (*paths)[base + "/" + s.plural] = {{"get", Operation(s, "list", "listAll", v3)}};
}

// How a served kind is described: the type of its spec (api/kube_fields.h), or of its whole
// body for kinds whose fields sit at the top (ConfigMap, PriorityClass, Event); and what it is,
// as kubectl explain opens with it.
struct KindDoc {
  std::string_view group, kind, spec, body, what;
};

constexpr std::string_view kTesseraJob = "A Tessera Job: pods placed by Tessera's scheduler.";
constexpr std::string_view kKueue = "Kueue's queueing and quota, as Tessera's admission does it.";
constexpr std::string_view kKubeflow =
    "Distributed training, as Kubeflow's operators run it: a Tessera Job, one gang.";

constexpr KindDoc kKindDocs[] = {
    {"", "Pod", "PodSpec", "",
     "A program run on a node, placed by Tessera's scheduler: a Tessera Job of one task."},
    {"", "ConfigMap", "", "ConfigMap",
     "The NVIDIA device plugin's sharing configs: Tessera GpuSharingConfigs."},
    {"", "ResourceQuota", "ResourceQuotaSpec", "", "A namespace's limits: a NamespaceQuota."},
    {"", "Namespace", "NamespaceSpec", "", "A tenant's room: its objects and its tokens."},
    {"", "Node", "NodeSpec", "", "A machine whose agent runs pods and reports its GPUs."},
    {"", "Event", "", "Event", "What the scheduler did, and why (read-only)."},
    {"events.k8s.io", "Event", "", "EventsV1", "What the scheduler did, and why (read-only)."},
    {"batch", "Job", "JobSpec", "",
     "Pods run to completion, counted as Kubernetes' Job controller counts them: a Tessera Job."},
    {"scheduling.k8s.io", "PriorityClass", "", "PriorityClass",
     "A priority that pods name: queue order and preemption."},
    {"batch.volcano.sh", "Job", "VolcanoJobSpec", "",
     "A gang of tasks, as Volcano runs it: a Tessera Job."},
    {"scheduling.volcano.sh", "PodGroup", "PodGroupSpec", "",
     "Volcano's gang: pods placed together or not at all."},
    {"scheduling.volcano.sh", "Queue", "VolcanoQueueSpec", "",
     "Volcano's queue: a Tessera Queue in the cohort volcano."},
    {"bus.volcano.sh", "Command", "", "VolcanoCommand",
     "OpenQueue or CloseQueue, carried out when it is created."},
    {"kueue.x-k8s.io", "ClusterQueue", "ClusterQueueSpec", "", kKueue},
    {"kueue.x-k8s.io", "LocalQueue", "LocalQueueSpec", "", kKueue},
    {"kueue.x-k8s.io", "ResourceFlavor", "ResourceFlavorSpec", "", kKueue},
    {"kueue.x-k8s.io", "Cohort", "CohortSpec", "", kKueue},
    {"kueue.x-k8s.io", "Workload", "WorkloadSpec", "",
     "A queued job as Kueue shows it (read-only): its pod sets, admission and conditions."},
    {"kubeflow.org", "PyTorchJob", "PyTorchJobSpec", "", kKubeflow},
    {"kubeflow.org", "MPIJob", "MPIJobSpec", "", kKubeflow},
    {"kubeflow.org", "TFJob", "TFJobSpec", "", kKubeflow},
    {"tessera.io", "Job", "TesseraJobSpec", "", kTesseraJob},
    {"tessera.io", "PodGroup", "TesseraPodGroupSpec", "", "A gang of several jobs' pods."},
    {"tessera.io", "Queue", "TesseraQueueSpec", "",
     "A queue with quota per flavor, in a cohort (Kueue's ClusterQueue)."},
    {"tessera.io", "Cohort", "TesseraCohortSpec", "", "Queues that lend each other quota."},
    {"tessera.io", "LocalQueue", "TesseraLocalQueueSpec", "", "A namespace's way into a Queue."},
    {"tessera.io", "ResourceFlavor", "TesseraResourceFlavorSpec", "",
     "A kind of node that quota is counted in."},
    {"tessera.io", "PriorityClass", "TesseraPriorityClassSpec", "", "A named priority."},
    {"tessera.io", "NamespaceQuota", "NamespaceQuotaSpec", "", "A namespace's hard limits."},
    {"tessera.io", "GpuSharingConfig", "GpuSharingConfigSpec", "",
     "How the selected nodes' GPUs are offered: whole, time-sliced, shared or MIG."},
    {"tessera.io", "Event", "TesseraEventSpec", "", "What the scheduler did and why."},
    {"tessera.io", "Node", "TesseraNodeSpec", "",
     "A machine: its spec set by administrators, its status by its agent."},
    {"tessera.io", "Lease", "LeaseSpec", "", "A node agent's liveness, renewed each beat."},
    {"tessera.io", "Namespace", "", "", "A tenant's room; it has no settings."},
};

const KindDoc* DocOf(const Served& s) {
  for (const KindDoc& d : kKindDocs) {
    if (d.group == s.group && d.kind == s.kind) return &d;
  }
  return nullptr;
}

json Schema(const Served& s, bool v3) {
  const std::string description =
      s.kind + " (" + (s.group.empty() ? "core" : s.group) + "/" + s.version + ")";
  const KindDoc* doc = v3 ? DocOf(s) : nullptr;
  if (doc != nullptr) {
    constexpr std::string_view kRef = "#/components/schemas/";
    json properties;
    if (!doc->body.empty()) {
      properties = TypeSchema(KubeTypeNamed(doc->body), kRef)["properties"];
    } else {
      properties = {
          {"apiVersion", FieldSchema("string", "The object's group and version.", kRef)},
          {"kind", FieldSchema("string", "The object's kind.", kRef)},
          {"metadata", FieldSchema("ObjectMeta", "The object's name, namespace and labels.", kRef)},
          {"spec", doc->spec.empty()
                       ? FieldSchema("object", "Empty: nothing to set.", kRef)
                       : FieldSchema(doc->spec, "The " + s.kind + "'s specification.", kRef)},
          {"status",
           FieldSchema("object", "Written by Tessera: the scheduler and the node agents.", kRef)}};
    }
    return {{"type", "object"},
            {"description", description + ". " + std::string(doc->what)},
            {"properties", std::move(properties)},
            {"x-kubernetes-group-version-kind", json::array({Gvk(s)})}};
  }
  return {{"type", "object"},
          {"description", description + "; every field is checked by the server"},
          {"properties",
           {{"apiVersion", {{"type", "string"}}},
            {"kind", {{"type", "string"}}},
            {"metadata", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
            {"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
            {"status", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}},
          {"x-kubernetes-preserve-unknown-fields", true},
          {"x-kubernetes-group-version-kind", json::array({Gvk(s)})}};
}

json Info() { return {{"title", "Tessera"}, {"version", "v1.32.0-tessera"}}; }

}  // namespace

json OpenApiV3Index() {
  json paths = json::object();
  for (const Served& s : AllServed()) {
    const std::string gv = GvPath(s.group, s.version);
    if (paths.contains(gv)) continue;
    const size_t hash = std::hash<std::string>{}(OpenApiV3(gv).dump());
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016zx", hash);
    paths[gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=" + hex}};
  }
  return {{"paths", std::move(paths)}};
}

json OpenApiV3(std::string_view gv_path) {
  json paths = json::object(), schemas = json::object();
  for (const Served& s : AllServed()) {
    if (GvPath(s.group, s.version) != gv_path) continue;
    AddPaths(s, true, &paths);
    schemas[s.group + "." + s.version + "." + s.kind] = Schema(s, true);
    if (DocOf(s) != nullptr && !schemas.contains(std::string(KubeTypes()[0].schema))) {
      // The described types, under the names Kubernetes gives them (a group's document holds
      // the types of other groups it refers to, as kube-apiserver's do).
      for (const KubeType& t : KubeTypes()) {
        schemas[std::string(t.schema)] = TypeSchema(t, "#/components/schemas/");
      }
    }
  }
  if (paths.empty()) return json();
  return {{"openapi", "3.0.0"},
          {"info", Info()},
          {"paths", std::move(paths)},
          {"components", {{"schemas", std::move(schemas)}}}};
}

json OpenApiV2() {
  json paths = json::object(), definitions = json::object();
  for (const Served& s : AllServed()) {
    AddPaths(s, false, &paths);
    definitions[s.group + "." + s.version + "." + s.kind] = Schema(s, false);
  }
  return {{"swagger", "2.0"},
          {"info", Info()},
          {"paths", std::move(paths)},
          {"definitions", std::move(definitions)}};
}

namespace {

void Varint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A length-delimited field (wire type 2).
void Field(int number, std::string_view bytes, std::string* out) {
  Varint(static_cast<uint64_t>(number) << 3 | 2, out);
  Varint(bytes.size(), out);
  out->append(bytes);
}

}  // namespace

std::string OpenApiV2Protobuf() {
  // openapi_v2.Document: swagger = 1, info = 2; Info: title = 1, version = 2.
  std::string info;
  Field(1, "Tessera", &info);
  Field(2, "v1.32.0-tessera", &info);
  std::string doc;
  Field(1, "2.0", &doc);
  Field(2, info, &doc);
  return doc;
}

bool WantsProtobuf(std::string_view accept) {
  return accept.find("application/com.github.proto-openapi.spec.v2") != std::string_view::npos;
}

}  // namespace tessera::api
