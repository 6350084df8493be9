// The request readers every handler shares (server/api_common.h): query flags, dry runs and
// timeouts, as kube-apiserver reads them.
#include "server/api_common.h"

#include <gtest/gtest.h>

namespace tessera::server {
namespace {

HttpRequest With(const std::string& query) {
  HttpRequest r;
  r.method = "GET";
  r.path = "/";
  EXPECT_TRUE(ParseQuery(query, &r.query)) << query;
  return r;
}

TEST(ApiCommonTest, QueryFlagsAsGoParseBoolReadsThem) {
  for (const char* yes : {"1", "t", "T", "true", "True", "TRUE"}) {
    EXPECT_TRUE(QueryFlag(With(std::string("watch=") + yes), "watch")) << yes;
  }
  for (const char* no : {"0", "false", "yes", ""}) {
    EXPECT_FALSE(QueryFlag(With(std::string("watch=") + no), "watch")) << no;
  }
  EXPECT_FALSE(QueryFlag(With(""), "watch"));
  EXPECT_TRUE(DryRun(With("dryRun=All")));
  EXPECT_FALSE(DryRun(With("")));
}

TEST(ApiCommonTest, TimeoutSecondsIsANumberHeldBetweenOneAndTheBound) {
  EXPECT_EQ(*TimeoutSeconds(With(""), 30, 60), 30);
  EXPECT_EQ(*TimeoutSeconds(With("timeoutSeconds=5"), 30, 60), 5);
  EXPECT_EQ(*TimeoutSeconds(With("timeoutSeconds=0"), 30, 60), 1);
  EXPECT_EQ(*TimeoutSeconds(With("timeoutSeconds=3600"), 30, 60), 60);
  // A number too long to read is refused, not wrapped.
  for (const char* bad : {"timeoutSeconds=", "timeoutSeconds=-1", "timeoutSeconds=5s",
                          "timeoutSeconds=99999999999999"}) {
    auto t = TimeoutSeconds(With(bad), 30, 60);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message(), "timeoutSeconds: must be a number of seconds");
  }
}

}  // namespace
}  // namespace tessera::server
