// The scheduling loop carrying out NVIDIA's Xid actions (core/quarantine.h through
// server/quarantine_pass.h), step by step: a RESET_GPU Xid quarantines that GPU alone, its gang
// is scheduled again whole on other GPUs; an application's Xid changes nothing; RESTART_BM drains
// the node until its agent reports another boot; a reset that passes its checks brings the GPU
// back; the circuit breaker stops mass quarantine and says so.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "api/time.h"
#include "server/loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class QuarantineLoopTest : public LoopTest {
 protected:
  json Node(const std::string& name) { return Get("/apis/tessera.io/v1/nodes/" + name); }
  // Writes the node back with `edit` applied to it, as its agent would.
  template <typename Edit>
  void EditNode(const std::string& name, Edit edit) {
    json n = Node(name);
    edit(n);
    n["metadata"].erase("resourceVersion");
    HttpRequest r;
    r.method = "PUT";
    r.path = "/apis/tessera.io/v1/nodes/" + name;
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = n.dump();
    const HttpResponse out = api_->Handle(r);
    ASSERT_EQ(out.status, 200) << out.body;
  }
  void ReportXid(const std::string& node, int gpu, int xid) {
    EditNode(node, [&](json& n) {
      n["status"]["xids"].push_back({{"gpu", gpu}, {"xid", xid}, {"time", api::FormatTime(now_)}});
    });
  }
  json Quarantine(const std::string& node) {
    const json n = Node(node);
    const json a = n["metadata"].value("annotations", json::object());
    if (!a.contains("tessera.io/gpu-quarantine")) return json::object();
    return json::parse(a["tessera.io/gpu-quarantine"].get<std::string>());
  }
  // "node/index" of each GPU the job's pods hold.
  std::set<std::string> Held(const std::string& job) {
    std::set<std::string> out;
    const json pods = Job(job)["status"].value("pods", json::array());
    for (const json& p : pods) {
      for (const json& d : p["devices"]) {
        out.insert(p["node"].get<std::string>() + "/" + std::to_string(d["index"].get<int>()));
      }
    }
    return out;
  }
  std::vector<std::string> NodeEvents() {
    std::vector<std::string> out;
    const json events = Get("/apis/tessera.io/v1/namespaces/tessera-system/events");
    for (const json& e : events["items"]) {
      if (e["spec"]["involvedObject"]["kind"] == "Node") {
        out.push_back(e["spec"]["reason"].get<std::string>() + ": " +
                      e["spec"]["message"].get<std::string>());
      }
    }
    return out;
  }
  bool AnyEvent(const std::vector<std::string>& events, const std::string& part) {
    for (const std::string& e : events) {
      if (e.find(part) != std::string::npos) return true;
    }
    return false;
  }
};

constexpr char kGang[] = R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: gang, namespace: default}
spec:
  tasks:
  - {name: w, replicas: 3, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}
)";

TEST_F(QuarantineLoopTest, AResetXidQuarantinesOneGpuAndItsGangMovesWhole) {
  ApplyNode("n1", 2);
  ApplyNode("n2", 2);
  ApplyNode("n3", 2);
  Apply(kGang);
  Cycle();
  ASSERT_EQ(Job("gang")["status"]["phase"], "Admitted") << Job("gang").dump();
  const std::set<std::string> before = Held("gang");
  ASSERT_EQ(before.size(), 3u);
  const std::string victim = *before.begin();  // "node/index"
  const std::string node = victim.substr(0, victim.find('/'));
  const int gpu = std::stoi(victim.substr(victim.find('/') + 1));

  // An application's fault (Xid 13) changes nothing.
  ReportXid(node, gpu, 13);
  Cycle();
  EXPECT_EQ(Held("gang"), before);
  EXPECT_FALSE(Quarantine(node).contains("gpus")) << Quarantine(node).dump();

  // Xid 95 (RESET_GPU): that GPU alone is quarantined, with an event on the node.
  ReportXid(node, gpu, 95);
  Cycle();
  const json q = Quarantine(node);
  ASSERT_EQ(q["gpus"].size(), 1u) << q.dump();
  EXPECT_EQ(q["gpus"][0]["index"], gpu);
  EXPECT_EQ(q["gpus"][0]["xid"], 95);
  EXPECT_EQ(q["gpus"][0]["resetRequested"], true);
  EXPECT_TRUE(AnyEvent(NodeEvents(), "GpuQuarantined: GPU " + std::to_string(gpu) + " of node " +
                                         node + " quarantined: XID 95"));
  // The gang lost its binding and is placed again, whole, away from the quarantined GPU.
  Cycle();
  const json job = Job("gang");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  const std::set<std::string> after = Held("gang");
  EXPECT_EQ(after.size(), 3u);
  EXPECT_FALSE(after.contains(victim));
  bool lost = false;
  for (const std::string& e : Events("gang")) {
    lost = lost || e.find("BindingLost: GPU " + std::to_string(gpu) + " of node " + node +
                          " is quarantined: XID 95") != std::string::npos;
  }
  EXPECT_TRUE(lost);
  EXPECT_NE(Metrics().find("tessera_gpus_quarantined 1"), std::string::npos);
  // kubectl sees it as a node condition.
  const json kube = Get("/api/v1/nodes/" + node);
  bool condition = false;
  for (const json& c : kube["status"]["conditions"]) {
    if (c["type"] == "GpuQuarantined") {
      condition = c["status"] == "True" &&
                  c["message"].get<std::string>().find("GPU " + std::to_string(gpu) + ": XID 95") !=
                      std::string::npos;
    }
  }
  EXPECT_TRUE(condition) << kube["status"].dump();

  // The agent resets the GPU; the GPU then passes its checks: back in service.
  now_ += 5000;
  EditNode(node, [&](json& n) {
    n["status"]["resets"] = {{{"gpu", gpu}, {"time", api::FormatTime(now_)}, {"ok", true}}};
  });
  Cycle();
  EXPECT_FALSE(Quarantine(node).contains("gpus")) << Quarantine(node).dump();
  EXPECT_TRUE(AnyEvent(NodeEvents(), "GpuReturned: GPU " + std::to_string(gpu) + " of node " +
                                         node + " was reset and passes its checks"));
}

TEST_F(QuarantineLoopTest, FallenOffTheBusDrainsTheNodeUntilItBootsAgain) {
  ApplyNode("n1", 2);
  ApplyNode("n2", 2);
  EditNode("n1", [](json& n) { n["status"]["bootId"] = "boot-1"; });
  Apply(R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: pair, namespace: default}
spec:
  tasks:
  - name: w
    replicas: 1
    command: ["true"]
    nodeSelector: {kubernetes.io/hostname: n1}
    resources: {limits: {nvidia.com/gpu: 2}}
)");
  Cycle();
  ASSERT_EQ(Job("pair")["status"]["phase"], "Admitted") << Job("pair").dump();
  ReportXid("n1", 0, 79);
  Cycle();
  EXPECT_EQ(Quarantine("n1")["reboot"]["xid"], 79) << Quarantine("n1").dump();
  EXPECT_NE(Get("/api/v1/nodes/n1")["status"]["conditions"].dump().find("RebootRequired"),
            std::string::npos);
  EXPECT_TRUE(AnyEvent(NodeEvents(), "NodeRebootRequired: node n1 must be rebooted: XID 79"));
  Cycle();
  // Drained: the job lost n1 and waits (it may only run there).
  const json job = Job("pair");
  EXPECT_EQ(job["status"]["phase"], "Pending") << job.dump();
  bool lost = false;
  for (const std::string& e : Events("pair")) {
    lost = lost || e.find("node n1 must be rebooted") != std::string::npos;
  }
  EXPECT_TRUE(lost);
  // Another boot: the mark lifts and the job runs again.
  EditNode("n1", [](json& n) {
    n["status"]["bootId"] = "boot-2";
    n["status"]["xids"] = json::array();
  });
  Cycle();
  EXPECT_FALSE(Quarantine("n1").contains("reboot")) << Quarantine("n1").dump();
  Cycle();
  EXPECT_EQ(Job("pair")["status"]["phase"], "Admitted") << Job("pair").dump();
}

TEST_F(QuarantineLoopTest, TheCircuitBreakerStopsMassQuarantineLoudly) {
  // 20 nodes of 2 GPUs: 10% is 4 GPUs.
  for (int i = 0; i < 20; ++i) ApplyNode("n" + std::to_string(i), 2);
  for (int i = 0; i < 5; ++i) ReportXid("n" + std::to_string(i), 0, 95);
  Cycle();
  int quarantined = 0;
  for (int i = 0; i < 5; ++i) quarantined += Quarantine("n" + std::to_string(i)).contains("gpus");
  EXPECT_EQ(quarantined, 4);
  const std::vector<std::string> events = NodeEvents();
  EXPECT_TRUE(AnyEvent(events, "QuarantineCircuitBreakerOpen: circuit breaker open"));
  EXPECT_TRUE(AnyEvent(events, "is not acted on"));
  EXPECT_NE(Metrics().find("tessera_quarantine_circuit_breaker_open 1"), std::string::npos);
}

}  // namespace
}  // namespace tessera::server
