// The fixture of the server's in-process tests: an ApiServer and a SchedulingLoop over a
// temporary data directory.
#ifndef TESSERA_TESTS_SERVER_LOOP_FIXTURE_H_
#define TESSERA_TESTS_SERVER_LOOP_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/api_server.h"
#include "server/scheduling_loop.h"
#include "server/test_store.h"

namespace tessera::server {

// A Node with one H100 whose agent's clock says its heartbeat was a year ago.
inline nlohmann::json OneGpuNode(const std::string& name) {
  return {
      {"apiVersion", "tessera.io/v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}}},
      {"status",
       {{"allocatable", {{"cpu", "8"}, {"memory", "64Gi"}}},
        {"gpus", {{{"index", 0}, {"uuid", "GPU-0"}, {"model", "H100-80GB"}, {"memoryMiB", 81920}}}},
        {"heartbeat", "2025-11-23T00:00:00Z"}}}};
}

// The API server over a temporary data dir, driven through its request handler, and the
// scheduling loop run cycle by cycle.
class LoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-loop-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Open();
  }
  void TearDown() override {
    loop_.reset();
    api_.reset();
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    loop_.reset();
    api_.reset();
    plane_.reset();  // a restart: the data directory has one owner at a time
    plane_ = ControlPlane::Open(dir_, store_).value();
    api_ = std::make_unique<ApiServer>(*plane_);
    std::ifstream in(dir_ + "/admin.token");
    std::getline(in, admin_);
    loop_ = SchedulingLoop::Create(*plane_).value();
    api_->set_clock([this] { return now_; });
  }

  HttpResponse Apply(const std::string& yaml, int want = 200) {
    HttpRequest r;
    r.method = "POST";
    r.path = "/apis/tessera.io/v1/apply";
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/yaml";
    r.body = yaml;
    HttpResponse out = api_->Handle(r);
    EXPECT_EQ(out.status, want) << out.body;
    return out;
  }
  // Replaces a Job with `obj` (a PUT of the whole object, as an editing client does).
  HttpResponse Put(const nlohmann::json& obj, int want = 200) {
    HttpRequest r;
    r.method = "PUT";
    r.path = "/apis/tessera.io/v1/namespaces/" + obj["metadata"]["namespace"].get<std::string>() +
             "/jobs/" + obj["metadata"]["name"].get<std::string>();
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = obj.dump();
    HttpResponse out = api_->Handle(r);
    EXPECT_EQ(out.status, want) << out.body;
    return out;
  }
  nlohmann::json Get(const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.path = path.substr(0, path.find('?'));
    if (path.find('?') != std::string::npos) {
      EXPECT_TRUE(ParseQuery(path.substr(path.find('?') + 1), &r.query)) << path;
    }
    r.authorization = "Bearer " + admin_;
    HttpResponse out = api_->Handle(r);
    EXPECT_EQ(out.status, 200) << path << ": " << out.body;
    return nlohmann::json::parse(out.body, nullptr, false);
  }
  nlohmann::json Job(const std::string& name, const std::string& ns = "default") {
    return Get("/apis/tessera.io/v1/namespaces/" + ns + "/jobs/" + name);
  }
  std::string Metrics() {
    HttpRequest r;
    r.method = "GET";
    r.path = "/metrics";
    r.authorization = "Bearer " + admin_;
    return api_->Handle(r).body;
  }
  // A node `name` of `gpus` A100-80GB cards (GPU-0...), 64 CPUs and 512 GiB, at `address`
  // when one is given.
  void ApplyNode(const std::string& name, int gpus, const std::string& address = "") {
    std::string yaml = "apiVersion: tessera.io/v1\nkind: Node\nmetadata: {name: " + name +
                       "}\nstatus:\n" + (address.empty() ? "" : "  address: " + address + "\n") +
                       "  allocatable: {cpu: \"64\", memory: 512Gi}\n  gpus:\n";
    for (int i = 0; i < gpus; ++i) {
      yaml += "  - {index: " + std::to_string(i) + ", uuid: GPU-" + std::to_string(i) +
              ", model: A100-80GB, memoryMiB: 81920}\n";
    }
    Apply(yaml);
  }
  // Kueue's smallest set-up: ResourceFlavor a100, ClusterQueue cq for every namespace with
  // `gpus` nominal nvidia.com/gpu, and LocalQueue default/main pointing at it.
  void ApplyKueueQueue(int gpus) {
    Apply(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: )" +
          std::to_string(gpus) + R"(}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: default}
spec: {clusterQueue: cq}
)");
  }
  void DeleteJob(const std::string& name, const std::string& ns = "default") {
    HttpRequest r;
    r.method = "DELETE";
    r.path = "/apis/tessera.io/v1/namespaces/" + ns + "/jobs/" + name;
    r.authorization = "Bearer " + admin_;
    HttpResponse out = api_->Handle(r);
    EXPECT_EQ(out.status, 200) << out.body;
  }
  CycleSummary Cycle() {
    now_ += 1000;
    auto s = loop_->RunOnce(now_);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *s : CycleSummary{};
  }
  // Messages of the events about a job, oldest first.
  std::vector<std::string> Events(const std::string& job, const std::string& ns = "default") {
    std::vector<std::pair<std::string, std::string>> out;
    const nlohmann::json events = Get("/apis/tessera.io/v1/namespaces/" + ns + "/events");
    for (const nlohmann::json& e : events["items"]) {
      if (e["spec"]["involvedObject"]["name"] == job) {
        out.emplace_back(e["metadata"]["name"], e["spec"]["reason"].get<std::string>() + ": " +
                                                    e["spec"]["message"].get<std::string>());
      }
    }
    std::vector<std::string> msgs;
    for (auto& [n, m] : out) msgs.push_back(m);
    return msgs;
  }

  std::string dir_, admin_;
  ControlPlane::StoreOpener store_ = TestStore();  // the same state at every Open of a test
  std::unique_ptr<ControlPlane> plane_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<SchedulingLoop> loop_;
  int64_t now_ = 1'800'000'000'000;
};

}  // namespace tessera::server

#endif  // TESSERA_TESTS_SERVER_LOOP_FIXTURE_H_
