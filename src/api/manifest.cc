#include "api/manifest.h"

#include <algorithm>

#include "api/fields.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/translate.h"
#include "api/yaml.h"

namespace tessera::api::translate {

using nlohmann::json;

json Object(std::string_view kind, const std::string& name, const std::string& ns,
            const json& labels, const json& annotations, json spec) {
  json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  if (labels.is_object() && !labels.empty()) meta["labels"] = labels;
  if (annotations.is_object() && !annotations.empty()) meta["annotations"] = annotations;
  return {{"apiVersion", kApiVersion}, {"kind", kind}, {"metadata", meta}, {"spec", spec}};
}

const json kEmpty = json::object();

const json& Member(const json& obj, const char* key) {
  if (!obj.is_object()) return kEmpty;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? kEmpty : *it;
}

std::string Text(const json& obj, const char* key) {
  const json& v = Member(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

Status OnlyFields(const json& obj, const std::string& path,
                  std::initializer_list<const char*> allowed, std::string_view why) {
  if (!obj.is_object()) return obj.is_null() ? Status::Ok() : FieldError(path, "must be an object");
  for (const auto& [k, v] : obj.items()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) return FieldError(path.empty() ? k : path + "." + k, why);
  }
  return Status::Ok();
}

// What to use instead of a kind Tessera does not take.
std::string Rejection(const std::string& api, const std::string& kind) {
  if (kind == "DaemonSet") {
    return "a DaemonSet is not a Tessera object: the NVIDIA device plugin and DCGM exporter "
           "DaemonSets are replaced by `tessera agent` on each node";
  }
  if (kind == "PrometheusRule") {
    return "Prometheus rules are not scheduling objects: load them into Prometheus; Tessera "
           "serves the DCGM metric names they use on /metrics";
  }
  if (kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet") {
    return "a " + kind + " is not supported: submit a Job (tessera.io/v1, batch/v1 or Volcano)";
  }
  return "unknown kind " + kind + " of apiVersion " + api +
         " (Tessera understands Pod, batch/v1 Job, Volcano Job and PodGroup, Kubeflow PyTorchJob "
         "and MPIJob, "
         "Namespace, Kueue "
         "ClusterQueue/LocalQueue/ResourceFlavor/Cohort, ResourceQuota, PriorityClass, "
         "device-plugin ConfigMaps and tessera.io/v1 kinds)";
}

// A Kubernetes object's top level, status included (as `kubectl get -o yaml` writes it).
constexpr FieldUse kObjectFields[] = {
    {"apiVersion", ""},
    {"kind", ""},
    {"metadata", ""},
    {"spec", ""},
    {"status", "not acted on: status is written by Tessera"},
};

// A Kubernetes, Kueue or Volcano document's objects (metadata checked, namespace defaulted).
Result<std::vector<json>> TranslateKube(const Doc& d, const json& doc, Warnings* warnings) {
  const std::string group = d.api.substr(0, d.api.find('/'));
  if (d.api == "v1" && d.kind == "Pod") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return Pod(d, doc, warnings);
  }
  if (d.api == "batch/v1" && d.kind == "Job") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return BatchJob(d, doc, warnings);
  }
  if (group == "batch.volcano.sh" && d.kind == "Job") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return VolcanoJob(d, doc, warnings);
  }
  if (group == "scheduling.volcano.sh" && d.kind == "PodGroup") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return VolcanoPodGroup(d, doc, warnings);
  }
  if (group == "scheduling.volcano.sh" && d.kind == "Queue") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return VolcanoQueueKind(d, doc, warnings);
  }
  if (group == "kueue.x-k8s.io") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return Kueue(d, doc, warnings);
  }
  if (d.api == "kubeflow.org/v1" && d.kind == "TFJob") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return TfJob(d, doc, warnings);
  }
  if ((d.api == "kubeflow.org/v1" || d.api == "kubeflow.org/v2beta1") && d.kind == "MPIJob") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return MpiJob(d, doc, warnings);
  }
  if (d.api == "kubeflow.org/v1" && d.kind == "PyTorchJob") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return PyTorchJob(d, doc, warnings);
  }
  if (d.api == "v1" && d.kind == "ResourceQuota") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    const json& spec = Member(doc, "spec");
    TESSERA_RETURN_IF_ERROR(
        OnlyFields(spec, "spec", {"hard"}, "not supported: Tessera quotas are hard limits only"));
    return std::vector<json>{Object("NamespaceQuota", d.name, d.ns, Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), spec)};
  }
  if (group == "scheduling.k8s.io" && d.kind == "PriorityClass") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", KubeFieldsOf("PriorityClass"), warnings));
    json spec = json::object();
    for (const char* k : {"value", "preemptionPolicy", "globalDefault", "description"}) {
      if (doc.contains(k)) spec[k] = doc[k];
    }
    return std::vector<json>{Object("PriorityClass", d.name, "", Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), spec)};
  }
  if (d.api == "v1" && d.kind == "Namespace") {
    // Its labels and annotations are kept; its objects are deleted with it.
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    const json& spec = Member(doc, "spec");
    TESSERA_RETURN_IF_ERROR(OnlyFields(spec, "spec", {"finalizers"}, kNotRun));
    const json& finalizers = Member(spec, "finalizers");
    if (!AsksNothing(finalizers) && finalizers != json::array({"kubernetes"})) {
      warnings->push_back(
          "spec.finalizers: not acted on: a namespace's objects are deleted with "
          "it at once");
    }
    TESSERA_RETURN_IF_ERROR(ValidateName(d.name, true, "metadata.name"));
    return std::vector<json>{Object("Namespace", d.name, "", Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), json::object())};
  }
  if (d.api == "v1" && d.kind == "ConfigMap") {
    // The NVIDIA device plugin's config map: each key a config; "any" (the chart's usual
    // default name) covers nodes without a config label.
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", KubeFieldsOf("ConfigMap"), warnings));
    return SharingConfigs(d.name, Member(doc, "data"), "data", "any", warnings);
  }
  return InvalidArgument(Rejection(d.api, d.kind));
}

}  // namespace tessera::api::translate

namespace tessera::api {

using nlohmann::json;
using translate::Doc;
using translate::kNotRun;
using translate::Member;
using translate::OnlyFields;
using translate::Rejection;
using translate::SharingConfigs;
using translate::Text;
using translate::TranslateKube;

Result<std::vector<json>> TranslateDocument(const json& doc, std::string_view default_namespace,
                                            std::vector<std::string>* warnings) {
  std::vector<std::string> ignored;
  if (warnings == nullptr) warnings = &ignored;
  if (doc.is_null()) return std::vector<json>{};
  if (!doc.is_object()) return InvalidArgument("document: must be a map");
  if (!doc.contains("apiVersion") && !doc.contains("kind")) {
    if (doc.contains("groups")) {
      return InvalidArgument(Rejection("", "PrometheusRule"));
    }
    if (doc.contains("devicePlugin")) {
      const json& cfg = Member(doc["devicePlugin"], "config");
      TESSERA_RETURN_IF_ERROR(OnlyFields(doc, "", {"devicePlugin"}, kNotRun));
      TESSERA_RETURN_IF_ERROR(
          OnlyFields(cfg, "devicePlugin.config", {"name", "create", "default", "data"}, kNotRun));
      const std::string name = Text(cfg, "name").empty() ? "device-plugin" : Text(cfg, "name");
      return SharingConfigs(name, Member(cfg, "data"), "devicePlugin.config.data",
                            Text(cfg, "default"), warnings);
    }
    return InvalidArgument("document: has no apiVersion and kind");
  }
  Doc d;
  d.api = Text(doc, "apiVersion");
  d.kind = Text(doc, "kind");
  d.meta = Member(doc, "metadata");
  d.name = Text(d.meta, "name");
  d.ns = Text(d.meta, "namespace");
  if (d.api.empty()) return FieldError("apiVersion", "must be set");
  if (d.kind.empty()) return FieldError("kind", "must be set");
  if (d.api == kApiVersion) {
    json obj = doc;
    const KindInfo* info = FindKind(d.kind);
    if (info != nullptr && info->namespaced && d.ns.empty() && obj["metadata"].is_object()) {
      obj["metadata"]["namespace"] = default_namespace;
    }
    return std::vector<json>{obj};
  }
  if (IsVolcanoCommand(doc)) {
    return InvalidArgument(
        "Command: a bus.volcano.sh Command is carried out by the server when it is created "
        "(tessera apply, kubectl create); it is not an object to translate");
  }
  TESSERA_RETURN_IF_ERROR(KnownFields(d.meta, "metadata", KubeFieldsOf("ObjectMeta"), warnings));
  // Labels and annotations are maps of strings (a patch may have set them to anything).
  for (const char* m : {"labels", "annotations"}) {
    const json& v = Member(d.meta, m);
    const bool strings =
        v.is_null() || (v.is_object() && std::all_of(v.begin(), v.end(),
                                                     [](const json& e) { return e.is_string(); }));
    if (!strings) return FieldError(std::string("metadata.") + m, "must be a map of strings");
  }
  if (d.name.empty()) return FieldError("metadata.name", "must be set");
  if (d.ns.empty()) d.ns = std::string(default_namespace);
  Result<std::vector<json>> objs = TranslateKube(d, doc, warnings);
  if (!objs.ok()) return objs;
  // The document's own objects keep it; the cohort and flavor every Volcano Queue shares do not.
  if (KubeKindOf(d.api, d.kind) != nullptr) {
    const std::string source = SourceDocument(doc, d.ns).dump();
    const bool shared_first = d.api.starts_with("scheduling.volcano.sh/") && d.kind == "Queue";
    for (size_t i = shared_first ? objs->size() - 1 : 0; i < objs->size(); ++i) {
      json& meta = (*objs)[i]["metadata"];
      if (!meta["annotations"].is_object()) meta["annotations"] = json::object();
      meta["annotations"][std::string(kSourceAnnotation)] = source;
    }
  }
  return objs;
}

std::string DocumentPlace(std::string_view source, size_t index, const json& doc) {
  std::string what = std::string(source) + ": document " + std::to_string(index + 1);
  const std::string kind = Text(doc, "kind"), name = Text(Member(doc, "metadata"), "name");
  if (!kind.empty()) what += " (" + kind + (name.empty() ? "" : " " + name) + ")";
  return what;
}

Result<std::vector<json>> TranslateManifest(std::string_view text, std::string_view source,
                                            std::string_view default_namespace,
                                            std::vector<std::vector<std::string>>* warnings) {
  Result<std::vector<json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return InvalidArgument(std::string(source) + ": " + docs.status().message());
  std::vector<json> out;
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& doc = (*docs)[i];
    std::vector<std::string> notes;
    Result<std::vector<json>> objs = TranslateDocument(doc, default_namespace, &notes);
    if (!objs.ok()) {
      return InvalidArgument(DocumentPlace(source, i, doc) + ": " + objs.status().message());
    }
    std::vector<std::vector<std::string>> per_object;
    AppendDocument(std::move(objs).value(), notes, &out, &per_object);
    if (warnings != nullptr) {
      for (auto& w : per_object) warnings->push_back(std::move(w));
    }
  }
  return out;
}

void AppendDocument(std::vector<json> objs, const std::vector<std::string>& notes,
                    std::vector<json>* out, std::vector<std::vector<std::string>>* warnings) {
  for (size_t k = 0; k < objs.size(); ++k) {
    out->push_back(std::move(objs[k]));
    warnings->push_back(k + 1 == objs.size() ? notes : std::vector<std::string>{});
  }
}

}  // namespace tessera::api
