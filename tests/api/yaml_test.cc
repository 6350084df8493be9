#include "api/yaml.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::api {
namespace {

using nlohmann::json;

// YAML 1.2's core schema: quoted scalars are strings, plain ones what they look like.
TEST(Yaml, QuotedScalarsStayStrings) {
  auto docs = ParseYamlDocuments("a: \"true\"\nb: true\nc: '8'\nd: 8\ne: 0.5\nf: ~\ng: v1\n");
  ASSERT_TRUE(docs.ok());
  const json& d = (*docs)[0];
  EXPECT_EQ(d["a"], "true");
  EXPECT_EQ(d["b"], true);
  EXPECT_EQ(d["c"], "8");
  EXPECT_EQ(d["d"], 8);
  EXPECT_EQ(d["e"], 0.5);
  EXPECT_TRUE(d["f"].is_null());
  EXPECT_EQ(d["g"], "v1");
}

// Found by tests/fuzz: yaml-cpp 0.7's loader allocated without end on these (24 GB for a
// 327-byte body); manifests are now read on libyaml's event parser.
TEST(Yaml, InputsThatMadeTheYamlLoaderAllocateWithoutEndAreRefused) {
  for (const char* text : {"\"a\",", "[a],", "{a: 1},", "{\"m\"::\"t\"},\nx", "{a} ,", "\"\","}) {
    auto docs = ParseYamlDocuments(text);
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("line 1"), std::string::npos) << docs.status().message();
  }
  EXPECT_FALSE(ParseYamlDocuments(std::string(100'000, '[')).ok());
  // A plain scalar continued on a line that starts with a quote is one scalar (yaml-cpp read
  // the quote as a new token and looped).
  auto folded = ParseYamlDocuments("x\n\"\",");
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  EXPECT_EQ((*folded)[0], "x \"\",");
  // Valid YAML, with commas in plain scalars and flow collections, still loads.
  auto ok = ParseYamlDocuments("a: b, c\nd: [1, 2]\ne: {f: g, h: i}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)[0]["a"], "b, c");
}

}  // namespace
}  // namespace tessera::api
