#include "api/patch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "api/list_patch.h"

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

// More of RFC 6902's Appendix A, on the in-place patcher: arrays, copy, "-", nested members,
// and its error cases (A.9 a failed test, A.12 a missing target, A.13 an invalid op).
TEST(Patch, JsonPatchRfc6902AppendixCases) {
  auto json_patch = [](const char* target, const char* patch) {
    return ApplyPatch(json::parse(target), json::parse(patch), PatchType::kJson);
  };
  EXPECT_EQ(*json_patch(R"({"foo":["bar","qux","baz"]})", R"([{"op":"remove","path":"/foo/1"}])"),
            json::parse(R"({"foo":["bar","baz"]})"));  // A.4
  EXPECT_EQ(*json_patch(R"({"baz":"qux","foo":"bar"})",
                        R"([{"op":"replace","path":"/baz","value":"boo"}])"),
            json::parse(R"({"baz":"boo","foo":"bar"})"));  // A.5
  EXPECT_EQ(*json_patch(R"({"foo":["all","grass","cows","eat"]})",
                        R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])"),
            json::parse(R"({"foo":["all","cows","eat","grass"]})"));  // A.7
  EXPECT_TRUE(json_patch(R"({"baz":"qux","foo":["a",2,"c"]})",
                         R"([{"op":"test","path":"/baz","value":"qux"},
                             {"op":"test","path":"/foo/1","value":2}])")
                  .ok());  // A.8
  EXPECT_EQ(*json_patch(R"({"foo":"bar"})",
                        R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])"),
            json::parse(R"({"foo":"bar","child":{"grandchild":{}}})"));  // A.10
  EXPECT_EQ(
      *json_patch(R"({"foo":["bar"]})", R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])"),
      json::parse(R"({"foo":["bar",["abc","def"]]})"));  // A.16
  EXPECT_EQ(*json_patch(R"({"a":{"b":1}})", R"([{"op":"copy","from":"/a","path":"/c"}])"),
            json::parse(R"({"a":{"b":1},"c":{"b":1}})"));
  EXPECT_FALSE(json_patch(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz/bat","value":"q"}])")
                   .ok());                                                              // A.12
  EXPECT_FALSE(json_patch(R"({"foo":"bar"})", R"([{"op":"spam","path":"/x"}])").ok());  // A.13
  EXPECT_FALSE(json_patch(R"({"foo":["a"]})", R"([{"op":"add","path":"/foo/5","value":1}])").ok());
  EXPECT_FALSE(json_patch(R"({"foo":["a"]})", R"([{"op":"add","path":"/foo/01","value":1}])").ok());
  EXPECT_FALSE(json_patch(R"({"a":{"b":1}})", R"([{"op":"move","from":"/a","path":"/a/c"}])").ok());
}

// A patch of a few hundred bytes whose copies each double the object stops at the object size
// limit, long before it costs the server memory or time.
TEST(Patch, CopiesThatDoubleTheObjectStopAtTheSizeLimit) {
  json target = {{"d", {{"s", std::string(1000, 'x')}}}};
  json ops = json::array();
  for (int i = 0; i < 40; ++i) {
    ops.push_back({{"op", "copy"}, {"from", "/d"}, {"path", "/d/c" + std::to_string(i)}});
  }
  ASSERT_LT(ops.dump().size(), 2000u);
  Result<json> r = ApplyPatch(target, ops, PatchType::kJson);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(r.status().message().find("object size limit"), std::string::npos)
      << r.status().message();
  // Copies of the whole document into itself stop too.
  ops = json::array();
  for (int i = 0; i < 40; ++i) {
    ops.push_back({{"op", "copy"}, {"from", ""}, {"path", "/x" + std::to_string(i)}});
  }
  r = ApplyPatch(target, ops, PatchType::kJson);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  // Copies that nest the object ever deeper stop at the depth bound.
  ops = json::array();
  for (int i = 0; i < 200; ++i) ops.push_back({{"op", "copy"}, {"from", ""}, {"path", "/x"}});
  r = ApplyPatch(json::object(), ops, PatchType::kJson);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("levels"), std::string::npos) << r.status().message();
}

TEST(Patch, AJsonPatchHasAtMostTenThousandOperations) {
  json ops = json::array();
  for (size_t i = 0; i <= kMaxJsonPatchOperations; ++i) {
    ops.push_back({{"op", "test"}, {"path", "/a"}, {"value", 1}});
  }
  Result<json> r = ApplyPatch(json{{"a", 1}}, ops, PatchType::kJson);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  EXPECT_NE(r.status().message().find("10000"), std::string::npos) << r.status().message();
  ops.erase(ops.begin());
  EXPECT_TRUE(ApplyPatch(json{{"a", 1}}, ops, PatchType::kJson).ok());
}

// Merge and strategic merge patches are held to the same size limit.
TEST(Patch, MergedObjectsAreHeldToTheSizeLimit) {
  const json big = {{"metadata", {{"annotations", {{"a", std::string(kMaxObjectBytes, 'x')}}}}}};
  for (PatchType type : {PatchType::kMerge, PatchType::kStrategicMerge}) {
    Result<json> r = ApplyPatch(json::object(), big, type);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kTooLarge);
  }
}

// The strategic merge of keyed lists, $setElementOrder, $deleteFromPrimitiveList and merged
// primitive lists is right on long lists (its cost, n log n in their length, is measured by
// BM_StrategicMergeLongLists in bench/api_bench.cc).
TEST(Patch, StrategicMergesOfLongListsAreRight) {
  json target;
  const json patch = ListPatch(40'000, &target);
  Result<json> r = ApplyPatch(target, patch, PatchType::kStrategicMerge);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json& c = (*r)["spec"]["containers"];
  ASSERT_EQ(c.size(), 40'000u);
  EXPECT_EQ(c[0]["name"], "c39999");
  EXPECT_EQ(c[39'999]["name"], "c0");
  EXPECT_EQ(c[0]["image"], "j");
  // The deletes of the primitive list apply after its merge: every finalizer goes.
  EXPECT_EQ((*r)["metadata"]["finalizers"].size(), 0u);
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

namespace tessera::api {
namespace {

// Directives and operations that are not strings are refused, never thrown on (found by
// tessera_fuzz: "$patch": ["y","z"] ended the process).
TEST(Patch, DirectivesThatAreNotStringsAreRefused) {
  const json pod = json::parse(R"({"metadata":{"name":"p","finalizers":["x"]},
                                   "spec":{"containers":[{"name":"a"},{"name":"b"}]}})");
  const char* patches[] = {
      R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"],"finalizers":"b",
                      "$patch":["y","z"]},
          "spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],
                  "containers":[{"name":"a","env":[{"name":"E","value":"1"}]},
                                {"name":"b","$patch":"delete"}],
                  "$retainKeys":["containers"]}})",
      R"({"spec":{"containers":[{"name":"a","$patch":7}]}})",
      R"({"spec":{"containers":[{"$patch":{"x":1}}]}})",
  };
  for (const char* p : patches) {
    Result<json> r = ApplyPatch(pod, json::parse(p), PatchType::kStrategicMerge);
    EXPECT_FALSE(r.ok()) << p;
  }
  Result<json> r =
      ApplyPatch(pod, json::parse(R"([{"op":7,"path":"/metadata/name"}])"), PatchType::kJson);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace tessera::api
