// Kubernetes' Job podFailurePolicy. The matching cases are ported from Kubernetes'
// pkg/controller/job/pod_failure_policy_test.go (TestMatchPodFailurePolicy, each named by its
// case there); the validation cases from pkg/apis/batch/validation/validation_test.go
// (TestValidateJob's podFailurePolicy errors), with Tessera's field paths.
#include "api/pod_failure_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::api {
namespace {

using nlohmann::json;

const json kContainers = json::array({{{"name", "main-container"}}});

json Checked(const std::vector<json>& rules, bool per_index = true) {
  auto p = CheckPodFailurePolicy({{"rules", json(rules)}}, "spec.podFailurePolicy", kContainers,
                                 "Never", "spec.template.spec.restartPolicy", per_index);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : json();
}

json ExitRule(const std::string& action, const std::string& op, const json& values) {
  return {{"action", action}, {"onExitCodes", {{"operator", op}, {"values", values}}}};
}

json DisruptionRule(const std::string& action, const std::string& status = "True") {
  return {{"action", action},
          {"onPodConditions", json::array({{{"type", "DisruptionTarget"}, {"status", status}}})}};
}

// "FailJob rule matched for exit codes"
TEST(PodFailurePolicy, FailJobRuleMatchedForExitCodes) {
  const FailureVerdict v =
      JudgeFailure(Checked({ExitRule("FailJob", "In", {1, 2, 3})}), 2, "default/mypod");
  EXPECT_EQ(v.action, "FailJob");
  EXPECT_EQ(v.message,
            "Container main-container for pod default/mypod failed with exit code 2 matching "
            "FailJob rule at index 0");
}

// "second jobfail rule matched for exit codes"
TEST(PodFailurePolicy, SecondFailJobRuleMatchedForExitCodes) {
  const json p =
      Checked({ExitRule("Count", "In", {1, 2, 3}), ExitRule("FailJob", "In", {4, 5, 6})});
  const FailureVerdict v = JudgeFailure(p, 6, "default/mypod");
  EXPECT_EQ(v.action, "FailJob");
  EXPECT_EQ(v.rule, 1);
  EXPECT_EQ(v.message,
            "Container main-container for pod default/mypod failed with exit code 6 matching "
            "FailJob rule at index 1");
}

// "pod failure policy with NotIn operator and value 0"
TEST(PodFailurePolicy, NotInZeroMatchesEveryFailure) {
  const FailureVerdict v =
      JudgeFailure(Checked({ExitRule("FailJob", "NotIn", {0})}), 1, "default/mypod");
  EXPECT_EQ(v.action, "FailJob");
}

// "ignore rule matched for exit codes", "count rule matched for exit codes", "FailIndex rule
// matched for exit codes", "no policy rules"
TEST(PodFailurePolicy, IgnoreCountAndFailIndexRules) {
  EXPECT_EQ(JudgeFailure(Checked({ExitRule("Ignore", "In", {1, 2, 3})}), 2, "d/p").action,
            "Ignore");
  const FailureVerdict count =
      JudgeFailure(Checked({ExitRule("Count", "In", {1, 2, 3})}), 2, "d/p");
  EXPECT_EQ(count.action, "Count");
  EXPECT_EQ(count.rule, 0);
  EXPECT_EQ(JudgeFailure(Checked({ExitRule("FailIndex", "In", {1, 2, 3})}), 2, "d/p").action,
            "FailIndex");
  const FailureVerdict none = JudgeFailure(json(), 2, "d/p");
  EXPECT_EQ(none.action, "Count");
  EXPECT_EQ(none.rule, -1);
}

// "successful containers are skipped by the rules"; an exit code outside every rule counts.
TEST(PodFailurePolicy, SuccessAndUnlistedCodesAreNotMatched) {
  const json p = Checked({ExitRule("FailJob", "NotIn", {111})});
  EXPECT_EQ(JudgeFailure(p, 0, "d/p").action, "Count");
  EXPECT_EQ(JudgeFailure(p, 111, "d/p").action, "Count");
  EXPECT_EQ(JudgeFailure(Checked({ExitRule("FailJob", "In", {42})}), 1, "d/p").rule, -1);
}

// "ignore rule matched for pod conditions" and its kin: a disruption is not an exit here (the
// Job goes back to its queue uncounted), so a condition rule never decides an exit; the rules
// after it still do.
TEST(PodFailurePolicy, PodConditionRulesNeverMatchAnExit) {
  const json p = Checked({DisruptionRule("Ignore"), DisruptionRule("Ignore", "False"),
                          ExitRule("FailJob", "In", {42})});
  EXPECT_EQ(p["rules"][0]["onPodConditions"][0]["status"], "True");
  EXPECT_EQ(JudgeFailure(p, 1, "d/p").action, "Count");
  const FailureVerdict v = JudgeFailure(p, 42, "d/p");
  EXPECT_EQ(v.action, "FailJob");
  EXPECT_EQ(v.rule, 2);
}

// A rule for another container (one that is not run) never matches; one for the run container
// does.
TEST(PodFailurePolicy, ContainerNameSelectsTheContainer) {
  const json two = json::array({{{"name", "main-container"}}, {{"name", "sidecar"}}});
  json rule = ExitRule("FailJob", "In", {42});
  rule["onExitCodes"]["containerName"] = "sidecar";
  auto p = CheckPodFailurePolicy({{"rules", {rule}}}, "spec.podFailurePolicy", two, "Never",
                                 "spec.template.spec.restartPolicy", false);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)["container"], "main-container");
  EXPECT_EQ(JudgeFailure(*p, 42, "d/p").action, "Count");
  rule["onExitCodes"]["containerName"] = "main-container";
  p = CheckPodFailurePolicy({{"rules", {rule}}}, "spec.podFailurePolicy", two, "Never",
                            "spec.template.spec.restartPolicy", false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(JudgeFailure(*p, 42, "d/p").action, "FailJob");
}

// The validation errors of Kubernetes' TestValidateJob, with the field each names.
TEST(PodFailurePolicy, ValidationAsKubernetes) {
  struct Case {
    const char* name;
    json rules;
    std::string restart = "Never";
    bool per_index = true;
    std::string field;
    std::string says;
  };
  json other_container = ExitRule("FailJob", "In", {1});
  other_container["onExitCodes"]["containerName"] = "nope";
  json both = ExitRule("FailJob", "In", {1});
  both["onPodConditions"] = json::array({{{"type", "DisruptionTarget"}}});
  json too_many = json::array();
  for (int i = 0; i < 21; ++i) too_many.push_back(ExitRule("Count", "In", {i + 1}));
  const Case cases[] = {
      {"restartPolicy OnFailure", json::array({ExitRule("FailJob", "In", {1})}), "OnFailure", true,
       "spec.template.spec.restartPolicy", "only \"Never\" is supported"},
      {"value 0 with In", json::array({ExitRule("FailJob", "In", {0, 1})}), "Never", true,
       "spec.podFailurePolicy.rules[0].onExitCodes.values[0]", "must not be 0 for the In"},
      {"duplicate values", json::array({ExitRule("FailJob", "In", {1, 1})}), "Never", true,
       "spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "Duplicate value"},
      {"unordered values", json::array({ExitRule("FailJob", "In", {2, 1})}), "Never", true,
       "spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "must be ordered"},
      {"unknown operator", json::array({ExitRule("FailJob", "Between", {1})}), "Never", true,
       "spec.podFailurePolicy.rules[0].onExitCodes.operator", "Unsupported value"},
      {"unknown action", json::array({ExitRule("Retry", "In", {1})}), "Never", true,
       "spec.podFailurePolicy.rules[0].action", "Unsupported value"},
      {"FailIndex without backoffLimitPerIndex", json::array({ExitRule("FailIndex", "In", {1})}),
       "Never", false, "spec.podFailurePolicy.rules[0].action",
       "requires the backoffLimitPerIndex"},
      {"both requirements", json::array({both}), "Never", true, "spec.podFailurePolicy.rules[0]",
       "specifying both OnExitCodes and OnPodConditions is not supported"},
      {"no requirement", json::array({{{"action", "FailJob"}}}), "Never", true,
       "spec.podFailurePolicy.rules[0]", "specifying one of OnExitCodes and OnPodConditions"},
      {"container not in the template", json::array({other_container}), "Never", true,
       "spec.podFailurePolicy.rules[0].onExitCodes.containerName", "must be one of the container"},
      {"too many rules", too_many, "Never", true, "spec.podFailurePolicy.rules",
       "must have at most 20 items"},
  };
  for (const Case& c : cases) {
    auto p = CheckPodFailurePolicy({{"rules", c.rules}}, "spec.podFailurePolicy", kContainers,
                                   c.restart, "spec.template.spec.restartPolicy", c.per_index);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.status().message().rfind(c.field + ": ", 0), 0u)
        << c.name << ": " << p.status().message();
    EXPECT_NE(p.status().message().find(c.says), std::string::npos)
        << c.name << ": " << p.status().message();
  }
}

}  // namespace
}  // namespace tessera::api
