#include "api/pod_failure_policy.h"

#include <span>
#include <vector>

#include "api/fields.h"
#include "api/json_read.h"
#include "api/kube_fields.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr size_t kMaxRules = 20;          // Kubernetes' maxPodFailurePolicyRules
constexpr size_t kMaxExitCodes = 255;     // maxPodFailurePolicyOnExitCodesValues
constexpr size_t kMaxPodConditions = 20;  // maxPodFailurePolicyOnPodConditionsPatterns

// The fields of the policy's parts: every one acted on.
constexpr FieldUse kPolicyFields[] = {{"rules", ""}};
constexpr FieldUse kRuleFields[] = {{"action", ""}, {"onExitCodes", ""}, {"onPodConditions", ""}};
constexpr FieldUse kExitCodesFields[] = {{"containerName", ""}, {"operator", ""}, {"values", ""}};
constexpr FieldUse kConditionFields[] = {{"type", ""}, {"status", ""}};

// `obj` at `path` is an object of `known` fields only (KnownFields, which warns of none here).
Status ObjectOf(const json& obj, const std::string& path, std::span<const FieldUse> known) {
  if (!obj.is_object()) return FieldError(path, "must be an object");
  Warnings none;
  return KnownFields(obj, path, known, &none);
}

Status CheckExitCodes(const json& on, const std::string& path, const json& containers, json* out) {
  TESSERA_RETURN_IF_ERROR(ObjectOf(on, path, kExitCodesFields));
  if (on.contains("containerName") && !on["containerName"].is_null()) {
    const json& name = on["containerName"];
    bool found = false;
    for (const json& c : ListOf(containers)) found = found || Member(c, "name") == name;
    if (!name.is_string() || !found) {
      return FieldError(path + ".containerName",
                        "must be one of the container or initContainer names in the pod "
                        "template");
    }
  }
  const json& op = Member(on, "operator");
  if (op != "In" && op != "NotIn") {
    return FieldError(path + ".operator", "Unsupported value: supported values: \"In\", \"NotIn\"");
  }
  const json& values = Member(on, "values");
  if (!values.is_array() || values.empty()) {
    return FieldError(path + ".values", "Required value: at least one exit code");
  }
  if (values.size() > kMaxExitCodes) {
    return FieldError(path + ".values", "Too many: must have at most 255 items");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string at = Index(path + ".values", i);
    if (!values[i].is_number_integer()) return FieldError(at, "must be an integer");
    const int64_t v = values[i].get<int64_t>();
    if (v == 0 && op == "In") return FieldError(at, "must not be 0 for the In operator");
    if (i > 0 && v == values[i - 1].get<int64_t>()) return FieldError(at, "Duplicate value");
    if (i > 0 && v < values[i - 1].get<int64_t>()) return FieldError(at, "must be ordered");
  }
  *out = on;
  return Status::Ok();
}

Status CheckPodConditions(const json& on, const std::string& path, json* out) {
  if (!on.is_array() || on.empty()) return FieldError(path, "must list at least one condition");
  if (on.size() > kMaxPodConditions) {
    return FieldError(path, "Too many: must have at most 20 items");
  }
  *out = json::array();
  for (size_t i = 0; i < on.size(); ++i) {
    const std::string at = Index(path, i);
    TESSERA_RETURN_IF_ERROR(ObjectOf(on[i], at, kConditionFields));
    if (!Member(on[i], "type").is_string() || Str(on[i], "type").empty()) {
      return FieldError(at + ".type", "Required value");
    }
    const json status = on[i].contains("status") ? on[i]["status"] : json("True");
    if (status != "True" && status != "False" && status != "Unknown") {
      return FieldError(at + ".status",
                        "Unsupported value: supported values: \"True\", \"False\", \"Unknown\"");
    }
    out->push_back({{"type", on[i]["type"]}, {"status", status}});
  }
  return Status::Ok();
}

}  // namespace

Result<json> CheckPodFailurePolicy(const json& policy, const std::string& path,
                                   const json& containers, std::string_view restart_policy,
                                   const std::string& restart_path, bool per_index) {
  TESSERA_RETURN_IF_ERROR(ObjectOf(policy, path, kPolicyFields));
  if (restart_policy != "Never") {
    return FieldError(restart_path,
                      "Invalid value: \"" + std::string(restart_policy) +
                          "\": only \"Never\" is supported when podFailurePolicy is specified");
  }
  const json& rules = Member(policy, "rules");
  if (!rules.is_array()) return FieldError(path + ".rules", "must be a list");
  if (rules.size() > kMaxRules) {
    return FieldError(path + ".rules", "Too many: must have at most 20 items");
  }
  json out = json::array();
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string at = Index(path + ".rules", i);
    const json& r = rules[i];
    TESSERA_RETURN_IF_ERROR(ObjectOf(r, at, kRuleFields));
    const json& action = Member(r, "action");
    if (action != "FailJob" && action != "FailIndex" && action != "Ignore" && action != "Count") {
      return FieldError(at + ".action",
                        "Unsupported value: supported values: \"Count\", \"FailIndex\", "
                        "\"FailJob\", \"Ignore\"");
    }
    if (action == "FailIndex" && !per_index) {
      return FieldError(at + ".action",
                        "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be "
                        "set");
    }
    const bool codes = !Member(r, "onExitCodes").is_null();
    const bool conditions = !Member(r, "onPodConditions").is_null();
    if (codes == conditions) {
      return FieldError(at, codes ? "specifying both OnExitCodes and OnPodConditions is not "
                                    "supported"
                                  : "specifying one of OnExitCodes and OnPodConditions is "
                                    "required");
    }
    json rule = {{"action", action}};
    if (codes) {
      TESSERA_RETURN_IF_ERROR(
          CheckExitCodes(r["onExitCodes"], at + ".onExitCodes", containers, &rule["onExitCodes"]));
    } else {
      TESSERA_RETURN_IF_ERROR(CheckPodConditions(r["onPodConditions"], at + ".onPodConditions",
                                                 &rule["onPodConditions"]));
    }
    out.push_back(std::move(rule));
  }
  const json& first = ListOf(containers).empty() ? json() : ListOf(containers)[0];
  return json{{"container", Member(first, "name").is_string() ? Member(first, "name") : "main"},
              {"rules", std::move(out)}};
}

FailureVerdict JudgeFailure(const json& policy, int exit_code, std::string_view pod) {
  FailureVerdict v;
  if (exit_code == 0) return v;
  const std::string container = Str(policy, "container");
  const json& rules = Member(policy, "rules");
  for (size_t i = 0; i < ListOf(rules).size(); ++i) {
    const json& on = Member(rules[i], "onExitCodes");
    if (!on.is_object()) continue;  // pod conditions: never an exit's
    if (on.contains("containerName") && on["containerName"].is_string() &&
        on["containerName"] != container) {
      continue;
    }
    bool listed = false;
    for (const json& c : ListOf(Member(on, "values"))) listed = listed || c == exit_code;
    if (listed != (Member(on, "operator") == "In")) continue;
    v.action = Str(rules[i], "action");
    v.rule = static_cast<int>(i);
    v.message = "Container " + container + " for pod " + std::string(pod) +
                " failed with exit code " + std::to_string(exit_code) + " matching " + v.action +
                " rule at index " + std::to_string(i);
    return v;
  }
  return v;
}

}  // namespace tessera::api
