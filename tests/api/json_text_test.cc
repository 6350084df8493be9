#include "api/json_text.h"

#include <gtest/gtest.h>

#include <string>

#include "api/object.h"
#include "api/yaml.h"

namespace tessera::api {
namespace {

std::string Message(const Result<nlohmann::json>& r) {
  return r.ok() ? "(ok)" : r.status().message();
}

TEST(ParseJsonTest, NumbersOutsideTheDoubleRangeNameTheirField) {
  auto r = ParseJson(R"({"spec": {"tasks": [{"replicas": 1e400}]}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(Message(r).find("spec.tasks[0].replicas: number out of range"), std::string::npos)
      << Message(r);
  const std::string digits(5000, '9');
  r = ParseJson("{\"x\": " + digits + "}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("x: number out of range"), std::string::npos) << Message(r);
  r = ParseJson("[1, -1e999]");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("[1]: number out of range"), std::string::npos) << Message(r);
  // Within range, integers past int64 stay numbers for the field readers to refuse.
  EXPECT_TRUE(ParseJson(R"({"x": 18446744073709551615, "y": 1e300})").ok());
}

TEST(ParseJsonTest, InvalidUtf8IsRefusedAndTheMessageStaysUtf8) {
  for (const std::string& bad :
       {std::string("{\"a\": \"x\xff\"}"), std::string("{\"\xc0\xaf\": 1}"),
        std::string("{\"a\": \"\xed\xa0\x80\"}"),  // a surrogate
        std::string("\xfe")}) {
    auto r = ParseJson(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(ValidUtf8(r.status().message())) << r.status().message();
    // The message can be put in a JSON response.
    EXPECT_NO_THROW((void)nlohmann::json(r.status().message()).dump());
  }
  EXPECT_TRUE(ParseJson("{\"a\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}").ok());
}

TEST(ParseJsonTest, DuplicateKeysLongStringsAndDeepNestingAreRefused) {
  auto r = ParseJson(R"({"metadata": {"name": "a", "name": "b"}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("metadata.name: duplicate key"), std::string::npos) << Message(r);
  JsonLimits limits;
  r = ParseJson("{\"spec\": {\"command\": [\"" + std::string(3 << 20, 'x') + "\"]}}", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("spec.command[0]: a string of 3145728 bytes"), std::string::npos)
      << Message(r);
  r = ParseJson(std::string(100, '[') + std::string(100, ']'));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("nested deeper than 32"), std::string::npos) << Message(r);
  r = ParseJson("{\"a\": [1, 2,");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(Message(r).find("a[2]: malformed JSON"), std::string::npos) << Message(r);
  // Same key in different objects is fine; the value is the document.
  r = ParseJson(R"({"a": {"k": 1}, "b": {"k": [true, null, "s", 2.5]}})");
  ASSERT_TRUE(r.ok()) << Message(r);
  EXPECT_EQ(*r, nlohmann::json::parse(R"({"a": {"k": 1}, "b": {"k": [true, null, "s", 2.5]}})"));
}

TEST(SafeTextTest, ReplacesInvalidBytesAndCuts) {
  EXPECT_EQ(SafeText("ok"), "ok");
  EXPECT_EQ(SafeText("a\xff"
                     "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(SafeText(std::string(20, 'x'), 10), "xxxxxxxxxx...");
  EXPECT_TRUE(ValidUtf8(SafeText("\xe2\x82")));
  EXPECT_FALSE(ValidUtf8("\xf5\x80\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(ValidUtf8("\xe0\x80\xaf"));      // overlong
}

TEST(YamlLimitsTest, AliasExpansionIsBoundedByBytes) {
  // Each level doubles a long string: 2^20 copies of 1 KiB would be a gigabyte.
  std::string yaml = "a0: &a0 \"" + std::string(1024, 'x') + "\"\n";
  for (int i = 1; i <= 20; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) +
            ", *a" + std::to_string(i - 1) + "]\n";
  }
  auto r = ParseYamlDocuments(yaml);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MiB of content (after expanding aliases"), std::string::npos)
      << r.status().message();
}

TEST(YamlLimitsTest, InvalidUtf8AndHugeScalarsAreRefused) {
  auto r = ParseYamlDocuments("name: \"caf\xff\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not UTF-8 (line 1)"), std::string::npos)
      << r.status().message();
  r = ParseYamlDocuments("key\xff: 1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(ValidUtf8(r.status().message()));
  r = ParseYamlDocuments("command: " + std::string(300 << 10, 'y') + "\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("longer than the limit"), std::string::npos);
  // Plain scalars still follow the YAML 1.2 core schema.
  r = ParseYamlDocuments("a: 12\nb: -3.5e2\nc: .5\nd: 1.2.3\ne: 99999999999999999999\nf: 1e999\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::json& d = (*r)[0];
  EXPECT_EQ(d["a"], 12);
  EXPECT_EQ(d["b"], -350.0);
  EXPECT_EQ(d["c"], 0.5);
  EXPECT_EQ(d["d"], "1.2.3");
  EXPECT_EQ(d["e"], "99999999999999999999");
  EXPECT_EQ(d["f"], "1e999");
}

TEST(EnvelopeTest, NamesAndSystemMetadataAreChecked) {
  auto obj = [](nlohmann::json meta) {
    return nlohmann::json{{"apiVersion", "tessera.io/v1"},
                          {"kind", "Queue"},
                          {"metadata", meta},
                          {"spec", nlohmann::json::object()}};
  };
  EXPECT_TRUE(ValidateEnvelope(obj({{"name", "a.b-c"}})).ok());
  for (const char* bad : {"a..b", "a.-b", "a-.b", ".a", "a."}) {
    Status s = ValidateEnvelope(obj({{"name", bad}}));
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("metadata.name"), std::string::npos) << s.message();
  }
  Status s = ValidateEnvelope(obj({{"name", "q"}, {"uid", 5}}));
  EXPECT_NE(s.message().find("metadata.uid"), std::string::npos) << s.message();
  s = ValidateEnvelope(obj({{"name", "q"}, {"generation", "1"}}));
  EXPECT_NE(s.message().find("metadata.generation"), std::string::npos) << s.message();
  s = ValidateEnvelope(obj({{"name", "q"}, {"generation", -1}}));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(ValidateEnvelope(obj({{"name", "q"}, {"uid", "u-1"}, {"generation", 3}})).ok());
  s = ValidateEnvelope(obj(
      {{"name", "q"},
       {"annotations", {{"a", std::string(200 << 10, 'x')}, {"b", std::string(100 << 10, 'x')}}}}));
  EXPECT_NE(s.message().find("metadata.annotations: may hold at most 262144 bytes"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace tessera::api
