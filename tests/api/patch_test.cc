#include "api/patch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tessera::api {
namespace {

using nlohmann::json;

json Patched(const char* target, const char* patch, PatchType type) {
  Result<json> r = ApplyPatch(json::parse(target), json::parse(patch), type);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : json();
}

// RFC 7386, Appendix A: the example test cases of JSON merge patch.
TEST(Patch, MergePatchAsRfc7386Says) {
  const char* cases[][3] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Patched(c[0], c[1], PatchType::kMerge), json::parse(c[2])) << c[0] << " + " << c[1];
  }
}

// RFC 6902, Appendix A: add, remove, replace, move, test (a failed test is an error).
TEST(Patch, JsonPatchAsRfc6902Says) {
  EXPECT_EQ(Patched(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz","value":"qux"}])",
                    PatchType::kJson),
            json::parse(R"({"foo":"bar","baz":"qux"})"));
  EXPECT_EQ(Patched(R"({"foo":["bar","baz"]})", R"([{"op":"add","path":"/foo/1","value":"qux"}])",
                    PatchType::kJson),
            json::parse(R"({"foo":["bar","qux","baz"]})"));
  EXPECT_EQ(Patched(R"({"baz":"qux","foo":"bar"})", R"([{"op":"remove","path":"/baz"}])",
                    PatchType::kJson),
            json::parse(R"({"foo":"bar"})"));
  EXPECT_EQ(Patched(R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
                    R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])", PatchType::kJson),
            json::parse(R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"));
  Result<json> failed =
      ApplyPatch(json::parse(R"({"baz":"qux"})"),
                 json::parse(R"([{"op":"test","path":"/baz","value":"bar"}])"), PatchType::kJson);
  EXPECT_FALSE(failed.ok());
  EXPECT_FALSE(ApplyPatch(json::parse("{}"), json::parse(R"([{"op":"remove","path":"/nope"}])"),
                          PatchType::kJson)
                   .ok());
}

// Cases after k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go
// (TestStrategicMergePatch's testdata): lists of maps merge on their patch merge key, other
// lists are replaced, and the directives work.
TEST(Patch, StrategicMergeAsKubernetesDoes) {
  const json pod = json::parse(R"({
    "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"]},
    "spec": {
      "containers": [
        {"name": "c1", "image": "i1", "env": [{"name": "A", "value": "1"}],
         "args": ["--one"]},
        {"name": "c2", "image": "i2"}
      ],
      "tolerations": [{"key": "k1", "operator": "Exists"}]
    }})");
  auto smp = [&](const char* patch) {
    Result<json> r = ApplyPatch(pod, json::parse(patch), PatchType::kStrategicMerge);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : json();
  };
  // "merge lists of maps": a container named in the patch is merged, the other kept.
  json got = smp(R"({"spec":{"containers":[{"name":"c1","image":"i1b",
                     "env":[{"name":"B","value":"2"}]}]}})");
  ASSERT_EQ(got["spec"]["containers"].size(), 2u);
  EXPECT_EQ(got["spec"]["containers"][0]["image"], "i1b");
  EXPECT_EQ(got["spec"]["containers"][0]["env"].size(), 2u);
  EXPECT_EQ(got["spec"]["containers"][0]["args"], json::array({"--one"}));
  EXPECT_EQ(got["spec"]["containers"][1]["image"], "i2");
  // "add an element": a new name is appended.
  got = smp(R"({"spec":{"containers":[{"name":"c3","image":"i3"}]}})");
  EXPECT_EQ(got["spec"]["containers"].size(), 3u);
  // Lists without a merge key (tolerations, args) are replaced whole.
  got = smp(R"({"spec":{"tolerations":[{"key":"k2","operator":"Exists"}]}})");
  EXPECT_EQ(got["spec"]["tolerations"], json::parse(R"([{"key":"k2","operator":"Exists"}])"));
  // "delete an element with $patch: delete".
  got = smp(R"({"spec":{"containers":[{"name":"c2","$patch":"delete"}]}})");
  ASSERT_EQ(got["spec"]["containers"].size(), 1u);
  EXPECT_EQ(got["spec"]["containers"][0]["name"], "c1");
  // "replace a list with $patch: replace".
  got = smp(R"({"spec":{"containers":[{"name":"c9","image":"i9"},{"$patch":"replace"}]}})");
  EXPECT_EQ(got["spec"]["containers"], json::parse(R"([{"name":"c9","image":"i9"}])"));
  // "replace a map with $patch: replace"; "delete a map with $patch: delete".
  got = smp(R"({"metadata":{"labels":{"b":"2","$patch":"replace"}}})");
  EXPECT_EQ(got["metadata"]["labels"], json::parse(R"({"b":"2"})"));
  got = smp(R"({"metadata":{"labels":{"$patch":"delete"}}})");
  EXPECT_FALSE(got["metadata"].contains("labels"));
  // null deletes a field.
  got = smp(R"({"metadata":{"labels":{"a":null}}})");
  EXPECT_EQ(got["metadata"]["labels"], json::object());
  // "$setElementOrder": the merged list takes the patch's order.
  got = smp(R"({"spec":{"$setElementOrder/containers":[{"name":"c2"},{"name":"c1"}],
                        "containers":[{"name":"c1","image":"i1c"}]}})");
  EXPECT_EQ(got["spec"]["containers"][0]["name"], "c2");
  EXPECT_EQ(got["spec"]["containers"][1]["image"], "i1c");
  // "$deleteFromPrimitiveList" and the merge of a primitive list (finalizers).
  got = smp(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}})");
  EXPECT_EQ(got["metadata"]["finalizers"], json::array());
  got = smp(R"({"metadata":{"finalizers":["y"]}})");
  EXPECT_EQ(got["metadata"]["finalizers"], json::array({"x", "y"}));
  // "$retainKeys": keys not listed go.
  got = smp(R"({"spec":{"$retainKeys":["containers"]}})");
  EXPECT_FALSE(got["spec"].contains("tolerations"));
  // An element without its merge key and an unknown directive are errors naming the place.
  Result<json> bad = ApplyPatch(pod, json::parse(R"({"spec":{"containers":[{"image":"x"}]}})"),
                                PatchType::kStrategicMerge);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.containers[0]"), std::string::npos);
  EXPECT_FALSE(
      ApplyPatch(pod, json::parse(R"({"spec":{"$patch":"explode"}})"), PatchType::kStrategicMerge)
          .ok());
}

TEST(Patch, ContentTypesNameThePatch) {
  EXPECT_EQ(*PatchTypeOf("application/merge-patch+json"), PatchType::kMerge);
  EXPECT_EQ(*PatchTypeOf("application/json-patch+json; charset=utf-8"), PatchType::kJson);
  EXPECT_EQ(*PatchTypeOf("application/strategic-merge-patch+json"), PatchType::kStrategicMerge);
  Result<PatchType> apply = PatchTypeOf("application/apply-patch+yaml");
  ASSERT_FALSE(apply.ok());
  EXPECT_NE(apply.status().message().find("server-side apply"), std::string::npos);
  EXPECT_FALSE(PatchTypeOf("application/json").ok());
  EXPECT_EQ(StrategicMergeKey("containers"), "name");
  EXPECT_EQ(StrategicMergeKey("volumeMounts"), "mountPath");
  EXPECT_EQ(StrategicMergeKey("tolerations"), "");
}

}  // namespace
}  // namespace tessera::api
