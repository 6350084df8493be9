#include "api/kube_fields.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "api/kinds.h"
#include "api/manifest.h"
#include "api/openapi.h"

namespace tessera::api {
namespace {

using nlohmann::json;

// The named type a field's type refers to ("[]Container" -> "Container"), or "" for a
// primitive.
std::string Named(std::string_view type) {
  while (type.starts_with("[]")) type.remove_prefix(2);
  if (type.starts_with("map[string]")) type.remove_prefix(11);
  if (type.empty() || type == "string" || type == "integer" || type == "boolean" ||
      type == "object") {
    return "";
  }
  return std::string(type);
}

TEST(KubeFieldsTest, EveryFieldIsTypedAndEveryTypeItNamesIsDescribed) {
  std::set<std::string> names;
  for (const KubeType& t : KubeTypes()) names.insert(std::string(t.name));
  for (const KubeType& t : KubeTypes()) {
    for (const FieldUse& f : t.fields) {
      EXPECT_FALSE(f.type.empty()) << t.name << "." << f.name;
      // Acted on: says what it is; not acted on: says why.
      EXPECT_FALSE(f.ignored.empty() && f.description.empty()) << t.name << "." << f.name;
      const std::string named = Named(f.type);
      if (!named.empty()) EXPECT_TRUE(names.contains(named)) << t.name << "." << f.name;
    }
  }
}

// The schema kubectl explain reads and the check a manifest goes through are one table: every
// field the schema lists is accepted, one it does not list is refused naming the closest.
TEST(KubeFieldsTest, TheSchemaAndTheCheckAgree) {
  const json doc = OpenApiV3("api/v1");
  const json& schemas = doc["components"]["schemas"];
  const json& container = schemas["io.k8s.api.core.v1.Container"]["properties"];
  ASSERT_TRUE(container.is_object()) << schemas.dump().substr(0, 500);
  json obj = json::object();
  for (const auto& [name, schema] : container.items()) obj[name] = nullptr;
  Warnings warnings;
  EXPECT_TRUE(KnownFields(obj, "spec.containers[0]", KubeFieldsOf("Container"), &warnings).ok());
  EXPECT_TRUE(warnings.empty());  // null asks for nothing
  const Status s = KnownFields({{"imagePulPolicy", "Always"}}, "spec.containers[0]",
                               KubeFieldsOf("Container"), &warnings);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.containers[0].imagePulPolicy"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("imagePullPolicy"), std::string::npos) << s.message();
  // A field not acted on: a warning, and the schema says so.
  ASSERT_TRUE(
      KnownFields({{"hostNetwork", true}}, "spec", KubeFieldsOf("PodSpec"), &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("spec.hostNetwork: not acted on", 0), 0u) << warnings[0];
  const json& host_network = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["hostNetwork"];
  EXPECT_EQ(host_network["type"], "boolean");
  EXPECT_EQ(host_network["description"].get<std::string>().rfind("not acted on", 0), 0u);
}

// As kube-apiserver's documents refer: the kind's spec through allOf/$ref, lists with items,
// maps with additionalProperties, so that kubectl explain prints <[]Container> and walks in.
TEST(KubeFieldsTest, PodAndJobDocumentsReferToTheirTypes) {
  const json core = OpenApiV3("api/v1");
  const json* pod = nullptr;
  for (const auto& [name, schema] : core["components"]["schemas"].items()) {
    const json& gvk = schema.value("x-kubernetes-group-version-kind", json::array());
    if (!gvk.empty() && gvk[0]["kind"] == "Pod") pod = &schema;
  }
  ASSERT_NE(pod, nullptr);
  EXPECT_FALSE(pod->contains("x-kubernetes-preserve-unknown-fields"));
  EXPECT_EQ((*pod)["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodSpec");
  const json& pod_spec = core["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"];
  EXPECT_EQ(pod_spec["properties"]["containers"]["type"], "array");
  EXPECT_EQ(pod_spec["properties"]["containers"]["items"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.Container");
  EXPECT_EQ(pod_spec["properties"]["nodeSelector"]["additionalProperties"]["type"], "string");
  const json batch = OpenApiV3("apis/batch/v1");
  EXPECT_TRUE(batch["components"]["schemas"].contains("io.k8s.api.batch.v1.JobSpec"));
  EXPECT_TRUE(batch["components"]["schemas"].contains("io.k8s.api.core.v1.PodSpec"));
  const json kueue = OpenApiV3("apis/kueue.x-k8s.io/v1beta1");
  EXPECT_TRUE(kueue["components"]["schemas"].contains("x-k8s.io.kueue.v1beta1.ClusterQueueSpec"));
}

// Every served kind of every group is described: no kind's schema is left open, each names its
// fields, and every type a field refers to is in the same document.
TEST(KubeFieldsTest, EveryServedKindIsDescribed) {
  const json index = OpenApiV3Index();
  int kinds = 0;
  for (const auto& [gv, entry] : index["paths"].items()) {
    const json doc = OpenApiV3(gv);
    const json& schemas = doc["components"]["schemas"];
    for (const auto& [name, schema] : schemas.items()) {
      const std::string text = schema.dump();
      for (size_t at = text.find("#/components/schemas/"); at != std::string::npos;
           at = text.find("#/components/schemas/", at + 1)) {
        const size_t from = at + std::string_view("#/components/schemas/").size();
        const std::string ref = text.substr(from, text.find('"', from) - from);
        EXPECT_TRUE(schemas.contains(ref)) << gv << ": " << name << " refers to " << ref;
      }
      if (!schema.contains("x-kubernetes-group-version-kind")) continue;
      ++kinds;
      EXPECT_FALSE(schema.contains("x-kubernetes-preserve-unknown-fields")) << gv << " " << name;
      const json& props = schema["properties"];
      EXPECT_TRUE(props.contains("metadata")) << name;
      EXPECT_GE(props.size(), 4u) << name << ": its fields or its spec";
    }
  }
  EXPECT_GE(kinds, 35);
}

// The fields of Tessera's own kinds as their decoding reads them: each field a table lists is
// one the decoder takes (set to null, the decoder's "absent", it is accepted), and every spec
// field of the example and seed manifests is in its kind's table.
TEST(KubeFieldsTest, TesseraTablesAreTheDecodersFields) {
  const std::map<std::string, std::pair<std::string, json>> kinds = {
      {"Job", {"TesseraJobSpec", {{"tasks", {{{"name", "main"}, {"command", {"true"}}}}}}}},
      {"PodGroup", {"TesseraPodGroupSpec", json::object()}},
      {"Queue", {"TesseraQueueSpec", json::object()}},
      {"Cohort", {"TesseraCohortSpec", json::object()}},
      {"LocalQueue", {"TesseraLocalQueueSpec", {{"clusterQueue", "q"}}}},
      {"ResourceFlavor", {"TesseraResourceFlavorSpec", json::object()}},
      {"PriorityClass", {"TesseraPriorityClassSpec", {{"value", 1}}}},
      {"NamespaceQuota", {"NamespaceQuotaSpec", json::object()}},
      {"GpuSharingConfig", {"GpuSharingConfigSpec", {{"exclusive", json::object()}}}},
      {"Event", {"TesseraEventSpec", {{"reason", "Scheduled"}}}},
      {"Node", {"TesseraNodeSpec", json::object()}},
      {"Lease", {"LeaseSpec", json::object()}},
  };
  for (const auto& [kind, table] : kinds) {
    for (const FieldUse& f : KubeFieldsOf(table.first)) {
      json obj = {{"apiVersion", "tessera.io/v1"},
                  {"kind", kind},
                  {"metadata", {{"name", "x"}, {"namespace", "a"}}},
                  {"spec", table.second}};
      if (!obj["spec"].contains(f.name)) obj["spec"][std::string(f.name)] = nullptr;
      const Status s = ValidateSpec(obj);
      EXPECT_TRUE(s.ok()) << kind << " spec." << f.name << ": " << s.message();
    }
  }
  // What the translations write: each object's spec (and a Job's tasks) in its table.
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TESSERA_TEST_DATA_DIR "/seeds")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto objs = TranslateManifest(text.str(), entry.path().filename().string(), "default");
    if (!objs.ok()) continue;  // 10-prometheus-gpu-alerts.yaml is refused
    for (const json& o : *objs) {
      const std::string kind = o["kind"];
      ASSERT_TRUE(kinds.contains(kind)) << kind;
      Warnings notes;
      const Status s = KnownFields(o["spec"], "spec", KubeFieldsOf(kinds.at(kind).first), &notes);
      EXPECT_TRUE(s.ok()) << entry.path() << ": " << s.message();
      for (const json& task : o["spec"].value("tasks", json::array())) {
        const Status t = KnownFields(task, "task", KubeFieldsOf("TesseraTaskSpec"), &notes);
        EXPECT_TRUE(t.ok()) << entry.path() << ": " << t.message();
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace tessera::api
