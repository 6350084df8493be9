#include "api/apply.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tessera::api {
namespace {

using nlohmann::json;

json Pod(const json& containers, const json& labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}, {"namespace", "default"}, {"labels", labels}}},
          {"spec", {{"containers", containers}}}};
}

TEST(ServerSideApply, FieldsAreLeavesAndKeyedItemsInFieldsV1) {
  json pod = Pod({{{"name", "main"}, {"image", "i"}, {"command", {"a", "b"}}}}, {{"app", "x"}});
  pod["metadata"]["uid"] = "u";
  pod["status"] = {{"phase", "Running"}};
  const FieldSet fields = FieldsOf(pod);
  // The server's metadata, apiVersion, kind and status are nobody's; a list without a merge
  // key (command) is one field; containers are items named by their key.
  const json expected = {{"f:metadata", {{"f:labels", {{"f:app", json::object()}}}}},
                         {"f:spec",
                          {{"f:containers",
                            {{"k:{\"name\":\"main\"}",
                              {{".", json::object()},
                               {"f:command", json::object()},
                               {"f:image", json::object()},
                               {"f:name", json::object()}}}}}}}};
  const json managed = ManagedFieldsJson({{"m", "Apply", "v1", "t", fields}});
  EXPECT_EQ(managed[0]["fieldsV1"], expected);
  EXPECT_EQ(managed[0]["fieldsType"], "FieldsV1");
  // And back.
  auto parsed = ParseManagedFields(managed);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].fields, fields);
  EXPECT_EQ((*parsed)[0].operation, "Apply");
}

TEST(ServerSideApply, MalformedManagedFieldsNameThePlace) {
  auto bad = ParseManagedFields(json::parse(R"([{"manager":"m","operation":"Replace"}])"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("metadata.managedFields[0].operation"), std::string::npos);
  bad = ParseManagedFields(json::parse(R"([{"manager":"m","fieldsV1":{"f:a":1}}])"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fieldsV1"), std::string::npos);
}

TEST(ServerSideApply, ApplyCreatesAndOwnsWhatItSets) {
  const json config = Pod({{{"name", "main"}, {"image", "i"}}});
  Applied a = Apply(json(), config, {}, "kubectl", "v1", "t1", false);
  ASSERT_TRUE(a.conflicts.empty());
  EXPECT_EQ(a.object, config);
  ASSERT_EQ(a.managed.size(), 1u);
  EXPECT_EQ(a.managed[0].manager, "kubectl");
  EXPECT_EQ(a.managed[0].fields, FieldsOf(config));
}

TEST(ServerSideApply, FieldsAppliedBeforeAndNoMoreAreRemoved) {
  // Kubernetes' TestApplyRemoveContainerPort: a port applied and then left out goes, and its
  // emptied list with it.
  const json first = Pod({{{"name", "main"}, {"ports", {{{"containerPort", 80}}}}}},
                         {{"app", "x"}, {"tier", "y"}});
  Applied a = Apply(json(), first, {}, "apply_test", "v1", "t1", false);
  const json second = Pod({{{"name", "main"}}}, {{"app", "x"}});
  Applied b = Apply(a.object, second, a.managed, "apply_test", "v1", "t2", false);
  ASSERT_TRUE(b.conflicts.empty());
  EXPECT_EQ(b.object, second);
  EXPECT_FALSE(b.object["spec"]["containers"][0].contains("ports"));
  EXPECT_EQ(b.object["metadata"]["labels"], json({{"app", "x"}}));
}

TEST(ServerSideApply, AFieldAnotherManagerChangedConflictsUntilForced) {
  // Kubernetes' TestApplyUpdateApplyConflictForced: apply, a merge patch by another manager,
  // the same apply again conflicts; forced, it takes the field back.
  json config = Pod({{{"name", "main"}, {"image", "nginx:latest"}}});
  Applied a = Apply(json(), config, {}, "apply_test", "v1", "t1", false);
  json patched = a.object;
  patched["spec"]["containers"][0]["image"] = "nginx:1.25";
  std::vector<ManagedEntry> managed =
      RecordUpdate(a.object, patched, a.managed, "kubectl-patch", "v1", "t2");
  ASSERT_EQ(managed.size(), 2u);
  Applied b = Apply(patched, config, managed, "apply_test", "v1", "t3", false);
  ASSERT_EQ(b.conflicts.size(), 1u);
  EXPECT_EQ(b.conflicts[0].manager, "kubectl-patch");
  EXPECT_EQ(b.conflicts[0].field, ".spec.containers[name=\"main\"].image");
  EXPECT_EQ(ConflictMessage(b.conflicts),
            "Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1: "
            ".spec.containers[name=\"main\"].image");
  Applied forced = Apply(patched, config, managed, "apply_test", "v1", "t3", true);
  ASSERT_TRUE(forced.conflicts.empty());
  EXPECT_EQ(forced.object["spec"]["containers"][0]["image"], "nginx:latest");
  // The patcher owned only the image: taken, it owns nothing and leaves the list.
  ASSERT_EQ(forced.managed.size(), 1u);
  EXPECT_EQ(forced.managed[0].manager, "apply_test");
}

TEST(ServerSideApply, TheSameValueIsSharedAndKeptWhileAnyOwnerHoldsIt) {
  // Kubernetes' TestApplyAlsoCreates: another manager applying the same body does not
  // conflict; both own the fields. One leaving a field out does not remove it.
  const json config = Pod({{{"name", "main"}, {"image", "i"}}}, {{"app", "x"}});
  Applied a = Apply(json(), config, {}, "apply_test", "v1", "t1", false);
  Applied b = Apply(a.object, config, a.managed, "apply_test_2", "v1", "t2", false);
  ASSERT_TRUE(b.conflicts.empty());
  ASSERT_EQ(b.managed.size(), 2u);
  const json fewer = Pod({{{"name", "main"}, {"image", "i"}}});
  Applied c = Apply(b.object, fewer, b.managed, "apply_test", "v1", "t3", false);
  EXPECT_EQ(c.object["metadata"]["labels"], json({{"app", "x"}}));
  // Once no one else holds it either, it goes.
  Applied d = Apply(c.object, fewer, c.managed, "apply_test_2", "v1", "t4", false);
  EXPECT_FALSE(d.object["metadata"].contains("labels"));
}

TEST(ServerSideApply, AnItemAnotherManagerAddedToStays) {
  const json config = Pod({{{"name", "main"}, {"image", "i"}}, {{"name", "side"}, {"image", "s"}}});
  Applied a = Apply(json(), config, {}, "apply_test", "v1", "t1", false);
  json changed = a.object;
  changed["spec"]["containers"][1]["env"] = {{{"name", "A"}, {"value", "1"}}};
  auto managed = RecordUpdate(a.object, changed, a.managed, "controller", "v1", "t2");
  // The applier drops "side": the controller's env keeps the item, without the applier's image.
  const json fewer = Pod({{{"name", "main"}, {"image", "i"}}});
  Applied b = Apply(changed, fewer, managed, "apply_test", "v1", "t3", false);
  ASSERT_TRUE(b.conflicts.empty());
  ASSERT_EQ(b.object["spec"]["containers"].size(), 2u);
  EXPECT_EQ(b.object["spec"]["containers"][1],
            json({{"name", "side"}, {"env", {{{"name", "A"}, {"value", "1"}}}}}));
}

TEST(ServerSideApply, UpdatesOwnWhatTheyChangeAndNoOneOwnsWhatIsGone) {
  // Kubernetes' TestApplyManagedFields: an applied label and data key, then a merge patch of
  // the key by "updater": the applier keeps the label, the updater owns the key.
  const json cm = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata", {{"name", "test-cm"}, {"labels", {{"test-label", "test"}}}}},
                   {"data", {{"key", "value"}}}};
  Applied a = Apply(json(), cm, {}, "apply_test", "v1", "t1", false);
  json patched = a.object;
  patched["data"]["key"] = "new value";
  auto managed = RecordUpdate(a.object, patched, a.managed, "updater", "v1", "t2");
  const json got = ManagedFieldsJson(managed);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["manager"], "apply_test");
  EXPECT_EQ(got[0]["operation"], "Apply");
  EXPECT_EQ(got[0]["fieldsV1"],
            json({{"f:metadata", {{"f:labels", {{"f:test-label", json::object()}}}}}}));
  EXPECT_EQ(got[1]["manager"], "updater");
  EXPECT_EQ(got[1]["operation"], "Update");
  EXPECT_EQ(got[1]["time"], "t2");
  EXPECT_EQ(got[1]["fieldsV1"], json({{"f:data", {{"f:key", json::object()}}}}));
  // A field removed by an update is no one's.
  json less = patched;
  less["metadata"].erase("labels");
  managed = RecordUpdate(patched, less, managed, "updater", "v1", "t3");
  ASSERT_EQ(managed.size(), 1u);
  EXPECT_EQ(managed[0].manager, "updater");
  // An update that changes nothing records nothing.
  EXPECT_EQ(RecordUpdate(less, less, managed, "other", "v1", "t4").size(), 1u);
}

TEST(ServerSideApply, AnApplyThatChangesNothingKeepsItsEntry) {
  const json config = Pod({{{"name", "main"}, {"image", "i"}}});
  Applied a = Apply(json(), config, {}, "kubectl", "v1", "t1", false);
  Applied b = Apply(a.object, config, a.managed, "kubectl", "v1", "t2", false);
  EXPECT_EQ(b.object, a.object);
  EXPECT_EQ(b.managed[0].time, "t1");
}

TEST(ServerSideApply, BodiesAndManagers) {
  auto yaml = ParseApplyConfiguration("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n");
  ASSERT_TRUE(yaml.ok());
  EXPECT_EQ((*yaml)["metadata"]["name"], "p");
  EXPECT_TRUE(ParseApplyConfiguration(R"({"kind":"Pod"})").ok());
  EXPECT_FALSE(ParseApplyConfiguration("[1]").ok());
  EXPECT_FALSE(ParseApplyConfiguration("a: 1\n---\nb: 2\n").ok());
  EXPECT_EQ(DefaultManager("kubectl/v1.32.0 (linux/amd64)"), "kubectl");
  EXPECT_EQ(DefaultManager("OpenAPI-Generator/22.6.0/python"), "OpenAPI-Generator");
  EXPECT_EQ(DefaultManager(""), "unknown");
  EXPECT_TRUE(ValidateManager("kubectl").ok());
  EXPECT_FALSE(ValidateManager("").ok());
  EXPECT_FALSE(ValidateManager(std::string(129, 'a')).ok());
}

}  // namespace
}  // namespace tessera::api
