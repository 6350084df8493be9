// Kueue's ClusterQueue, LocalQueue, ResourceFlavor and Cohort as Tessera objects (see
// api/translate.h).
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/fields.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/translate.h"

namespace tessera::api::translate {

using nlohmann::json;

namespace {

// The namespaces a ClusterQueue's namespaceSelector names outright, for the rule on namespace
// tokens' LocalQueues: {} is every namespace; the kubernetes.io/metadata.name label
// (matchLabels, or matchExpressions In) names them. Other selectors are an error here (the
// selector itself still acts at admission).
Result<json> AllowedNamespaces(const json& sel) {
  constexpr char kNameLabel[] = "kubernetes.io/metadata.name";
  const std::string path = "spec.namespaceSelector";
  const std::string why =
      "only {} (every namespace) or the kubernetes.io/metadata.name label (matchLabels, or "
      "matchExpressions with In) are supported: queues do not read other namespace labels yet";
  if (!sel.is_object()) return FieldError(path, "must be a label selector");
  if (sel.empty()) return json::array({"*"});
  TESSERA_RETURN_IF_ERROR(OnlyFields(sel, path, {"matchLabels", "matchExpressions"}, why));
  std::set<std::string> names;
  bool first = true;
  auto intersect = [&](std::set<std::string> some) {
    if (first) {
      names = std::move(some);
    } else {
      std::set<std::string> both;
      for (const std::string& n : some) {
        if (names.contains(n)) both.insert(n);
      }
      names = std::move(both);
    }
    first = false;
  };
  const json& labels = Member(sel, "matchLabels");
  for (const auto& [k, v] : labels.items()) {
    if (k != kNameLabel || !v.is_string()) return FieldError(path + ".matchLabels." + k, why);
    intersect({v.get<std::string>()});
  }
  const json& exprs = Member(sel, "matchExpressions");
  if (!exprs.is_null() && !exprs.is_array() && !exprs.empty()) {
    return FieldError(path + ".matchExpressions", "must be a list");
  }
  for (size_t i = 0; exprs.is_array() && i < exprs.size(); ++i) {
    const std::string p = Index(path + ".matchExpressions", i);
    const json& e = exprs[i];
    TESSERA_RETURN_IF_ERROR(OnlyFields(e, p, {"key", "operator", "values"}, why));
    if (Text(e, "key") != kNameLabel || Text(e, "operator") != "In" ||
        !Member(e, "values").is_array()) {
      return FieldError(p, why);
    }
    std::set<std::string> some;
    for (const json& v : e["values"]) {
      if (!v.is_string()) return FieldError(p + ".values", "must be a list of strings");
      some.insert(v.get<std::string>());
    }
    intersect(std::move(some));
  }
  return json(std::vector<std::string>(names.begin(), names.end()));
}

// Renames a Kueue v1beta2 spec field to its v1beta1 name (ClusterQueue cohortName -> cohort,
// Cohort parentName -> parent); both names given is an error naming the v1beta2 one.
Status V1beta1Name(json* spec, const char* v1beta2, const char* v1beta1) {
  if (!spec->is_object() || !spec->contains(v1beta2)) return Status::Ok();
  if (spec->contains(v1beta1)) {
    return FieldError(std::string("spec.") + v1beta2, std::string("give spec.") + v1beta1 +
                                                          " (v1beta1) or spec." + v1beta2 +
                                                          " (v1beta2), not both");
  }
  (*spec)[v1beta1] = (*spec)[v1beta2];
  spec->erase(v1beta2);
  return Status::Ok();
}

}  // namespace

Result<std::vector<json>> Kueue(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  if (d.kind == "ClusterQueue") {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("ClusterQueueSpec"), warnings));
    json q = spec;
    for (const char* k : {"admissionChecks", "admissionChecksStrategy", "admissionScope"}) {
      q.erase(k);
    }
    TESSERA_RETURN_IF_ERROR(V1beta1Name(&q, "cohortName", "cohort"));
    // Kueue admits workloads of the namespaces the selector matches, and of none without one.
    if (q.contains("namespaceSelector") && !q["namespaceSelector"].is_null()) {
      auto sel = LabelSelector::FromJson(q["namespaceSelector"], "spec.namespaceSelector");
      if (!sel.ok()) return sel.status();
      // Namespace tokens may point LocalQueues at it when the namespaces are named outright.
      if (auto allowed = AllowedNamespaces(q["namespaceSelector"]); allowed.ok()) {
        q["allowedNamespaces"] = *allowed;
      }
    } else {
      warnings->push_back(
          "spec.namespaceSelector: not set: as in Kueue, no namespace's workloads are admitted "
          "to this ClusterQueue; namespaceSelector: {} admits every namespace");
      // Every namespace carries its name label: this matches none.
      q["namespaceSelector"] = {
          {"matchExpressions",
           {{{"key", "kubernetes.io/metadata.name"}, {"operator", "DoesNotExist"}}}}};
    }
    return std::vector<json>{
        Object("Queue", d.name, "", Member(d.meta, "labels"), Member(d.meta, "annotations"), q)};
  }
  if (d.kind == "LocalQueue") {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("LocalQueueSpec"), warnings));
    json l = json::object();
    if (spec.contains("clusterQueue")) l["clusterQueue"] = spec["clusterQueue"];
    return std::vector<json>{Object("LocalQueue", d.name, d.ns, Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), l)};
  }
  if (d.kind == "ResourceFlavor") {
    TESSERA_RETURN_IF_ERROR(
        KnownFields(spec, "spec", KubeFieldsOf("ResourceFlavorSpec"), warnings));
    json f = spec;
    if (f.is_object()) f.erase("topologyName");
    return std::vector<json>{Object("ResourceFlavor", d.name, "", Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), f)};
  }
  if (d.kind == "Cohort") {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("CohortSpec"), warnings));
    json c = spec;
    if (!c.is_object()) c = json::object();
    TESSERA_RETURN_IF_ERROR(V1beta1Name(&c, "parentName", "parent"));
    return std::vector<json>{
        Object("Cohort", d.name, "", Member(d.meta, "labels"), Member(d.meta, "annotations"), c)};
  }
  return FieldError("kind",
                    "Kueue " + d.kind +
                        " is not supported (known: ClusterQueue, LocalQueue, ResourceFlavor, "
                        "Cohort; Workloads are made by Tessera itself)");
}

}  // namespace tessera::api::translate
