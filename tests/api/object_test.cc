#include "api/object.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace tessera::api {
namespace {

using nlohmann::json;

bool Match(const std::string& selector, const json& labels) {
  auto sel = LabelSelector::Parse(selector);
  EXPECT_TRUE(sel.ok()) << selector << ": " << sel.status().message();
  return sel.ok() && sel->Matches(labels);
}

// Cases of k8s.io/apimachinery/pkg/labels/selector_test.go (TestSelectorMatches,
// TestSetSelectorParser): equality- and set-based terms as kubectl sends them.
TEST(LabelSelector, MatchesAsKubernetesParsesThem) {
  const json labels = {{"x", "y"}, {"z", "w"}};
  EXPECT_TRUE(Match("", labels));
  EXPECT_TRUE(Match("x=y", labels));
  EXPECT_TRUE(Match("x=y,z=w", labels));
  EXPECT_TRUE(Match("x!=z", labels));
  EXPECT_FALSE(Match("x=z", labels));
  EXPECT_FALSE(Match("x=y,z=x", labels));
  EXPECT_TRUE(Match("x in (y,z)", labels));
  EXPECT_TRUE(Match("x in(y)", labels));
  EXPECT_TRUE(Match("x  in ( y , z )", labels));
  EXPECT_FALSE(Match("x in (z)", labels));
  EXPECT_TRUE(Match("x notin (z)", labels));
  EXPECT_FALSE(Match("x notin (y,z)", labels));
  EXPECT_TRUE(Match("x in (y,z),z=w", labels));
  EXPECT_TRUE(Match("z,!q", labels));
  EXPECT_TRUE(Match("q notin (a)", labels));  // absent: NotIn holds
  EXPECT_FALSE(Match("q in (a)", labels));
  // test/cmd/core.sh deletes pods by -l'name in (valid-pod)'.
  EXPECT_TRUE(Match("name in (valid-pod)", json{{"name", "valid-pod"}}));
}

TEST(LabelSelector, BadSelectorsNameTheTerm) {
  for (const char* bad : {"x in y", "x in (y", "x between (y)", "x in (a/b)", "x=y,,z=w"}) {
    auto sel = LabelSelector::Parse(bad);
    ASSERT_FALSE(sel.ok()) << bad;
    EXPECT_NE(sel.status().message().find("labelSelector"), std::string::npos)
        << sel.status().message();
  }
}

}  // namespace
}  // namespace tessera::api
