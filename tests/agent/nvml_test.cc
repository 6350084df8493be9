#include "agent/nvml.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "agent/assignments.h"
#include "agent/cdi.h"
#include "agent/container_runtime.h"
#include "agent/fake_gpus.h"
#include "agent/mps.h"
#include "agent/node_object.h"

namespace tessera::agent {
namespace {

// Two NVLinked H100s (one in MIG mode with two instances) and a T4, in the fake NVML's format.
constexpr char kDevices[] = R"({
  "driver": "550.54.15", "nvml": "12.550.54.15",
  "devices": [
    {"uuid": "GPU-aaaa", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
     "busId": "00000000:18:00.0", "mig": false, "ecc": true, "nvlink": ["00000000:2A:00.0"],
     "computeMode": 3, "util": 37, "memUtil": 5, "usedMiB": 1024, "temp": 41, "powerMw": 120000,
     "smClock": 1980, "eccCorrected": 3, "eccUncorrected": 0, "nvlinkTxKiB": 7000,
     "nvlinkRxKiB": 500, "processes": [{"pid": 4242, "usedMiB": 1000}]},
    {"uuid": "GPU-bbbb", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
     "busId": "00000000:2A:00.0", "mig": true, "ecc": true, "nvlink": ["00000000:18:00.0"],
     "migDevices": [{"uuid": "MIG-1111", "memoryMiB": 9728, "gi": 7, "ci": 0},
                    {"uuid": "MIG-2222", "memoryMiB": 19968, "gi": 3, "ci": 0}]},
    {"uuid": "GPU-cccc", "name": "Tesla T4", "memoryMiB": 15360, "busId": "00000000:3B:00.0",
     "ecc": false}
  ]})";

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("fake-nvml-" + std::to_string(getpid()) + ".json");
    std::ofstream(path_) << kDevices;
    setenv("TESSERA_FAKE_NVML", path_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TESSERA_FAKE_NVML");
    std::filesystem::remove(path_);
  }
  std::filesystem::path path_;
};

TEST_F(NvmlTest, DiscoversThroughTheRealDlopenPath) {
  auto nvml = Nvml::Load(TESSERA_FAKE_NVML_LIB);
  ASSERT_TRUE(nvml.ok()) << nvml.status().message();
  auto found = (*nvml)->Discover();
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->source, "nvml");
  EXPECT_EQ(found->driver_version, "550.54.15");
  ASSERT_EQ(found->gpus.size(), 3u);
  const GpuInfo& a = found->gpus[0];
  EXPECT_EQ(a.uuid, "GPU-aaaa");
  EXPECT_EQ(a.product, "H100-80GB");
  EXPECT_EQ(a.memory_mib, 81559);
  EXPECT_EQ(a.pci_bus_id, "00000000:18:00.0");
  EXPECT_TRUE(a.mig_capable);
  EXPECT_FALSE(a.mig_enabled);
  EXPECT_TRUE(a.ecc_enabled);
  EXPECT_EQ(ComputeModeName(a.compute_mode), "Exclusive_Process");
  EXPECT_EQ(a.nvlink_peers, std::vector<uint32_t>{1});
  const GpuInfo& b = found->gpus[1];
  EXPECT_EQ(ComputeModeName(b.compute_mode), "Default");
  EXPECT_TRUE(b.mig_enabled);
  ASSERT_EQ(b.mig_devices.size(), 2u);
  EXPECT_EQ(b.mig_devices[1].uuid, "MIG-2222");
  EXPECT_EQ(b.mig_devices[1].memory_mib, 19968);
  EXPECT_EQ(b.mig_devices[1].gpu_instance_id, 3);
  EXPECT_EQ(b.nvlink_peers, std::vector<uint32_t>{0});
  const GpuInfo& t4 = found->gpus[2];
  EXPECT_EQ(t4.product, "T4");
  EXPECT_FALSE(t4.mig_capable);
  EXPECT_TRUE(t4.nvlink_peers.empty());

  auto samples = (*nvml)->Sample();
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 3u);
  const GpuSample& s = (*samples)[0];
  EXPECT_EQ(s.utilization_pct, 37u);
  EXPECT_EQ(s.memory_used_mib, 1024);
  EXPECT_EQ(s.memory_free_mib, 81559 - 1024);
  EXPECT_EQ(s.temperature_c, 41u);
  EXPECT_EQ(s.power_mw, 120000u);
  EXPECT_EQ(s.sm_clock_mhz, 1980u);
  EXPECT_EQ(s.ecc_corrected, 3u);
  EXPECT_EQ(s.nvlink_data_kib, 7500u);                      // sent plus received
  EXPECT_FALSE((*samples)[2].nvlink_data_kib.has_value());  // the T4 has no NVLink
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].pid, 4242u);
  EXPECT_EQ(s.processes[0].used_memory_mib, 1000);
}

TEST_F(NvmlTest, MissingLibraryOrSymbolIsAClearError) {
  auto none = Nvml::Load("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("cannot load NVML"), std::string::npos);
  auto partial = Nvml::Load(TESSERA_FAKE_NVML_NO_PCI_LIB);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("lacks nvmlDeviceGetPciInfo_v3"), std::string::npos)
      << partial.status().message();
  unsetenv("TESSERA_FAKE_NVML");
  auto no_driver = Nvml::Load(TESSERA_FAKE_NVML_LIB);
  ASSERT_FALSE(no_driver.ok());
  EXPECT_NE(no_driver.status().message().find("NVML init failed"), std::string::npos);
}

TEST(FakeGpus, DeterministicInventory) {
  auto a = FakeGpus("8xH100-80GB,2xT4", "node-1");
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a->gpus.size(), 10u);
  EXPECT_EQ(a->gpus[0].product, "H100-80GB");
  EXPECT_EQ(a->gpus[9].product, "T4");
  EXPECT_EQ(a->gpus[0].nvlink_peers.size(), 7u);
  EXPECT_TRUE(a->gpus[8].nvlink_peers.empty());
  EXPECT_EQ(a->gpus[0].numa_node, 0);
  EXPECT_EQ(a->gpus[9].numa_node, 1);
  EXPECT_EQ(FakeGpus("8xH100-80GB,2xT4", "node-1")->gpus[3].uuid, a->gpus[3].uuid);
  EXPECT_NE(FakeGpus("8xH100-80GB,2xT4", "node-2")->gpus[3].uuid, a->gpus[3].uuid);
  EXPECT_NE(FakeGpus("2xB300", "n").status().message().find("unknown product"), std::string::npos);
  EXPECT_FALSE(FakeGpus("0xT4", "n").ok());
  EXPECT_FALSE(FakeGpus("T4", "n").ok());
}

TEST(ProductName, FromNvmlNames) {
  EXPECT_EQ(ProductName("NVIDIA H100 80GB HBM3", 81559), "H100-80GB");
  EXPECT_EQ(ProductName("NVIDIA H200", 143771), "H200-141GB");
  EXPECT_EQ(ProductName("Tesla T4", 15360), "T4");
  EXPECT_EQ(ProductName("NVIDIA A100-SXM4-80GB", 81920), "A100-80GB");
  EXPECT_EQ(ProductName("NVIDIA A100-PCIE-40GB", 40960), "A100-40GB");
  EXPECT_EQ(ProductName("Tesla V100-SXM2-32GB", 32768), "V100-32GB");
  EXPECT_EQ(ProductName("NVIDIA L4", 23034), "L4");
}

TEST(NodeObject, LabelsGpusAndTopologyForTheScheduler) {
  auto gpus = FakeGpus("2xH100-80GB,1xT4", "n1");
  ASSERT_TRUE(gpus.ok());
  NodeIdentity id;
  id.name = "n1";
  id.labels = {{"team", "a"}, {"nvidia.com/gpu.product", "overridden"}};
  id.cpu_milli = 62000;
  id.memory_mib = 500000;
  const nlohmann::json node = NodeObject(id, *gpus, "2026-01-01T00:00:00.000Z");
  const auto& labels = node["metadata"]["labels"];
  EXPECT_EQ(labels["nvidia.com/gpu.count"], "3");
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "overridden");  // the user's label wins
  EXPECT_EQ(labels["nvidia.com/mig.capable"], "true");
  EXPECT_EQ(labels["tessera.io/simulated"], "true");
  const auto& list = node["status"]["gpus"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["nvlinkDomain"], 0);
  EXPECT_EQ(list[1]["nvlinkDomain"], 0);
  EXPECT_FALSE(list[2].contains("nvlinkDomain"));
  EXPECT_EQ(node["status"]["allocatable"]["cpu"], "62000m");
  EXPECT_EQ(ParseTaints("a=b:NoSchedule,c:PreferNoSchedule")->size(), 2u);
  EXPECT_FALSE(ParseTaints("a=b:Sometimes").ok());
  EXPECT_FALSE(ParseLabels("novalue").ok());
}

TEST(DeviceEnv, WholeShareMigAndNone) {
  NodeGpus gpus;
  GpuInfo g;
  g.uuid = "GPU-1";
  g.mig_devices = {{"MIG-a", 9728, 7, 0}, {"MIG-b", 19968, 3, 0}};
  gpus.gpus.push_back(g);
  using nlohmann::json;
  auto whole = DeviceEnv(json::parse(R"([{"kind":"whole","uuid":"GPU-1"},
                                         {"kind":"whole","uuid":"GPU-2"}])"),
                         gpus);
  EXPECT_EQ(whole["CUDA_VISIBLE_DEVICES"], "GPU-1,GPU-2");
  EXPECT_EQ(whole["NVIDIA_VISIBLE_DEVICES"], "GPU-1,GPU-2");
  auto share = DeviceEnv(
      json::parse(R"([{"kind":"share","uuid":"GPU-1","milli":500,"memoryMiB":4096}])"), gpus);
  EXPECT_EQ(share["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "50");
  EXPECT_EQ(share["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=4096M");
  EXPECT_EQ(share["TESSERA_GPU_KIND"], "share");
  EXPECT_EQ(share["TESSERA_SHARE_MEMORY_MIB"], "4096");
  EXPECT_EQ(share["TESSERA_SHARE_COMPUTE_PERCENT"], "50");
  EXPECT_FALSE(whole.contains("TESSERA_SHARE_MEMORY_MIB"));
  // A 2g.20gb binding (19,968 MiB) takes the discovered MIG device of that size.
  auto mig = DeviceEnv(
      json::parse(R"([{"kind":"mig","uuid":"GPU-1","memoryMiB":19968,"migInstance":4}])"), gpus);
  EXPECT_EQ(mig["CUDA_VISIBLE_DEVICES"], "MIG-b");
  auto unknown = DeviceEnv(
      json::parse(R"([{"kind":"mig","uuid":"GPU-9","memoryMiB":4864,"migInstance":2}])"), gpus);
  EXPECT_EQ(unknown["CUDA_VISIBLE_DEVICES"], "MIG-GPU-9/2");
  auto none = DeviceEnv(json::array(), gpus);
  EXPECT_EQ(none["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(none["NVIDIA_VISIBLE_DEVICES"], "void");
}

// Pod main-0 of job `ns`/train, without devices, running `task`.
Assignment TrainPod(const std::string& ns, const std::string& task) {
  Assignment a;
  a.ns = ns;
  a.job = "train";
  a.pod = "main-0";
  a.key = ns + "/train/main-0";
  a.devices = nlohmann::json::array();
  a.task = nlohmann::json::parse(task);
  return a;
}

TEST(SpecFor, CommandsImagesAndWhatCannotRun) {
  NodeGpus gpus;
  Assignment a = TrainPod("team-a", R"({"name":"main","command":["python"],"args":["train.py"],
                                        "env":{"EPOCHS":"3"}})");
  a.devices = nlohmann::json::parse(R"([{"kind":"whole","uuid":"GPU-7"}])");
  auto spec = SpecFor(a, gpus, "n1", "/var/lib/t", "");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(spec->env.at("EPOCHS"), "3");
  EXPECT_EQ(spec->env.at("CUDA_VISIBLE_DEVICES"), "GPU-7");
  EXPECT_EQ(spec->env.at("TESSERA_POD"), "main-0");
  EXPECT_EQ(spec->log_path, "/var/lib/t/logs/team-a/train/main-0.log");
  a.task["image"] = "pytorch:2";
  auto no_runtime = SpecFor(a, gpus, "n1", "/r", "");
  ASSERT_FALSE(no_runtime.ok());
  // The message says what was looked for and how to name a runtime.
  EXPECT_NE(no_runtime.status().message().find("none of podman, docker, nerdctl"),
            std::string::npos)
      << no_runtime.status().message();
  EXPECT_NE(no_runtime.status().message().find("--container-runtime"), std::string::npos);
  a.cpu_milli = 2500;
  a.memory_mib = 4096;
  auto docker = SpecFor(a, gpus, "n1", "/r", "docker");
  ASSERT_TRUE(docker.ok());
  const std::vector<std::string>& argv = docker->argv;
  EXPECT_EQ(argv[0], "docker");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "nvidia.com/gpu=GPU-7"), argv.end());
  // Named after the pod, with the pod's CPU and memory as the runtime's limits.
  EXPECT_EQ(
      std::vector<std::string>(argv.begin(), argv.begin() + 5),
      (std::vector<std::string>{"docker", "run", "--rm", "--name", "tessera-team-a_train_main-0"}));
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--cpus=2.500"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--memory=4096m"), argv.end());
  EXPECT_EQ(argv[argv.size() - 3], "pytorch:2");
  a.task.erase("image");
  a.task.erase("command");
  a.task.erase("args");
  EXPECT_FALSE(SpecFor(a, gpus, "n1", "/r", "").ok());
}

// A fractional share's task runs with the interposer preloaded before its own preloads, counting
// in a region of its pod's; a container gets both mounted. Whole cards and a node without the
// interposer get neither.
TEST(SpecFor, ASharesTaskRunsWithTheInterposer) {
  NodeGpus gpus;
  Assignment a = TrainPod("team-a", R"({"name":"main","command":["python"],
                                        "env":{"LD_PRELOAD":"libjemalloc.so.2"}})");
  a.devices = nlohmann::json::parse(R"([{"kind":"share","uuid":"GPU-7","milli":500,
                                          "memoryMiB":4096}])");
  const std::string lib = "/opt/tessera/libtessera-share.so";
  auto spec = SpecFor(a, gpus, "n1", "/var/lib/t", "", {lib});
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const std::string dir = "/var/lib/t/work/team-a/train/main-0/.tessera-share";
  EXPECT_EQ(spec->env.at("LD_PRELOAD"), lib + ":libjemalloc.so.2");
  EXPECT_EQ(spec->env.at("TESSERA_SHARE_REGION"), dir + "/region");
  EXPECT_EQ(spec->env.at("TESSERA_SHARE_MEMORY_MIB"), "4096");
  EXPECT_EQ(spec->open_dirs, std::vector<std::string>{dir});

  a.task["image"] = "pytorch:2";
  a.task["env"].erase("LD_PRELOAD");
  auto contained = SpecFor(a, gpus, "n1", "/var/lib/t", "podman", {lib});
  ASSERT_TRUE(contained.ok());
  const std::vector<std::string>& argv = contained->argv;
  auto has = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == flag && argv[i + 1] == value) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("-v", lib + ":" + kInterposerInContainer + ":ro"));
  EXPECT_TRUE(has("-v", dir + ":" + kShareDirInContainer));
  EXPECT_TRUE(has("-e", std::string("LD_PRELOAD=") + kInterposerInContainer));
  EXPECT_TRUE(has("-e", std::string("TESSERA_SHARE_REGION=") + kShareDirInContainer + "/region"));

  a.task.erase("image");
  auto without = SpecFor(a, gpus, "n1", "/var/lib/t", "", {});
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without->env.contains("LD_PRELOAD"));
  EXPECT_TRUE(without->open_dirs.empty());
  a.devices = nlohmann::json::parse(R"([{"kind":"whole","uuid":"GPU-7"}])");
  auto whole = SpecFor(a, gpus, "n1", "/var/lib/t", "", {lib});
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(whole->env.contains("LD_PRELOAD"));
  EXPECT_FALSE(whole->env.contains("TESSERA_SHARE_REGION"));
}

// A share on a card whose MPS server runs: the server's directories, no interposer; in a
// container, the directory mounted and the host's IPC namespace.
TEST(SpecFor, AShareThroughMpsGetsItsCardsServer) {
  NodeGpus gpus;
  Assignment a = TrainPod("team-a", R"({"name":"main","command":["python"]})");
  a.devices = nlohmann::json::parse(R"([{"kind":"share","uuid":"GPU-7","milli":300,
                                          "memoryMiB":4096,"mps":true}])");
  ShareIsolation isolation{"/opt/libtessera-share.so", {{"GPU-7", "/var/lib/t/mps/GPU-7"}}};
  auto spec = SpecFor(a, gpus, "n1", "/var/lib/t", "", isolation);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->env.at("CUDA_MPS_PIPE_DIRECTORY"), "/var/lib/t/mps/GPU-7/pipe");
  EXPECT_EQ(spec->env.at("CUDA_MPS_LOG_DIRECTORY"), "/var/lib/t/mps/GPU-7/log");
  EXPECT_EQ(spec->env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4096M");
  EXPECT_EQ(spec->env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
  EXPECT_EQ(spec->env.at("TESSERA_SHARE_ISOLATION"), "mps");
  EXPECT_FALSE(spec->env.contains("LD_PRELOAD"));
  a.task["image"] = "pytorch:2";
  auto contained = SpecFor(a, gpus, "n1", "/var/lib/t", "podman", isolation);
  ASSERT_TRUE(contained.ok());
  const std::vector<std::string>& argv = contained->argv;
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--ipc=host"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "/var/lib/t/mps/GPU-7:/var/lib/t/mps/GPU-7"),
            argv.end());
  // Another card's server is not this share's: the interposer holds it.
  a.task.erase("image");
  isolation.mps = {{"GPU-8", "/var/lib/t/mps/GPU-8"}};
  auto other = SpecFor(a, gpus, "n1", "/var/lib/t", "", isolation);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->env.at("TESSERA_SHARE_ISOLATION"), "interposer");
  EXPECT_FALSE(other->env.contains("CUDA_MPS_PIPE_DIRECTORY"));
}

// The MPS control daemon per card, with a stand-in for nvidia-cuda-mps-control that records
// how it was run.
TEST(MpsServers, StartedPerCardInExclusiveProcessModeOnlyAndStoppedWhenUnused) {
  char tmpl[] = "/tmp/tessera-mps-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, control = dir + "/mps-control", calls = dir + "/calls";
  std::ofstream(control)
      << "#!/bin/sh\n"
         "input=$(cat)\n"
         "echo \"args=$* gpu=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY "
         "log=$CUDA_MPS_LOG_DIRECTORY input=$input\" >> "
      << calls << "\n"
      << "[ ! -e " << dir << "/fail ]\n";
  std::filesystem::permissions(control, std::filesystem::perms::owner_all);
  auto lines = [&] {
    std::vector<std::string> out;
    std::ifstream in(calls);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  GpuInfo exclusive;
  exclusive.uuid = "GPU-1";
  exclusive.compute_mode = 3;  // NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
  GpuInfo shared_mode = exclusive;
  shared_mode.uuid = "GPU-2";
  shared_mode.index = 1;
  shared_mode.compute_mode = 0;
  {
    MpsServers servers(control, dir + "/root");
    auto refused = servers.Ensure(shared_mode);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("compute mode Default, not Exclusive_Process"),
              std::string::npos)
        << refused.status().message();
    EXPECT_TRUE(lines().empty());  // not started, and the mode left alone
    auto started = servers.Ensure(exclusive);
    ASSERT_TRUE(started.ok()) << started.status().message();
    EXPECT_EQ(*started, dir + "/root/mps/GPU-1");
    EXPECT_TRUE(std::filesystem::is_directory(*started + "/pipe"));
    EXPECT_TRUE(std::filesystem::is_directory(*started + "/log"));
    ASSERT_TRUE(servers.Ensure(exclusive).ok());  // running: not started twice
    servers.StopUnused({"GPU-1"});
    ASSERT_EQ(lines().size(), 1u);
    EXPECT_EQ(lines()[0],
              "args=-d gpu=GPU-1 pipe=" + *started + "/pipe log=" + *started + "/log input=");
    servers.StopUnused({});
    ASSERT_EQ(lines().size(), 2u);
    EXPECT_EQ(lines()[1],
              "args= gpu=GPU-1 pipe=" + *started + "/pipe log=" + *started + "/log input=quit");
    ASSERT_TRUE(servers.Ensure(exclusive).ok());  // started again; stopped at the end
  }
  EXPECT_EQ(lines().size(), 4u);
  // A daemon that does not start, and MPS off.
  std::ofstream(dir + "/fail") << "";
  MpsServers failing(control, dir + "/root");
  auto failed = failing.Ensure(exclusive);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("did not start"), std::string::npos);
  EXPECT_NE(failed.status().message().find("exit 1"), std::string::npos);
  EXPECT_FALSE(MpsServers("", dir).Ensure(exclusive).ok());
  std::filesystem::remove_all(dir);
}

TEST(ContainerRuntime, NamedFoundOnPathOrNone) {
  char tmpl[] = "/tmp/tessera-runtime-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, a = dir + "/a", b = dir + "/b";
  std::filesystem::create_directories(a);
  std::filesystem::create_directories(b);
  auto touch = [](const std::string& path, bool exec) {
    std::ofstream(path) << "#!/bin/sh\n";
    std::filesystem::permissions(
        path, exec ? std::filesystem::perms::owner_all : std::filesystem::perms::owner_read);
  };
  // Nothing on the path: none; a runtime named is taken as it is; "none" is none.
  EXPECT_EQ(FindContainerRuntime("", a + ":" + b), "");
  EXPECT_EQ(FindContainerRuntime("/opt/x/podman", a), "/opt/x/podman");
  EXPECT_EQ(FindContainerRuntime("none", a), "");
  // podman before docker, whatever the directories' order; a file that cannot run is passed.
  touch(a + "/docker", true);
  touch(b + "/podman", false);
  EXPECT_EQ(FindContainerRuntime("", a + ":" + b), a + "/docker");
  touch(b + "/podman", true);
  EXPECT_EQ(FindContainerRuntime("", a + "::" + b), b + "/podman");
  std::filesystem::remove_all(dir);
}

// A member of a distributed job: where it meets the others, as the training operator and
// Volcano say it.
TEST(SpecFor, DistributedJobsMeetAtTheirFirstPod) {
  const nlohmann::json jobs = nlohmann::json::parse(R"([{
    "metadata": {"name": "ddp", "namespace": "ml"},
    "spec": {"tasks": [{"name": "master", "command": ["python"]},
                       {"name": "worker", "replicas": 3, "command": ["python"]}]},
    "status": {"phase": "Admitted",
      "rendezvous": {"masterNode": "n1", "masterAddr": "10.0.0.1", "masterPort": 29501,
                     "worldSize": 4},
      "pods": [{"name": "master-0", "node": "n1", "address": "10.0.0.1"},
               {"name": "worker-0", "node": "n1", "address": "10.0.0.1"},
               {"name": "worker-1", "node": "n2", "address": "10.0.0.2"},
               null]}}])");
  const std::vector<Assignment> on_n2 = AssignedTo(jobs, "n2");
  ASSERT_EQ(on_n2.size(), 1u);
  NodeGpus gpus;
  auto spec = SpecFor(on_n2[0], gpus, "n2", "/r", "");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const std::map<std::string, std::string>& env = spec->env;
  EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29501");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("RANK"), "2");
  EXPECT_EQ(env.at("PET_NODE_RANK"), "2");
  EXPECT_EQ(env.at("PET_NNODES"), "4");
  EXPECT_EQ(env.at("VC_TASK_INDEX"), "1");
  EXPECT_EQ(env.at("VC_MASTER_HOSTS"), "10.0.0.1");
  EXPECT_EQ(env.at("VC_MASTER_NUM"), "1");
  EXPECT_EQ(env.at("VC_WORKER_HOSTS"), "10.0.0.1,10.0.0.2");  // worker-2 not placed yet
  EXPECT_EQ(env.at("VC_WORKER_NUM"), "3");
  const std::string hostfile = "/r/work/ml/ddp/worker-1/hostfile";
  EXPECT_EQ(env.at("TESSERA_HOSTFILE"), hostfile);
  EXPECT_EQ(spec->files.at(hostfile), "10.0.0.1 slots=2\n10.0.0.2 slots=1\n");
  // In a container the hostfile is mounted where the variable says.
  nlohmann::json imaged = jobs;
  imaged[0]["spec"]["tasks"][1]["image"] = "pytorch:2";
  auto container = SpecFor(AssignedTo(imaged, "n2")[0], gpus, "n2", "/r", "podman");
  ASSERT_TRUE(container.ok());
  EXPECT_NE(
      std::find(container->argv.begin(), container->argv.end(), hostfile + ":" + hostfile + ":ro"),
      container->argv.end());
  // A job of one pod has none of it.
  nlohmann::json single = jobs;
  single[0]["status"].erase("rendezvous");
  auto alone = SpecFor(AssignedTo(single, "n2")[0], gpus, "n2", "/r", "");
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->env.contains("MASTER_ADDR"));
  EXPECT_TRUE(alone->files.empty());
}

// An Indexed array's task gets its index as Kubernetes gives it: JOB_COMPLETION_INDEX, and a
// variable of the downward API naming the job-completion-index annotation.
TEST(SpecFor, AnIndexedTaskGetsItsCompletionIndex) {
  const nlohmann::json jobs = nlohmann::json::parse(R"([{
    "metadata": {"name": "arr", "namespace": "ml"},
    "spec": {"completions": 100, "completionMode": "Indexed",
             "tasks": [{"name": "main", "replicas": 2, "command": ["true"],
                        "fieldEnv": {"IDX": "completionIndex"}}]},
    "status": {"phase": "Admitted", "succeeded": 40,
      "pods": [{"name": "main-41", "node": "n1", "index": 41},
               {"name": "main-17-1", "node": "n1", "index": 17}]}}])");
  const std::vector<Assignment> on_n1 = AssignedTo(jobs, "n1");
  ASSERT_EQ(on_n1.size(), 2u);
  NodeGpus gpus;
  auto spec = SpecFor(on_n1[1], gpus, "n1", "/r", "");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->env.at("JOB_COMPLETION_INDEX"), "17");
  EXPECT_EQ(spec->env.at("IDX"), "17");
  EXPECT_EQ(spec->env.at("TESSERA_POD"), "main-17-1");
  // NonIndexed: no index.
  nlohmann::json plain = jobs;
  plain[0]["spec"].erase("completionMode");
  auto unindexed = SpecFor(AssignedTo(plain, "n1")[0], gpus, "n1", "/r", "");
  ASSERT_TRUE(unindexed.ok());
  EXPECT_FALSE(unindexed->env.contains("JOB_COMPLETION_INDEX"));
  EXPECT_FALSE(unindexed->env.contains("IDX"));
}

// A TFJob's pods: TF_CONFIG lists every server (but the evaluator) at its node's address and
// its own port, and names the pod's own task and index.
TEST(SpecFor, TensorFlowPodsGetTfConfig) {
  const nlohmann::json jobs = nlohmann::json::parse(R"([{
    "metadata": {"name": "tf", "namespace": "ml"},
    "spec": {"tfConfig": true,
             "tasks": [{"name": "chief", "command": ["python"]},
                       {"name": "ps", "command": ["python"]},
                       {"name": "worker", "replicas": 2, "command": ["python"]},
                       {"name": "evaluator", "command": ["python"]}]},
    "status": {"phase": "Admitted",
      "rendezvous": {"masterNode": "n1", "masterAddr": "10.0.0.1", "masterPort": 29500,
                     "worldSize": 5},
      "pods": [{"name": "chief-0", "node": "n1", "address": "10.0.0.1", "port": 29500},
               {"name": "ps-0", "node": "n1", "address": "10.0.0.1", "port": 29501},
               {"name": "worker-0", "node": "n2", "address": "10.0.0.2", "port": 29500},
               {"name": "worker-1", "node": "n2", "address": "10.0.0.2", "port": 29501},
               {"name": "evaluator-0", "node": "n2", "address": "10.0.0.2", "port": 29502}]}}])");
  const std::vector<Assignment> on_n2 = AssignedTo(jobs, "n2");
  ASSERT_EQ(on_n2.size(), 3u);
  NodeGpus gpus;
  auto spec = SpecFor(on_n2[1], gpus, "n2", "/r", "");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->env.at("TESSERA_PORT"), "29501");
  EXPECT_EQ(nlohmann::json::parse(spec->env.at("TF_CONFIG")), nlohmann::json::parse(R"({
      "cluster": {"chief": ["10.0.0.1:29500"], "ps": ["10.0.0.1:29501"],
                  "worker": ["10.0.0.2:29500", "10.0.0.2:29501"]},
      "task": {"type": "worker", "index": 1}, "environment": "cloud"})"));
  nlohmann::json plain = jobs;
  plain[0]["spec"].erase("tfConfig");
  EXPECT_FALSE(
      SpecFor(AssignedTo(plain, "n2")[1], gpus, "n2", "/r", "")->env.contains("TF_CONFIG"));
}

// An MPI launcher gets a hostfile of its workers' pods and an rsh agent that reaches them
// through tessera exec with its Job's token, which only its user can read.
TEST(SpecFor, AnMpiLauncherReachesItsWorkersThroughExec) {
  char tmpl[] = "/tmp/tessera-mpi-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const nlohmann::json jobs = nlohmann::json::parse(R"([{
    "metadata": {"name": "pi", "namespace": "ml"},
    "spec": {"mpi": {"launcher": "launcher", "slotsPerWorker": 4},
             "tasks": [{"name": "launcher", "command": ["mpirun", "pi"]},
                       {"name": "worker", "replicas": 2, "command": ["sleep", "365d"]}]},
    "status": {"phase": "Admitted",
      "rendezvous": {"masterNode": "n1", "masterAddr": "10.0.0.1", "masterPort": 29501,
                     "worldSize": 3},
      "pods": [{"name": "launcher-0", "node": "n1", "address": "10.0.0.1"},
               {"name": "worker-0", "node": "n1", "address": "10.0.0.1"},
               {"name": "worker-1", "node": "n2", "address": "10.0.0.2"}]}}])");
  const std::vector<Assignment> on_n1 = AssignedTo(jobs, "n1");
  ASSERT_EQ(on_n1.size(), 2u);
  EXPECT_TRUE(on_n1[0].mpi_launcher());
  EXPECT_FALSE(on_n1[1].mpi_launcher());
  NodeGpus gpus;
  auto spec = SpecFor(on_n1[0], gpus, "n1", root, "");
  ASSERT_TRUE(spec.ok());
  LauncherAccess access{"/usr/bin/tessera", "https://cp:8443", "/etc/ca.pem", "id.secret"};
  ASSERT_TRUE(SetUpMpiLauncher(on_n1[0], access, &*spec).ok());
  const std::string dir = root + "/work/ml/pi/launcher-0/mpi";
  EXPECT_EQ(spec->env.at("OMPI_MCA_orte_default_hostfile"), dir + "/hostfile");
  EXPECT_EQ(spec->env.at("OMPI_MCA_plm_rsh_agent"), dir + "/rsh");
  EXPECT_EQ(spec->env.at("OMPI_MCA_plm_rsh_no_tree_spawn"), "1");
  EXPECT_EQ(spec->env.at("I_MPI_HYDRA_HOST_FILE"), dir + "/hostfile");
  EXPECT_EQ(spec->files.at(dir + "/hostfile"), "worker-0 slots=4\nworker-1 slots=4\n");
  const std::string& rsh = spec->files.at(dir + "/rsh");
  EXPECT_NE(rsh.find("TESSERA_TOKEN=$(cat '" + dir +
                     "/token') exec '/usr/bin/tessera' exec "
                     "--server 'https://cp:8443' --ca-file '/etc/ca.pem' -n 'ml' 'pi' -p \"$pod\""),
            std::string::npos)
      << rsh;
  EXPECT_TRUE(spec->executables.contains(dir + "/rsh"));
  std::ifstream token(dir + "/token");
  std::string got;
  std::getline(token, got);
  EXPECT_EQ(got, "id.secret");
  struct stat st {};
  ASSERT_EQ(stat((dir + "/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::filesystem::remove_all(root);
}

// A host as the driver shows it, under a temporary root: two GPUs (one with a MIG device),
// their minors, MIG capabilities, control nodes and libraries.
class CdiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-cdi-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    Write("/proc/driver/nvidia/gpus/0000:65:00.0/information", "Model: H100\nDevice Minor: 0\n");
    Write("/proc/driver/nvidia/gpus/0000:b3:00.0/information", "Model: A100\nDevice Minor: 3\n");
    Write("/proc/driver/nvidia-caps/mig-minors",
          "config 1\nmonitor 2\ngpu3/gi1/access 21\ngpu3/gi1/ci0/access 22\n");
    for (const char* f :
         {"/dev/nvidiactl", "/dev/nvidia-uvm", "/usr/bin/nvidia-smi",
          "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
          "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
      Write(f, "");
    }
    GpuInfo a;
    a.index = 0;
    a.uuid = "GPU-a";
    a.pci_bus_id = "00000000:65:00.0";
    GpuInfo b;
    b.index = 1;
    b.uuid = "GPU-b";
    b.pci_bus_id = "00000000:B3:00.0";
    b.mig_devices.push_back({"MIG-b1", 10240, 1, 0});
    gpus_.source = "nvml";
    gpus_.gpus = {a, b};
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << text;
  }

  std::string root_;
  NodeGpus gpus_;
};

TEST_F(CdiTest, TheSpecNamesEachCardItsNodeAndTheDriversFiles) {
  auto spec = CdiSpec(gpus_, root_);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ((*spec)["cdiVersion"], "0.5.0");
  EXPECT_EQ((*spec)["kind"], "nvidia.com/gpu");
  const nlohmann::json& devices = (*spec)["devices"];
  ASSERT_EQ(devices.size(), 5u);  // by UUID and by index, and the MIG device
  EXPECT_EQ(devices[0]["name"], "GPU-a");
  EXPECT_EQ(devices[0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia0");
  EXPECT_EQ(devices[3]["name"], "1");
  EXPECT_EQ(devices[3]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia3");
  EXPECT_EQ(devices[4]["name"], "MIG-b1");
  EXPECT_EQ(devices[4]["containerEdits"]["deviceNodes"],
            nlohmann::json::parse(R"([{"path": "/dev/nvidia3"},
                {"path": "/dev/nvidia-caps/nvidia-cap21"},
                {"path": "/dev/nvidia-caps/nvidia-cap22"}])"));
  const nlohmann::json& common = (*spec)["containerEdits"];
  EXPECT_EQ(common["deviceNodes"],
            nlohmann::json::parse(R"([{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}])"));
  std::vector<std::string> mounted;
  for (const nlohmann::json& m : common["mounts"]) {
    EXPECT_EQ(m["hostPath"], m["containerPath"]);
    mounted.push_back(m["hostPath"]);
  }
  EXPECT_EQ(mounted, (std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                               "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                                               "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                                               "/usr/bin/nvidia-smi"}));
  // A card the driver does not show cannot be described.
  gpus_.gpus[0].pci_bus_id = "00000000:01:00.0";
  auto missing = CdiSpec(gpus_, root_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("GPU-a"), std::string::npos);
  // ... and then nothing is written, not even the directory.
  EXPECT_FALSE(EnsureCdiSpec(gpus_, root_, "").ok());
  EXPECT_FALSE(std::filesystem::exists(root_ + "/var/run/cdi"));
}

TEST_F(CdiTest, AnExistingSpecIsKeptElseNvidiaCtkOrTesserasOwnIsWritten) {
  // No spec, no nvidia-ctk: Tessera writes its own.
  auto done = EnsureCdiSpec(gpus_, root_, root_ + "/nowhere");
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_NE(done->find("written"), std::string::npos);
  std::ifstream written(root_ + "/var/run/cdi/tessera-nvidia.json");
  const nlohmann::json spec = nlohmann::json::parse(written, nullptr, false);
  EXPECT_EQ(spec["kind"], "nvidia.com/gpu");
  // Now there is one: kept.
  done = EnsureCdiSpec(gpus_, root_, "");
  ASSERT_TRUE(done.ok());
  EXPECT_NE(done->find("found: /var/run/cdi/tessera-nvidia.json"), std::string::npos) << *done;
  // With nvidia-ctk on PATH and no spec, it generates one.
  std::filesystem::remove_all(root_ + "/var/run/cdi");
  Write("/bin/nvidia-ctk", "#!/bin/sh\necho \"$@\" > \"${3#--output=}\"\n");
  std::filesystem::permissions(root_ + "/bin/nvidia-ctk", std::filesystem::perms::owner_all);
  done = EnsureCdiSpec(gpus_, root_, root_ + "/bin");
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_NE(done->find("generated by"), std::string::npos);
  std::ifstream generated(root_ + "/var/run/cdi/nvidia.yaml");
  std::string args;
  std::getline(generated, args);
  EXPECT_EQ(args, "cdi generate --output=" + root_ + "/var/run/cdi/nvidia.yaml");
}

// What a translated Kubernetes pod spec asks of the agent: downward-API fields known only on
// the node, volumes, the working directory and the image pull policy.
TEST(SpecFor, DownwardApiVolumesWorkingDirAndPullPolicy) {
  NodeGpus gpus;
  Assignment a = TrainPod("ml", R"({"name":"main","command":["python"],
      "workingDir":"/srv",
      "fieldEnv":{"POD":"metadata.name","NODE":"spec.nodeName","IP":"status.podIP"},
      "volumes":[{"name":"data","mountPath":"/data","hostPath":"/mnt/data","readOnly":true},
                 {"name":"scratch-1","mountPath":"/scratch","emptyDir":true}]})");
  auto spec = SpecFor(a, gpus, "n1", "/r", "");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->env.at("POD"), "train-main-0");
  EXPECT_EQ(spec->env.at("NODE"), "n1");
  EXPECT_FALSE(spec->env.at("IP").empty());
  EXPECT_EQ(spec->env.at("TESSERA_VOLUME_DATA"), "/mnt/data");
  EXPECT_EQ(spec->env.at("TESSERA_VOLUME_SCRATCH_1"), "/r/work/ml/train/main-0/volumes/scratch-1");
  EXPECT_EQ(spec->dirs, (std::vector<std::string>{"/r/work/ml/train/main-0/volumes/scratch-1"}));
  EXPECT_EQ(spec->cwd, "/srv");
  a.task["image"] = "pytorch:2";
  a.task["imagePullPolicy"] = "Never";
  auto podman = SpecFor(a, gpus, "n1", "/r", "podman");
  ASSERT_TRUE(podman.ok()) << podman.status().message();
  const std::vector<std::string>& argv = podman->argv;
  auto has = [&](const std::string& x) {
    return std::find(argv.begin(), argv.end(), x) != argv.end();
  };
  EXPECT_TRUE(has("--pull=never"));
  EXPECT_TRUE(has("/mnt/data:/data:ro"));
  EXPECT_TRUE(has("/r/work/ml/train/main-0/volumes/scratch-1:/scratch"));
  EXPECT_TRUE(has("-w") && has("/srv"));
}

// Kubernetes' dependent environment variables: $(VAR) in env values, command and args.
TEST(SpecFor, ExpandsVariableReferencesAsKubernetesDoes) {
  NodeGpus gpus;
  Assignment a = TrainPod("ml", R"json({"name":"main",
      "command":["torchrun", "--master_port=$(PORT)", "--node=$(TESSERA_NODE)"],
      "args":["$(MISSING)", "$$(PORT)", "cost: 5$"],
      "env":{"PORT":"29500","URL":"tcp://$(HOST):$(PORT)","HOST":"h1","SELF":"$(SELF)x"}})json");
  auto spec = SpecFor(a, gpus, "n1", "/r", "");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"torchrun", "--master_port=29500", "--node=n1",
                                                  "$(MISSING)", "$(PORT)", "cost: 5$"}));
  EXPECT_EQ(spec->env.at("URL"), "tcp://h1:29500");
  EXPECT_EQ(spec->env.at("SELF"), "$(SELF)x");
}

}  // namespace
}  // namespace tessera::agent
