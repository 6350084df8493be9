#include "api/quantity.h"

#include <gtest/gtest.h>

namespace tessera::api {
namespace {

struct Case {
  const char* text;
  int64_t milli;  // -1: parse error expected
  int64_t mib;
};

class QuantityTest : public ::testing::TestWithParam<Case> {};

TEST_P(QuantityTest, Converts) {
  const Case& c = GetParam();
  Result<Quantity> q = ParseQuantity(c.text, "spec.cpu");
  if (c.milli < 0) {
    ASSERT_FALSE(q.ok()) << c.text;
    EXPECT_NE(q.status().message().find("spec.cpu"), std::string::npos);
    return;
  }
  ASSERT_TRUE(q.ok()) << c.text << ": " << q.status().message();
  EXPECT_EQ(*ToMilli(*q, "f"), c.milli) << c.text;
  EXPECT_EQ(*ToMebibytes(*q, "f"), c.mib) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Quantities, QuantityTest,
    ::testing::Values(Case{"8", 8000, 1}, Case{"500m", 500, 1}, Case{"1.5", 1500, 1},
                      Case{"32Gi", 32LL * 1024 * 1024 * 1024 * 1000, 32 * 1024},
                      Case{"512Mi", 512LL * 1024 * 1024 * 1000, 512}, Case{"1k", 1000000, 1},
                      Case{"2e3", 2000000, 1}, Case{"1G", 1000000000000, 954}, Case{"0", 0, 0},
                      Case{"", -1, 0}, Case{"abc", -1, 0}, Case{"1.2.3", -1, 0}, Case{"5Qi", -1, 0},
                      Case{"1e999", -1, 0}, Case{"99999999999999999999999999999", -1, 0},
                      Case{"16Ei", -1, 0}));

TEST(Quantity, IntegersAndSigns) {
  EXPECT_EQ(*ToInteger(*ParseQuantity("4", "f"), "f"), 4);
  EXPECT_FALSE(ToInteger(*ParseQuantity("1.5", "f"), "f").ok());
  EXPECT_FALSE(ToInteger(*ParseQuantity("-2", "f"), "f").ok());
  EXPECT_FALSE(ToMilli(*ParseQuantity("-1", "f"), "f").ok());
  EXPECT_EQ(*ToMilli(*ParseQuantity("1n", "f"), "f"), 1);  // rounds up
  Result<int64_t> huge = ToMilli(*ParseQuantity("1Ei", "f"), "f");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too large"), std::string::npos);
}

TEST(Duration, UnitsLargestFirst) {
  EXPECT_EQ(*ParseDurationMs("90s", "f"), 90'000);
  EXPECT_EQ(*ParseDurationMs("30m", "f"), 1'800'000);
  EXPECT_EQ(*ParseDurationMs("1h30m", "f"), 5'400'000);
  EXPECT_EQ(*ParseDurationMs("7d", "f"), 604'800'000);
  EXPECT_EQ(*ParseDurationMs("250ms", "f"), 250);
  EXPECT_EQ(*ParseDurationMs("1m500ms", "f"), 60'500);
  EXPECT_EQ(*ParseDurationMs("0s", "f"), 0);
  for (const char* bad : {"", "5", "h", "1.5h", "-1h", "30m1h", "1h1h", "2w", "1h ", "99999d"}) {
    auto r = ParseDurationMs(bad, "spec.idleReclaim.after");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("spec.idleReclaim.after: ", 0), 0u)
        << r.status().message();
  }
  EXPECT_FALSE(ParseDurationMs("0m", "f", /*allow_zero=*/false).ok());
  for (const char* text : {"1m30s", "1h30m", "7d", "250ms", "1m500ms", "1d1h1m1s1ms"}) {
    EXPECT_EQ(FormatDurationMs(*ParseDurationMs(text, "f")), text);
  }
  EXPECT_EQ(FormatDurationMs(90'000), "1m30s");
  EXPECT_EQ(FormatDurationMs(0), "0s");
}

}  // namespace
}  // namespace tessera::api
