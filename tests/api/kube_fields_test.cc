#include "api/kube_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

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
  // Kueue's queues too; the kinds without a table stay open: the server checks them.
  const json kueue = OpenApiV3("apis/kueue.x-k8s.io/v1beta1");
  EXPECT_TRUE(kueue["components"]["schemas"].contains("x-k8s.io.kueue.v1beta1.ClusterQueueSpec"));
  const json tessera = OpenApiV3("apis/tessera.io/v1");
  for (const auto& [name, schema] : tessera["components"]["schemas"].items()) {
    EXPECT_EQ(schema["x-kubernetes-preserve-unknown-fields"], true) << name;
  }
}

}  // namespace
}  // namespace tessera::api
