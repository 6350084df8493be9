// tessera doctor's checks (api/doctor.h) on objects as the agents and the scheduler write them:
// each fault gives its finding, with evidence and a fix, and a healthy cluster gives none.
#include "api/doctor.h"

#include <gtest/gtest.h>

#include "api/kinds.h"
#include "api/time.h"

namespace tessera::api {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 1'800'000'000'000;  // 2027-01-15

json Node(const std::string& name, int gpus) {
  json list = json::array(), telemetry = json::array();
  for (int i = 0; i < gpus; ++i) {
    list.push_back({{"index", i},
                    {"uuid", "GPU-" + name + "-" + std::to_string(i)},
                    {"model", "H100-80GB"},
                    {"memoryMiB", 81559},
                    {"health", "Healthy"}});
    telemetry.push_back({{"index", i}, {"utilizationPct", 80}, {"processes", json::array()}});
  }
  return {{"apiVersion", "tessera.io/v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", json::object()}}},
          {"spec", json::object()},
          {"status",
           {{"gpus", list}, {"telemetry", telemetry}, {"heartbeat", FormatTime(kNow - 5'000)}}}};
}

const Finding* Find(const std::vector<Finding>& fs, const std::string& check,
                    const std::string& subject = "") {
  for (const Finding& f : fs) {
    if (f.check == check && (subject.empty() || f.subject == subject)) return &f;
  }
  return nullptr;
}

std::string Checks(const std::vector<Finding>& fs) {
  std::string s;
  for (const Finding& f : fs) s += f.check + "@" + f.subject + " ";
  return s;
}

TEST(DoctorTest, AHealthyNodeHasNoFindings) {
  json n = Node("n1", 2);
  n["status"]["checkups"] = {
      {{"index", 0},
       {"vbios", "96.00.89.00.01"},
       {"retiredPages", {{"singleBit", 0}, {"doubleBit", 0}, {"pending", false}}},
       {"pcie", {{"gen", 2}, {"maxGen", 5}, {"width", 16}, {"maxWidth", 16}}},
       {"throttle", json::array()},
       {"nvlink", {{"links", 18}, {"down", json::array()}, {"errors", 0}}}},
      {{"index", 1}, {"vbios", "96.00.89.00.01"}}};
  // Idle: a link that trained down to Gen2 saves power and is not a fault.
  n["status"]["telemetry"][0]["utilizationPct"] = 0;
  ASSERT_TRUE(DecodeNode(n).ok()) << DecodeNode(n).status().message();
  const auto fs = CheckNode(n, kNow);
  EXPECT_TRUE(fs.empty()) << Checks(fs);
}

TEST(DoctorTest, EachGpuFaultHasItsFindingWithEvidenceAndFix) {
  json n = Node("n1", 3);
  n["metadata"]["labels"]["tessera.io/expected-gpus"] = "4";
  n["status"]["telemetry"][0]["eccUncorrected"] = 3;
  n["status"]["telemetry"][1]["processes"] = {{{"pid", 4242}, {"usedMiB", 2048}},
                                              {{"pid", 77}, {"usedMiB", 100}, {"pod", "a/b/c"}}};
  n["status"]["checkups"] = {
      {{"index", 0},
       {"vbios", "96.00.89.00.01"},
       {"retiredPages", {{"singleBit", 2}, {"doubleBit", 1}, {"pending", true}}},
       {"remappedRows", {{"uncorrectable", 1}, {"pending", true}, {"failed", false}}},
       {"throttle", {"HwSlowdown"}}},
      {{"index", 1},
       {"vbios", "96.00.99.00.01"},
       {"remappedRows", {{"uncorrectable", 8}, {"failed", true}}},
       {"pcie", {{"gen", 4}, {"maxGen", 5}, {"width", 8}, {"maxWidth", 16}}},
       {"nvlink", {{"links", 4}, {"down", {2}}, {"errors", 12}}}},
      {{"index", 2}, {"throttle", {"SwPowerCap"}}}};
  n["status"]["gpus"][2]["health"] = "Unhealthy";
  ASSERT_TRUE(DecodeNode(n).ok()) << DecodeNode(n).status().message();
  const auto fs = CheckNode(n, kNow);
  struct Want {
    const char* check;
    const char* subject;
    Severity severity;
    const char* evidence;
  };
  for (const Want& w : std::initializer_list<Want>{
           {"node.gpu-missing", "node/n1", Severity::kCritical, "the agent sees 3"},
           {"node.vbios-mismatch", "node/n1", Severity::kWarning, "96.00.99.00.01: GPU 1"},
           {"gpu.ecc-uncorrected", "node/n1/gpu/0", Severity::kCritical, "errors: 3"},
           {"gpu.retired-pages", "node/n1/gpu/0", Severity::kCritical, "retirement is pending"},
           {"gpu.row-remap-pending", "node/n1/gpu/0", Severity::kWarning, "pending: yes"},
           {"gpu.throttled", "node/n1/gpu/0", Severity::kCritical, "HwSlowdown"},
           {"gpu.row-remap-failed", "node/n1/gpu/1", Severity::kCritical, "failure flag"},
           {"gpu.pcie-degraded", "node/n1/gpu/1", Severity::kWarning, "Gen4 x8, maximum Gen5 x16"},
           {"gpu.nvlink-down", "node/n1/gpu/1", Severity::kCritical, "links down: 2"},
           {"gpu.nvlink-errors", "node/n1/gpu/1", Severity::kWarning, "12"},
           {"gpu.stray-process", "node/n1/gpu/1", Severity::kWarning, "PID 4242 uses 2048 MiB"},
           {"gpu.throttled", "node/n1/gpu/2", Severity::kInfo, "SwPowerCap"},
           {"gpu.unhealthy", "node/n1/gpu/2", Severity::kCritical, ""},
       }) {
    const Finding* f = Find(fs, w.check, w.subject);
    ASSERT_NE(f, nullptr) << w.check << "@" << w.subject << " in " << Checks(fs);
    EXPECT_EQ(f->severity, w.severity) << w.check;
    EXPECT_FALSE(f->fix.empty()) << w.check;
    std::string evidence;
    for (const std::string& e : f->evidence) evidence += e + "|";
    EXPECT_NE(evidence.find(w.evidence), std::string::npos) << w.check << ": " << evidence;
  }
  // The process a task holds is not a stray.
  const Finding* stray = Find(fs, "gpu.stray-process", "node/n1/gpu/1");
  EXPECT_EQ(stray->evidence.size(), 1u);
  // A remap that failed is reported as such, not also as pending.
  EXPECT_EQ(Find(fs, "gpu.row-remap-pending", "node/n1/gpu/1"), nullptr);
}

TEST(DoctorTest, XidsByCatalogActionAndAge) {
  json n = Node("n1", 2);
  n["status"]["xids"] = {
      {{"gpu", 0}, {"xid", 13}, {"time", FormatTime(kNow - 60'000)}},         // RESTART_APP
      {{"gpu", 0}, {"xid", 63}, {"time", FormatTime(kNow - 60'000)}},         // IGNORE
      {{"gpu", 1}, {"xid", 79}, {"time", FormatTime(kNow - 120'000)}},        // RESTART_BM
      {{"gpu", 1}, {"xid", 79}, {"time", FormatTime(kNow - 30'000)}},         // again
      {{"gpu", 1}, {"xid", 95}, {"time", FormatTime(kNow - 48 * 3'600'000)}}  // too old
  };
  ASSERT_TRUE(DecodeNode(n).ok()) << DecodeNode(n).status().message();
  const auto fs = CheckNode(n, kNow);
  int xids = 0;
  for (const Finding& f : fs) xids += f.check == "gpu.xid";
  EXPECT_EQ(xids, 3) << Checks(fs);
  for (const Finding& f : fs) {
    if (f.summary.find("XID 13") != std::string::npos) EXPECT_EQ(f.severity, Severity::kWarning);
    if (f.summary.find("XID 63") != std::string::npos) EXPECT_EQ(f.severity, Severity::kInfo);
    if (f.summary.find("XID 79") != std::string::npos) {
      EXPECT_EQ(f.severity, Severity::kCritical);
      EXPECT_EQ(f.subject, "node/n1/gpu/1");
      EXPECT_NE(f.evidence[0].find("2 time(s)"), std::string::npos) << f.evidence[0];
      EXPECT_NE(f.evidence[0].find("30 s ago"), std::string::npos) << f.evidence[0];
      EXPECT_NE(f.fix.find("reboot"), std::string::npos) << f.fix;
    }
    EXPECT_EQ(f.summary.find("XID 95"), std::string::npos) << "a day-old Xid was reported";
  }
}

TEST(DoctorTest, AnAgentThatStoppedReporting) {
  json n = Node("n1", 1);
  n["status"]["heartbeat"] = FormatTime(kNow - 10 * 60'000);
  const auto fs = CheckNode(n, kNow);
  const Finding* f = Find(fs, "node.heartbeat-stale");
  ASSERT_NE(f, nullptr) << Checks(fs);
  EXPECT_NE(f->evidence[0].find("600 s ago"), std::string::npos) << f->evidence[0];
  n["status"].erase("heartbeat");
  EXPECT_NE(Find(CheckNode(n, kNow), "node.no-heartbeat"), nullptr);
}

TEST(DoctorTest, MalformedCheckupsAreRefusedNamingTheField) {
  json n = Node("n1", 1);
  n["status"]["checkups"] = {{{"index", 0}, {"pcie", {{"gen", "four"}}}}};
  Status s = DecodeNode(n).status();
  EXPECT_NE(s.message().find("status.checkups[0].pcie.gen"), std::string::npos) << s.message();
  n["status"]["checkups"] = {{{"index", 0}, {"colour", "red"}}};
  s = DecodeNode(n).status();
  EXPECT_NE(s.message().find("colour"), std::string::npos) << s.message();
  n["status"].erase("checkups");
  n["status"]["xids"] = {{{"gpu", 0}, {"xid", 79}, {"time", "yesterday"}}};
  s = DecodeNode(n).status();
  EXPECT_NE(s.message().find("status.xids[0].time"), std::string::npos) << s.message();
}

TEST(DoctorTest, NvmlThatCannotStart) {
  Finding f = NvmlStartFinding("n1", "NVML init failed: Driver/library version mismatch (18)");
  EXPECT_EQ(f.check, "node.driver-mismatch");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_NE(f.fix.find("reboot"), std::string::npos);
  EXPECT_EQ(NvmlStartFinding("n1", "cannot load NVML").check, "node.nvml-unavailable");
}

json Obj(const std::string& kind, const std::string& name, const std::string& ns, json spec) {
  json o = {{"apiVersion", "tessera.io/v1"},
            {"kind", kind},
            {"metadata", {{"name", name}}},
            {"spec", std::move(spec)}};
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  return o;
}

json GpuQuota(const std::string& flavor, int gpus) {
  return {{{"coveredResources", {"nvidia.com/gpu"}},
           {"flavors",
            {{{"name", flavor},
              {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", gpus}}}}}}}}};
}

TEST(DoctorTest, QueueMisconfigurations) {
  DoctorInput in;
  in.now_ms = kNow;
  in.nodes = {Node("n1", 4)};
  in.nodes[0]["metadata"]["labels"]["pool"] = "a";
  in.flavors = {Obj("ResourceFlavor", "pool-a", "", {{"nodeLabels", {{"pool", "a"}}}}),
                Obj("ResourceFlavor", "pool-z", "", {{"nodeLabels", {{"pool", "z"}}}})};
  // As a Kueue ClusterQueue without namespaceSelector is stored (api/translate_kueue.cc).
  json nil_selector = {{"matchExpressions",
                        {{{"key", "kubernetes.io/metadata.name"}, {"operator", "DoesNotExist"}}}}};
  in.queues = {
      Obj("Queue", "closed", "",
          {{"namespaceSelector", nil_selector}, {"resourceGroups", GpuQuota("pool-a", 2)}}),
      Obj("Queue", "big", "",
          {{"namespaceSelector", json::object()}, {"resourceGroups", GpuQuota("pool-a", 3)}}),
      Obj("Queue", "ghost", "", {{"resourceGroups", GpuQuota("pool-z", 1)}})};
  in.local_queues = {Obj("LocalQueue", "lq", "team-a", {{"clusterQueue", "closed"}}),
                     Obj("LocalQueue", "ok", "team-a", {{"clusterQueue", "big"}}),
                     Obj("LocalQueue", "lost", "team-b", {{"clusterQueue", "nowhere"}})};
  for (const json& q : in.queues)
    ASSERT_TRUE(DecodeQueue(q).ok()) << DecodeQueue(q).status().message();
  const auto fs = CheckScheduling(in);
  const Finding* closed = Find(fs, "queue.namespace-not-admitted", "localqueue/team-a/lq");
  ASSERT_NE(closed, nullptr) << Checks(fs);
  EXPECT_NE(closed->meaning.find("nil namespaceSelector selects no namespace"), std::string::npos);
  EXPECT_NE(closed->fix.find("namespaceSelector: {}"), std::string::npos);
  EXPECT_EQ(Find(fs, "queue.namespace-not-admitted", "localqueue/team-a/ok"), nullptr);
  ASSERT_NE(Find(fs, "localqueue.no-queue", "localqueue/team-b/lost"), nullptr) << Checks(fs);
  const Finding* none = Find(fs, "flavor.no-node", "resourceflavor/pool-z");
  ASSERT_NE(none, nullptr) << Checks(fs);
  EXPECT_EQ(none->severity, Severity::kCritical);  // a queue quotes it
  const Finding* above = Find(fs, "quota.above-capacity", "resourceflavor/pool-a");
  ASSERT_NE(above, nullptr) << Checks(fs);
  EXPECT_NE(above->evidence.back().find("sum of nominal quotas 5 GPU"), std::string::npos)
      << above->evidence.back();
  EXPECT_NE(above->evidence.back().find("hold 4 GPU"), std::string::npos);
}

json Job(const std::string& name, const std::string& ns, const std::string& lq, int gpus_per_pod,
         int pods, const std::string& created) {
  json j = Obj("Job", name, ns,
               {{"tasks",
                 {{{"name", "w"},
                   {"replicas", pods},
                   {"command", {"true"}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", gpus_per_pod}}}}}}}}});
  j["spec"]["queue"] = lq;
  j["metadata"]["creationTimestamp"] = created;
  j["status"] = {{"phase", "Pending"}, {"message", "waiting for quota"}};
  return j;
}

TEST(DoctorTest, APendingJobsPlaceInLineAndWhetherItCanEverFit) {
  DoctorInput in;
  in.now_ms = kNow;
  in.nodes = {Node("n1", 8), Node("n2", 8)};
  in.queues = {Obj("Queue", "q", "", {{"namespaceSelector", json::object()}})};
  in.local_queues = {Obj("LocalQueue", "lq", "team-a", {{"clusterQueue", "q"}})};
  in.jobs = {Job("first", "team-a", "lq", 1, 1, "2027-01-15T08:00:00Z"),
             Job("huge", "team-a", "lq", 16, 1, "2027-01-15T08:01:00Z"),
             Job("wide", "team-a", "lq", 8, 3, "2027-01-15T08:02:00Z"),
             Job("fits", "team-a", "lq", 8, 2, "2027-01-15T08:03:00Z")};
  for (const json& j : in.jobs) ASSERT_TRUE(DecodeJob(j).ok()) << DecodeJob(j).status().message();
  auto fs = CheckJob(in.jobs[1], in);
  const Finding* pending = Find(fs, "job.pending");
  ASSERT_NE(pending, nullptr) << Checks(fs);
  EXPECT_EQ(pending->evidence[0], "reason: waiting for quota");
  EXPECT_NE(pending->evidence[1].find("queue q: 2 of 4 waiting"), std::string::npos)
      << pending->evidence[1];
  const Finding* never = Find(fs, "job.never-fits");
  ASSERT_NE(never, nullptr) << Checks(fs);
  EXPECT_NE(never->evidence[0].find("16 whole GPU(s)"), std::string::npos) << never->evidence[0];
  fs = CheckJob(in.jobs[2], in);
  never = Find(fs, "job.never-fits");
  ASSERT_NE(never, nullptr) << Checks(fs);
  EXPECT_NE(never->evidence[0].find("24 GPU(s) in all; the nodes hold 16"), std::string::npos)
      << never->evidence[0];
  EXPECT_EQ(Find(CheckJob(in.jobs[3], in), "job.never-fits"), nullptr);

  // With the scheduler's order from the server (/pendingworkloads), its place is the
  // scheduler's (priority first), not a count of older Jobs; what the scheduler found of its fit
  // is said too.
  in.places["team-a/huge"] = {{"metadata", {{"namespace", "team-a"}, {"name", "huge"}}},
                              {"queue", "q"},
                              {"positionInClusterQueue", 1},
                              {"waitingInClusterQueue", 4},
                              {"fitsWhenRunningWorkEnds", false}};
  fs = CheckJob(in.jobs[1], in);
  pending = Find(fs, "job.pending");
  ASSERT_NE(pending, nullptr) << Checks(fs);
  EXPECT_EQ(pending->evidence[1],
            "queue q: 1 of 4 waiting (the scheduler's order: priority, then age)");
  EXPECT_EQ(pending->evidence[2],
            "the scheduler found it would not fit even with all running work ended");
  EXPECT_NE(Find(fs, "job.never-fits"), nullptr) << Checks(fs);
}

TEST(DoctorTest, CudaOutOfMemoryTiedToTheShare) {
  DoctorInput in;
  in.now_ms = kNow;
  json j = Job("oom", "team-a", "lq", 1, 1, "2027-01-15T08:00:00Z");
  json device = {{"gpu", 0}, {"index", 0}, {"kind", "share"}, {"milli", 250}, {"memoryMiB", 20000}};
  json pod = {{"name", "w-0"}, {"node", "n1"}, {"devices", json::array({device})}};
  j["status"] = {{"phase", "Failed"}, {"pods", json::array({pod})}};
  in.logs["team-a/oom/w-0"] =
      "step 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
  const auto fs = CheckJob(j, in);
  const Finding* f = Find(fs, "job.cuda-oom");
  ASSERT_NE(f, nullptr) << Checks(fs);
  EXPECT_NE(f->evidence[0].find("Tried to allocate 2.00 GiB"), std::string::npos);
  EXPECT_NE(f->evidence[1].find("share of 20000 MiB"), std::string::npos) << f->evidence[1];
  EXPECT_NE(f->meaning.find("share"), std::string::npos);
  in.logs["team-a/oom/w-0"] = "all good\n";
  EXPECT_EQ(Find(CheckJob(j, in), "job.cuda-oom"), nullptr);
}

TEST(DoctorTest, BindingsANodeDoesNotReport) {
  DoctorInput in;
  in.now_ms = kNow;
  in.nodes = {Node("n1", 2)};
  json j = Job("run", "team-a", "lq", 1, 1, "2027-01-15T08:00:00Z");
  json device = {{"gpu", 3}, {"index", 3}, {"uuid", "GPU-n1-3"}, {"kind", "whole"}};
  json pod = {{"name", "w-0"}, {"node", "n1"}, {"devices", json::array({device})}};
  j["status"] = {{"phase", "Admitted"}, {"pods", json::array({pod})}};
  in.jobs = {j};
  const auto fs = CheckScheduling(in);
  const Finding* f = Find(fs, "node.view-differs", "job/team-a/run");
  ASSERT_NE(f, nullptr) << Checks(fs);
  EXPECT_EQ(f->evidence[0], "node n1 reports no GPU 3");
}

TEST(DoctorTest, OutputOrdersBySeverityAndCounts) {
  std::vector<Finding> fs(3);
  fs[0].severity = Severity::kInfo;
  fs[0].subject = "b";
  fs[1].severity = Severity::kCritical;
  fs[1].subject = "c";
  fs[2].severity = Severity::kWarning;
  fs[2].subject = "a";
  SortFindings(&fs);
  EXPECT_EQ(fs[0].subject, "c");
  EXPECT_EQ(fs[2].subject, "b");
  const json j = FindingsJson(fs);
  EXPECT_EQ(j["counts"]["critical"], 1);
  EXPECT_EQ(j["findings"][0]["severity"], "critical");
  EXPECT_NE(FindingsText(fs).find("1 critical, 1 warning(s), 1 note(s)"), std::string::npos);
  EXPECT_NE(FindingsText({}).find("nothing wrong found"), std::string::npos);
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

TEST(DoctorTest, QuarantineAndTheBreakerAreReported) {
  json n = Node("n1", 2);
  n["metadata"]["annotations"]["tessera.io/gpu-quarantine"] =
      R"({"gpus":[{"index":1,"xid":95,"since":"2027-01-15T07:59:00Z","resetRequested":true}],)"
      R"("reboot":{"xid":79,"since":"2027-01-15T07:58:00Z","bootId":"b"}})";
  ASSERT_TRUE(DecodeNode(n).ok()) << DecodeNode(n).status().message();
  auto fs = CheckNode(n, kNow);
  const Finding* q = Find(fs, "gpu.quarantined", "node/n1/gpu/1");
  ASSERT_NE(q, nullptr) << Checks(fs);
  EXPECT_NE(q->evidence[0].find("XID 95"), std::string::npos);
  EXPECT_NE(q->fix.find("nvidia-smi --gpu-reset -i 1"), std::string::npos);
  EXPECT_NE(Find(fs, "node.reboot-required", "node/n1"), nullptr);

  DoctorInput in;
  in.now_ms = kNow;
  json old_event = {{"spec",
                     {{"reason", "QuarantineCircuitBreakerOpen"},
                      {"time", FormatTime(kNow - 2 * 3'600'000)},
                      {"message", "old"}}}};
  in.system_events = {old_event};
  EXPECT_EQ(Find(CheckScheduling(in), "quarantine.breaker-open"), nullptr);  // hours ago
  json event = old_event;
  event["spec"]["time"] = FormatTime(kNow - 60'000);
  event["spec"]["message"] = "circuit breaker open: ...";
  in.system_events.push_back(event);
  fs = CheckScheduling(in);
  const Finding* b = Find(fs, "quarantine.breaker-open", "cluster");
  ASSERT_NE(b, nullptr) << Checks(fs);
  EXPECT_EQ(b->severity, Severity::kCritical);
  EXPECT_NE(b->evidence[0].find("1 Xid(s) not acted on"), std::string::npos) << b->evidence[0];
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

TEST(DoctorTest, ControlPlaneFromMetricsAndStoreStatus) {
  EXPECT_TRUE(CheckControlPlane(nullptr,
                                "tessera_store_commit_failures_total 0\n"
                                "tessera_store_watch_lag_revisions 3\n")
                  .empty());
  auto fs = CheckControlPlane(nullptr,
                              "# HELP x\ntessera_store_commit_failures_total 7\n"
                              "tessera_store_watch_lag_revisions 5000\n");
  ASSERT_NE(Find(fs, "store.commit-failures"), nullptr) << Checks(fs);
  EXPECT_EQ(Find(fs, "store.commit-failures")->evidence[0],
            "tessera_store_commit_failures_total 7");
  EXPECT_NE(Find(fs, "store.watch-lag"), nullptr);
  // As `tessera store status -o json` reports it.
  const json status = {
      {"leader", ""},
      {"revision", 99},
      {"replicas", {{{"id", "r1"}, {"lag", 2}}, {{"id", "r2"}, {"lag", 4000}, {"at", "t"}}}},
      {"members",
       {{{"endpoint", "a:1"}, {"error", "connection refused"}},
        {{"endpoint", "b:2"}, {"dbSize", 2000}, {"quotaUsedPercent", 96.5}},
        {{"endpoint", "c:3"}, {"dbSize", 10}, {"quotaUsedPercent", 1.0}}}},
      {"alarms", {"NOSPACE"}}};
  fs = CheckControlPlane(&status, "");
  EXPECT_NE(Find(fs, "scheduler.no-leader"), nullptr) << Checks(fs);
  EXPECT_NE(Find(fs, "store.replica-lag", "replica/r2"), nullptr) << Checks(fs);
  EXPECT_EQ(Find(fs, "store.replica-lag", "replica/r1"), nullptr);
  const Finding* down = Find(fs, "store.member-down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->severity, Severity::kWarning);  // 1 of 3: the majority stands
  EXPECT_EQ(Find(fs, "store.quota", "etcd/b:2")->severity, Severity::kCritical);
  EXPECT_EQ(Find(fs, "store.quota", "etcd/c:3"), nullptr);
  EXPECT_EQ(Find(fs, "store.alarm")->evidence[0], "NOSPACE");
}

TEST(DoctorTest, DcgmLevelOneFailuresAndWarnings) {
  const std::string report = R"({"DCGM GPU Diagnostic": {"test_categories": [
    {"category": "Deployment", "tests": [
      {"name": "Denylist", "results": [{"status": "Pass"}]},
      {"name": "Persistence Mode", "results": [{"status": "Warn", "gpu_id": "1",
        "warnings": [{"warning": "Persistence mode for GPU 1 is disabled."}]}]}]},
    {"category": "Hardware", "tests": [
      {"name": "GPU Memory", "results": [{"status": "Fail", "gpu_id": "0",
        "warnings": [{"warning": "Error using CUDA API cudaMalloc"}]}]}]}]}})";
  auto fs = CheckDcgmDiag("n1", report, 226);
  ASSERT_EQ(fs.size(), 2u) << Checks(fs);
  const Finding* fail = Find(fs, "dcgm.diag", "node/n1/gpu/0");
  ASSERT_NE(fail, nullptr);
  EXPECT_EQ(fail->severity, Severity::kCritical);
  EXPECT_EQ(fail->summary, "DCGM diagnostic Hardware/GPU Memory: Fail");
  EXPECT_EQ(fail->evidence[0], "Error using CUDA API cudaMalloc");
  EXPECT_EQ(Find(fs, "dcgm.diag", "node/n1/gpu/1")->severity, Severity::kWarning);
  fs = CheckDcgmDiag("n1", "Error: unable to establish a connection to the specified host", 255);
  EXPECT_NE(Find(fs, "dcgm.diag-unreadable"), nullptr);
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

TEST(DoctorTest, SlowTrainingIdleOrBoundByPcieOrNvlink) {
  DoctorInput in;
  in.now_ms = kNow;
  json n = Node("n1", 4);
  for (json& g : n["status"]["gpus"]) g["model"] = "H100-80GB";
  auto& t = n["status"]["telemetry"];
  t[0]["utilizationPct"] = 5;  // idle
  t[1]["utilizationPct"] = 40;
  t[1]["pcieRxKiBps"] = 23437500;  // 24 GB/s of a Gen4 x16 link's 31.5
  t[2]["utilizationPct"] = 45;
  t[2]["nvlinkKiBps"] = 683593750;  // 700 GB/s of an H100's 900
  t[3]["utilizationPct"] = 95;      // busy: nothing to say
  t[3]["pcieRxKiBps"] = 29296875;
  n["status"]["checkups"] = json::array();
  for (int i = 0; i < 4; ++i) {
    n["status"]["checkups"].push_back(
        {{"index", i}, {"pcie", {{"gen", 4}, {"maxGen", 4}, {"width", 16}, {"maxWidth", 16}}}});
  }
  ASSERT_TRUE(DecodeNode(n).ok()) << DecodeNode(n).status().message();
  in.nodes = {n};
  json j = Job("train", "team-a", "lq", 1, 4, "2027-01-15T08:00:00Z");
  json pods = json::array();
  for (int i = 0; i < 4; ++i) {
    json device = {{"gpu", i}, {"index", i}, {"kind", "whole"}};
    pods.push_back({{"name", "w-" + std::to_string(i)},
                    {"node", "n1"},
                    {"devices", json::array({device})},
                    {"state", {{"phase", "Running"}}}});
  }
  j["status"] = {{"phase", "Admitted"}, {"pods", pods}};
  const auto fs = CheckJob(j, in);
  const Finding* idle = Find(fs, "job.gpu-idle");
  ASSERT_NE(idle, nullptr) << Checks(fs);
  EXPECT_NE(idle->summary.find("GPU 0 on n1"), std::string::npos) << idle->summary;
  const Finding* pcie = Find(fs, "job.pcie-bound");
  ASSERT_NE(pcie, nullptr) << Checks(fs);
  EXPECT_NE(pcie->evidence[0].find("PCIe 24.0 GB/s of the link's 31.5 GB/s (Gen4 x16)"),
            std::string::npos)
      << pcie->evidence[0];
  const Finding* nvlink = Find(fs, "job.nvlink-bound");
  ASSERT_NE(nvlink, nullptr) << Checks(fs);
  EXPECT_NE(nvlink->evidence[0].find("NVLink 700.0 GB/s of the H100-80GB's 900.0 GB/s"),
            std::string::npos)
      << nvlink->evidence[0];
  int about_gpu3 = 0;
  for (const Finding& f : fs) about_gpu3 += f.summary.find("GPU 3") != std::string::npos;
  EXPECT_EQ(about_gpu3, 0) << Checks(fs);
}

}  // namespace
}  // namespace tessera::api
