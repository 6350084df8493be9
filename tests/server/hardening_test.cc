// What a hostile or careless client, or a bad stored object, can do to the control plane: every
// case answers with a 4xx naming the field, or is skipped and reported, and the server goes on.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "api/json_text.h"
#include "server/api_server.h"
#include "server/loop_fixture.h"
#include "server/scheduling_loop.h"
#include "server/test_store.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// The loop's fixture, plus requests with any method, body and token.
class HardeningTest : public LoopTest {
 protected:
  // Job "train" (one task of one GPU) applied, and placed by a cycle on node n1.
  void PlaceTrainOnN1() {
    Apply(R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: train}
spec:
  tasks: [{name: main, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
    Cycle();
    ASSERT_EQ(Job("train")["status"]["pods"][0]["node"], "n1");
  }
  HttpResponse Call(const std::string& method, const std::string& path, const std::string& body,
                    const std::string& content_type = "application/json",
                    const std::string& token = "") {
    HttpRequest r;
    r.method = method;
    r.path = path.substr(0, path.find('?'));
    if (path.find('?') != std::string::npos) {
      EXPECT_TRUE(ParseQuery(path.substr(path.find('?') + 1), &r.query)) << path;
    }
    r.authorization = "Bearer " + (token.empty() ? admin_ : token);
    r.content_type = content_type;
    r.body = body;
    return api_->Handle(r);
  }
  // The response's message, checked to be a Status that can be parsed (so it is UTF-8).
  std::string Refusal(const HttpResponse& out) {
    const json body = json::parse(out.body, nullptr, false);
    EXPECT_TRUE(body.is_object()) << out.body;
    return body.is_object() ? body.value("message", "") : "";
  }
};

constexpr char kJob[] = R"({"apiVersion": "tessera.io/v1", "kind": "Job",
  "metadata": {"name": "j", "namespace": "team-a"},
  "spec": {"tasks": [{"name": "main", "command": ["true"], "replicas": REPLICAS}]}})";

std::string JobWith(const std::string& replicas) {
  std::string s = kJob;
  s.replace(s.find("REPLICAS"), 8, replicas);
  return s;
}

TEST_F(HardeningTest, BodiesThatUsedToAbortTheServerGetA400NamingTheField) {
  struct Case {
    std::string body, content_type, expect;
  };
  const std::vector<Case> cases = {
      {JobWith("1e400"), "application/json", "spec.tasks[0].replicas: number out of range"},
      {JobWith(std::string(5000, '7')), "application/json", "replicas: number out of range"},
      {R"({"x": 1e400})", "application/json", "x: number out of range"},
      {"{\"apiVersion\": \"tessera.io/v1\", \"kind\": \"Job\", \"metadata\": {\"name\": "
       "\"j\xff\"}}",
       "application/json", "malformed JSON"},
      {"apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: \"\xff\xfe\"}\n", "application/yaml",
       "not UTF-8"},
      {R"({"apiVersion": "tessera.io/v1", "kind": "Job", "kind": "Queue"})", "application/json",
       "kind: duplicate key"},
  };
  for (const Case& c : cases) {
    for (const std::string& path : {std::string("/apis/tessera.io/v1/apply"),
                                    std::string("/apis/tessera.io/v1/namespaces/team-a/jobs")}) {
      if (c.content_type != "application/json" && path != "/apis/tessera.io/v1/apply") continue;
      HttpResponse out = Call("POST", path, c.body, c.content_type);
      EXPECT_EQ(out.status, 400) << path << " " << out.body;
      const std::string msg = Refusal(out);
      EXPECT_NE(msg.find(c.expect), std::string::npos) << path << ": " << msg;
      EXPECT_TRUE(api::ValidUtf8(out.body));
    }
  }
  // Nothing was written, and the server still serves.
  EXPECT_EQ(Call("GET", "/apis/tessera.io/v1/jobs", "").status, 200);
  EXPECT_EQ(json::parse(Call("GET", "/apis/tessera.io/v1/jobs", "").body)["items"].size(), 0u);
}

TEST_F(HardeningTest, InvalidUtf8InPathsAndQueriesIsEchoedSafely) {
  // The HTTP layer refuses these before the handler; the handler is safe on its own too.
  HttpResponse out = Call("GET", "/apis/tessera.io/v1/\xff", "");
  EXPECT_EQ(out.status, 404);
  EXPECT_TRUE(api::ValidUtf8(out.body)) << out.body;
  out = Call("GET", "/apis/tessera.io/v1/namespaces/\xff\xfe/jobs", "");
  EXPECT_EQ(out.status, 400);
  EXPECT_TRUE(api::ValidUtf8(out.body));
  out = Call("GET", "/apis/tessera.io/v1/jobs?labelSelector=a%3D%FF", "");
  EXPECT_EQ(out.status, 400);
  EXPECT_TRUE(api::ValidUtf8(out.body));
  out = Call("GET", "/apis/tessera.io/v1/usage?by=%FF", "");
  EXPECT_EQ(out.status, 400);
  EXPECT_TRUE(api::ValidUtf8(out.body));
  EXPECT_EQ(StatusJson(400, "x\xff", "y\xfe").find('\xff'), std::string::npos);
}

TEST_F(HardeningTest, StatusIsValidatedOnEveryWriteByEveryPrincipal) {
  ASSERT_EQ(Call("POST", "/apis/tessera.io/v1/apply", JobWith("1")).status, 200);
  json job = json::parse(Call("GET", "/apis/tessera.io/v1/namespaces/team-a/jobs/j", "").body);
  struct Case {
    json status;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"priority", "high"}}, "status.priority"},
      {{{"queue", 7}}, "status.queue"},
      {{{"admittedAt", 5}}, "status.admittedAt"},
      {{{"phase", "Admitted"}, {"pods", {{{"name", "main-0"}, {"node", 5}}}}},
       "status.pods[0].node"},
      {{{"pods",
         {{{"name", "p"}, {"node", "n"}, {"devices", {{{"gpu", 99}, {"kind", "whole"}}}}}}}},
       "status.pods[0].devices[0].gpu"},
      {{{"phase", "Exploded"}}, "status.phase"},
      {{{"surprise", 1}}, "status.surprise"},
      {"text", "status"},
  };
  for (const Case& c : cases) {
    json put = job;
    put["status"] = c.status;
    put["metadata"].erase("resourceVersion");
    HttpResponse out = Call("PUT", "/apis/tessera.io/v1/namespaces/team-a/jobs/j", put.dump());
    EXPECT_EQ(out.status, 400) << c.status.dump() << " " << out.body;
    EXPECT_NE(Refusal(out).find(c.field + ":"), std::string::npos) << Refusal(out);
  }
  // A well-formed status from the admin (as an agent writes it) is accepted.
  json put = job;
  put["status"] = {{"phase", "Failed"}, {"message", "stopped"}, {"finishedAt", nullptr}};
  EXPECT_EQ(Call("PUT", "/apis/tessera.io/v1/namespaces/team-a/jobs/j", put.dump()).status, 200);
}

TEST_F(HardeningTest, AWronglyTypedStoredStatusIsSkippedAndReportedAcrossRestarts) {
  ASSERT_EQ(Call("POST", "/apis/tessera.io/v1/apply", R"(
apiVersion: tessera.io/v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 64Gi}
  gpus: [{index: 0, uuid: GPU-0, model: A100-80GB, memoryMiB: 81920}]
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: good, namespace: team-a}
spec:
  tasks: [{name: main, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)",
                 "application/yaml")
                .status,
            200);
  // Objects written past the API's checks (an older version, a hand-edited database).
  const std::vector<std::string> statuses = {
      R"({"phase": "Admitted", "priority": "high"})", R"({"phase": "Admitted", "queue": 7})",
      R"({"phase": "Admitted", "admittedAt": 5})",
      R"({"phase": "Admitted", "pods": [{"node": 5}]})", R"("not an object")"};
  std::vector<store::Write> writes;
  for (size_t i = 0; i < statuses.size(); ++i) {
    const std::string name = "bad-" + std::to_string(i);
    json obj = json::parse(JobWith("1"));
    obj["metadata"]["name"] = name;
    obj["status"] = json::parse(statuses[i]);
    writes.push_back({store::Write::Op::kPut, {"Job", "team-a", name}, obj.dump(), {}});
  }
  writes.push_back({store::Write::Op::kPut,
                    {"Job", "team-a", "no-meta"},
                    R"({"apiVersion": "tessera.io/v1", "kind": "Job", "metadata": 3})",
                    {}});
  ASSERT_TRUE(plane_->Commit(writes).ok());

  for (int restart = 0; restart < 2; ++restart) {
    Cycle();
    Cycle();
    const json good =
        json::parse(Call("GET", "/apis/tessera.io/v1/namespaces/team-a/jobs/good", "").body);
    EXPECT_EQ(good["status"]["phase"], "Admitted") << good.dump();
    const std::string metrics = Metrics();
    for (size_t i = 0; i < statuses.size(); ++i) {
      EXPECT_NE(metrics.find("tessera_undecodable_objects{kind=\"Job\",name=\"bad-" +
                             std::to_string(i) + "\",namespace=\"team-a\"} 1"),
                std::string::npos)
          << metrics.substr(0, 200);
    }
    Open();  // a restart reads the same store
  }
  // One Warning event per object and version, naming the field.
  const json events =
      json::parse(Call("GET", "/apis/tessera.io/v1/namespaces/team-a/events", "").body);
  int undecodable = 0;
  for (const json& e : events["items"]) {
    if (e["spec"]["reason"] != "Undecodable") continue;
    ++undecodable;
    if (e["spec"]["involvedObject"]["name"] == "bad-0") {
      EXPECT_NE(e["spec"]["message"].get<std::string>().find("status.priority"), std::string::npos);
    }
  }
  // Reported once per version: the restart reports again (the loop's memory is gone).
  EXPECT_EQ(undecodable, 2 * static_cast<int>(statuses.size()));
  // Deleting a bad object clears its series.
  ASSERT_EQ(Call("DELETE", "/apis/tessera.io/v1/namespaces/team-a/jobs/bad-0", "").status, 200);
  Cycle();
  EXPECT_EQ(Metrics().find("name=\"bad-0\""), std::string::npos);
}

// A watch whose After finds nothing, then a commit that lands before it subscribes: the old
// code called the watch back from Subscribe while it held its own lock and hung the I/O thread
// for good. The feed's test seam lands the commit at exactly that point.
TEST_F(HardeningTest, ACommitBetweenAWatchReadAndItsSubscribeDoesNotDeadlock) {
  const std::string rv = std::to_string(plane_->store().Revision());
  HttpResponse watch =
      Call("GET", "/apis/tessera.io/v1/namespaces/team-a/jobs?watch=1&resourceVersion=" + rv, "");
  ASSERT_TRUE(watch.stream) << watch.body;
  int hooks = 0;
  plane_->feed().set_before_subscribe_for_test([&] {
    if (++hooks != 1) return;
    // Another namespace's write: not for this watch, so it must subscribe again.
    json other = json::parse(JobWith("1"));
    other["metadata"]["namespace"] = "team-b";
    ASSERT_EQ(Call("POST", "/apis/tessera.io/v1/namespaces/team-b/jobs", other.dump()).status, 201);
  });
  std::promise<std::optional<std::string>> first;
  auto got = first.get_future();
  std::thread reader([&] {
    watch.stream->Next([&](std::optional<std::string> chunk) { first.set_value(chunk); });
  });
  // The reader returns at once (subscribed, nothing to say); a hang is the deadlock.
  std::promise<void> joined;
  auto done = joined.get_future();
  std::thread joiner([&] {
    reader.join();
    joined.set_value();
  });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "WatchStream::Next deadlocked";
    std::fflush(stdout);
    std::_Exit(1);
  }
  joiner.join();
  EXPECT_EQ(hooks, 2);  // subscribed a second time, after skipping team-b's change
  EXPECT_EQ(got.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  // This watch's namespace: the registered wake-up delivers it.
  plane_->feed().set_before_subscribe_for_test(nullptr);
  ASSERT_EQ(Call("POST", "/apis/tessera.io/v1/namespaces/team-a/jobs", JobWith("1")).status, 201);
  ASSERT_EQ(got.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const std::optional<std::string> chunk = got.get();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_NE(chunk->find("\"type\":\"ADDED\""), std::string::npos) << *chunk;
  EXPECT_NE(chunk->find("\"namespace\":\"team-a\""), std::string::npos) << *chunk;
  EXPECT_EQ(chunk->find("team-b"), std::string::npos) << *chunk;
  watch.stream->Cancel();
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

TEST_F(HardeningTest, AnAgentsHeartbeatIsTimedByTheServerAndItsFenceDelaysRebinding) {
  const HttpResponse minted =
      Call("POST", "/apis/tessera.io/v1/tokens", R"({"role": "agent", "node": "n1"})");
  ASSERT_EQ(minted.status, 201) << minted.body;
  const std::string agent = json::parse(minted.body).value("token", "");
  // The agent's clock is a year behind: the server's clock times the beat all the same.
  json node = OneGpuNode("n1");
  node["status"]["fenceSeconds"] = 60;
  ASSERT_EQ(
      Call("POST", "/apis/tessera.io/v1/nodes", node.dump(), "application/json", agent).status,
      201);
  const int64_t beat = now_;
  EXPECT_EQ(Get("/apis/tessera.io/v1/nodes/n1")["status"]["heartbeat"], FormatTime(beat));
  // A job lands on the node.
  ASSERT_NO_FATAL_FAILURE(PlaceTrainOnN1());
  // Past the 40 s grace but within fenceSeconds + margin, the node is still Ready: its agent may
  // not have stopped the pod yet.
  now_ += 45'000;
  Cycle();
  EXPECT_EQ(Job("train")["status"]["phase"], "Admitted");
  now_ = beat + 60'000 + kFenceMarginMs - 1'000;
  Cycle();  // exactly fenceSeconds + margin since the beat: not yet
  EXPECT_EQ(Job("train")["status"]["phase"], "Admitted");
  Cycle();
  EXPECT_EQ(Job("train")["status"]["phase"], "Pending");
  // fenceSeconds is typed like any status field.
  node["status"]["fenceSeconds"] = "soon";
  node["metadata"]["resourceVersion"] =
      Get("/apis/tessera.io/v1/nodes/n1")["metadata"]["resourceVersion"];
  const HttpResponse bad =
      Call("PUT", "/apis/tessera.io/v1/nodes/n1", node.dump(), "application/json", agent);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(Refusal(bad).find("status.fenceSeconds"), std::string::npos) << bad.body;
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// Kubernetes' node leases: beats renew a small Lease instead of rewriting the Node. The server
// stamps the renewal with its own clock, only the node's agent renews it, a renewal does not
// change the Node, and a node whose Lease is renewed stays Ready however old its Node's own
// heartbeat; once the Lease is older than the grace too, its work is scheduled again.
TEST_F(HardeningTest, ANodesLeaseKeepsItReadyWithoutTouchingTheNode) {
  auto mint = [&](const std::string& node) {
    const HttpResponse minted = Call("POST", "/apis/tessera.io/v1/tokens",
                                     R"({"role": "agent", "node": ")" + node + R"("})");
    EXPECT_EQ(minted.status, 201) << minted.body;
    return json::parse(minted.body).value("token", "");
  };
  const std::string agent = mint("n1"), other = mint("n2");
  const json node = OneGpuNode("n1");
  ASSERT_EQ(
      Call("POST", "/apis/tessera.io/v1/nodes", node.dump(), "application/json", agent).status,
      201);
  const std::string node_version =
      Get("/apis/tessera.io/v1/nodes/n1")["metadata"]["resourceVersion"];
  const json lease = {{"apiVersion", "tessera.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", "n1"}}},
                      {"spec", {{"renewTime", "2020-01-01T00:00:00Z"}}}};
  const auto renew = [&](const std::string& token) {
    return Call("PUT", "/apis/tessera.io/v1/leases/n1", lease.dump(), "application/json", token)
        .status;
  };
  EXPECT_EQ(
      Call("POST", "/apis/tessera.io/v1/leases", lease.dump(), "application/json", other).status,
      403);
  ASSERT_EQ(
      Call("POST", "/apis/tessera.io/v1/leases", lease.dump(), "application/json", agent).status,
      201);
  json got = Get("/apis/tessera.io/v1/leases/n1");
  EXPECT_EQ(got["spec"]["renewTime"], FormatTime(now_)) << "stamped by the server's clock";
  EXPECT_EQ(got["spec"]["holderIdentity"], "n1");
  EXPECT_EQ(renew(other), 403);
  EXPECT_EQ(Call("DELETE", "/apis/tessera.io/v1/leases/n1", "", "", agent).status, 403);

  ASSERT_NO_FATAL_FAILURE(PlaceTrainOnN1());
  // Renewed every 30 s for two minutes: Ready throughout, the Node untouched.
  int64_t renewed = 0;
  for (int i = 0; i < 4; ++i) {
    now_ += 30'000;
    ASSERT_EQ(renew(agent), 200);
    renewed = now_;
    Cycle();
    EXPECT_EQ(Job("train")["status"]["phase"], "Admitted");
  }
  EXPECT_EQ(Get("/apis/tessera.io/v1/nodes/n1")["metadata"]["resourceVersion"], node_version);
  // kubectl's view of the node says when its agent last reported: the Lease's renewal.
  EXPECT_EQ(Get("/api/v1/nodes/n1")["status"]["conditions"][0]["lastHeartbeatTime"],
            FormatTime(renewed));
  // The renewals stop: past the 40 s grace the node is NotReady and the job waits again.
  now_ += 41'000;
  Cycle();
  EXPECT_EQ(Job("train")["status"]["phase"], "Pending");
}

// Renewals are held in memory (server/lease_book.h): while the stored Lease is less than 60 s
// old a renewal writes nothing and is served all the same; the store gets one a minute; a
// renewal that changes more than its time, or names a stale version, goes to the store; and a
// restart, which loses the renewals held in memory, does not declare the node dead early.
TEST_F(HardeningTest, LeaseRenewalsAreHeldInMemoryAndARestartDoesNotDeclareTheNodeDeadEarly) {
  const HttpResponse minted =
      Call("POST", "/apis/tessera.io/v1/tokens", R"({"role": "agent", "node": "n1"})");
  ASSERT_EQ(minted.status, 201) << minted.body;
  const std::string agent = json::parse(minted.body).value("token", "");
  ASSERT_EQ(
      Call("POST", "/apis/tessera.io/v1/nodes", OneGpuNode("n1").dump(), "application/json", agent)
          .status,
      201);
  json lease = {{"apiVersion", "tessera.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", "n1"}}},
                {"spec", {{"holderIdentity", "n1"}}}};
  ASSERT_EQ(
      Call("POST", "/apis/tessera.io/v1/leases", lease.dump(), "application/json", agent).status,
      201);
  const int64_t t0 = now_;
  ASSERT_NO_FATAL_FAILURE(PlaceTrainOnN1());
  auto renew = [&](const json& body) {
    return Call("PUT", "/apis/tessera.io/v1/leases/n1", body.dump(), "application/json", agent);
  };
  auto stored_renewal = [&] {
    auto got = plane_->store().Get({"Lease", "", "n1"});
    return got.ok() && got->has_value() ? json::parse((*got)->body)["spec"]["renewTime"] : json();
  };
  const json created = Get("/apis/tessera.io/v1/leases/n1");
  // Replicas on etcd share their renewals through the store: each is written there instead.
  const bool held = !TestsOnEtcd();
  int64_t renewed = 0;
  for (int i = 1; i <= 11; ++i) {
    now_ = t0 + i * 5'000;
    const int64_t before = plane_->store().Revision();
    const HttpResponse r = renew(lease);
    ASSERT_EQ(r.status, 200) << r.body;
    const json served = json::parse(r.body);
    EXPECT_EQ(served["spec"]["renewTime"], FormatTime(now_));
    // Served as the stored Lease is: its version, uid and creation time.
    for (const char* k : {"resourceVersion", "uid", "creationTimestamp"}) {
      if (held || std::string(k) != "resourceVersion") {
        EXPECT_EQ(served["metadata"][k], created["metadata"][k]) << k;
      }
    }
    if (held) {
      EXPECT_EQ(plane_->store().Revision(), before) << "renewal " << i << " was written";
    } else {
      EXPECT_GT(plane_->store().Revision(), before) << "renewal " << i << " was not written";
    }
    renewed = now_;
    Cycle();
    EXPECT_EQ(Job("train")["status"]["phase"], "Admitted") << "after renewal " << i;
  }
  EXPECT_EQ(stored_renewal(), FormatTime(held ? t0 : renewed));
  EXPECT_EQ(Get("/apis/tessera.io/v1/leases/n1")["spec"]["renewTime"], FormatTime(renewed));
  EXPECT_EQ(Get("/api/v1/nodes/n1")["status"]["conditions"][0]["lastHeartbeatTime"],
            FormatTime(renewed));
  // A minute after the stored renewal, the next is written.
  now_ = t0 + 60'000;
  int64_t before = plane_->store().Revision();
  ASSERT_EQ(renew(lease).status, 200);
  EXPECT_EQ(plane_->store().Revision(), before + 1);
  EXPECT_EQ(stored_renewal(), FormatTime(now_));
  // More than the time changes, or the version named is stale: the store decides.
  json labelled = lease;
  labelled["metadata"]["labels"] = {{"rack", "r1"}};
  now_ = t0 + 62'000;
  before = plane_->store().Revision();
  ASSERT_EQ(renew(labelled).status, 200);
  EXPECT_EQ(plane_->store().Revision(), before + 1);
  json stale = labelled;
  stale["metadata"]["resourceVersion"] = "1";
  EXPECT_EQ(renew(stale).status, 409);
  // Held in memory again, up to t0 + 70 s; then the server restarts and knows none of them.
  now_ = t0 + 70'000;
  before = plane_->store().Revision();
  ASSERT_EQ(renew(labelled).status, 200);
  EXPECT_EQ(plane_->store().Revision(), held ? before : before + 1);
  Open();
  // The stored renewal (t0 + 62 s) is 40 s old at t0 + 102 s, but renewals may have been held
  // until the restart (t0 + 70 s): the node is Ready until 40 s after that.
  now_ = t0 + 109'000;
  Cycle();
  EXPECT_EQ(Job("train")["status"]["phase"], "Admitted") << Job("train").dump();
  now_ = t0 + 111'000;
  Cycle();
  EXPECT_EQ(Job("train")["status"]["phase"], "Pending");
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// A subscription for one kind sleeps through the commits of others (1,000 agents' watches of
// Jobs through their nodes' lease renewals) and wakes on its own kind.
TEST_F(HardeningTest, ASubscriptionForOneKindSleepsThroughOthers) {
  int woken = 0;
  const auto sub = plane_->feed().Subscribe(
      plane_->feed().head(), [&] { ++woken; }, "Job");
  ASSERT_TRUE(sub.has_value());
  Apply(R"(
apiVersion: tessera.io/v1
kind: Event
metadata: {name: e1, namespace: tessera-system}
spec: {type: Normal, reason: Test, involvedObject: {kind: Node, name: n1}}
)");
  EXPECT_EQ(woken, 0);
  Apply(R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: j}
spec:
  tasks: [{name: main, command: ["true"]}]
)");
  EXPECT_EQ(woken, 1);
}

// A routed subscription sleeps through the changes not on its routes (an agent's watch through
// the Jobs of other nodes) and wakes on one that is: the server routes a Job's change to the
// Job ("job:<ns>/<name>") and to the nodes it is bound to ("node:<name>").
TEST_F(HardeningTest, ARoutedSubscriptionWakesOnlyForTheJobsOnItsRoutes) {
  int woken = 0;
  const auto sub = plane_->feed().SubscribeRouted(plane_->feed().head(), [&] { ++woken; }, "Job",
                                                  {"job:default/mine", "node:n9"});
  ASSERT_TRUE(sub.has_value());
  const std::string job = R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: NAME}
spec:
  tasks: [{name: main, command: ["true"]}]
)";
  auto apply = [&](const std::string& name) {
    std::string yaml = job;
    yaml.replace(yaml.find("NAME"), 4, name);
    Apply(yaml);
  };
  apply("other");
  apply("another");
  EXPECT_EQ(woken, 0);
  apply("mine");
  EXPECT_EQ(woken, 1);
  apply("mine-too");
  EXPECT_EQ(woken, 1);  // woken once, then unsubscribed
}

}  // namespace
}  // namespace tessera::server
