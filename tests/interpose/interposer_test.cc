// The share interposer (libtessera-share.so) on the fake driver (fake_cuda.cc): each test runs
// share_probe processes with the interposer preloaded and reads what each CUDA call returned.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/share_pids.h"

namespace {

constexpr int kOutOfMemory = 2;
constexpr int kInvalidContext = 201;

// A probe process: its output line by line, a line to its stdin, a signal.
class Probe {
 public:
  Probe(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::vector<char*> args, envp;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
      envp.push_back(nullptr);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Probe() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
  }

  // The next line of output; "" at its end, or after 20 s (the process is then killed).
  std::string Line() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (true) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{from_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        Kill();
        return "";
      }
      char chunk[4096];
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  // Every line until the output ends.
  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    for (std::string l = Line(); !l.empty(); l = Line()) lines.push_back(l);
    return lines;
  }
  void Continue() { ASSERT_EQ(write(to_, "\n", 1), 1); }
  void Kill() { kill(pid_, SIGKILL); }
  // The exit status (-1 when it did not exit normally).
  int Wait() {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

class InterposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-share-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The environment of a process of a share of `mib` MiB counted in region `region` ("": none).
  std::map<std::string, std::string> Share(int mib, const std::string& region = "a") {
    std::map<std::string, std::string> env{
        {"LD_PRELOAD", TESSERA_SHARE_LIB},
        {"LD_LIBRARY_PATH", TESSERA_FAKE_CUDA_DIR},
        {"PATH", "/usr/bin:/bin"},
    };
    if (mib > 0) env["TESSERA_SHARE_MEMORY_MIB"] = std::to_string(mib);
    if (!region.empty()) env["TESSERA_SHARE_REGION"] = (dir_ / region).string();
    return env;
  }
  static std::vector<std::string> Argv(const std::string& how, std::vector<std::string> steps) {
    steps.insert(steps.begin(), how);
    steps.insert(steps.begin(), how == "linked" ? TESSERA_SHARE_PROBE_LINKED : TESSERA_SHARE_PROBE);
    return steps;
  }
  // Runs a probe to its end; its lines.
  std::vector<std::string> Run(const std::string& how, const std::vector<std::string>& steps,
                               const std::map<std::string, std::string>& env) {
    Probe p(Argv(how, steps), env);
    std::vector<std::string> lines = p.Lines();
    EXPECT_EQ(p.Wait(), 0) << ::testing::PrintToString(lines);
    return lines;
  }

  std::filesystem::path dir_;
};

std::string Result(const std::string& line) {
  const size_t space = line.find(' ');
  return space == std::string::npos ? "" : line.substr(space + 1);
}

// Every way a program reaches the driver: dlsym (the runtime before CUDA 12),
// cuGetProcAddress_v2 and cuGetProcAddress (the runtime since 11.3), and linking.
TEST_F(InterposerTest, RefusesWhatWouldPassTheShareAndAcceptsWhatFitsAfterAFree) {
  for (const std::string how : {"dlsym", "proc", "proc11", "linked"}) {
    SCOPED_TRACE(how);
    const std::vector<std::string> lines =
        Run(how,
            {"init", "alloc", "3072", "alloc", "2048", "free", "0", "alloc", "2048", "alloc",
             "2048", "alloc", "1"},
            Share(4096, how));
    EXPECT_EQ(lines, (std::vector<std::string>{"init 0", "alloc 0", "alloc 2", "free 0", "alloc 0",
                                               "alloc 0", "alloc 2"}));
  }
}

TEST_F(InterposerTest, WithoutAShareEverythingPassesThrough) {
  EXPECT_EQ(Run("proc", {"init", "alloc", "8192", "info", "total"}, Share(0)),
            (std::vector<std::string>{"init 0", "alloc 0", "info 0 free=73728 total=81920",
                                      "total 0 total=81920"}));
}

// Each allocation path counts: 3 GiB taken by it leaves no room for 2 GiB more in a 4 GiB share,
// and its free gives the room back.
TEST_F(InterposerTest, EveryAllocationPathIsCountedAndGivenBack) {
  const std::vector<std::vector<std::string>> paths = {
      {"alloc", "3072"},
      {"managed", "3072"},
      {"async", "3072"},
      {"pool", "3072"},
      {"vmm", "3072"},
      {"external", "3072"},
      {"pitch", "1048576", "3072"},        // 1 MiB rows
      {"array", "65536", "12288"},         // 256 KiB rows of floats
      {"array3d", "1024", "1024", "768"},  // 4 MiB planes
      {"mipmap", "32768", "16384", "4"},   // 2 GiB + 512 + 128 + 32 MiB
  };
  for (const std::string how : {"dlsym", "proc", "linked"}) {
    for (const std::vector<std::string>& path : paths) {
      SCOPED_TRACE(how + " " + path[0]);
      std::vector<std::string> steps = {"init"};
      steps.insert(steps.end(), path.begin(), path.end());
      for (const char* s : {"alloc", "2048", "free", "0", "alloc", "2048"}) steps.push_back(s);
      const std::vector<std::string> lines = Run(how, steps, Share(4096, how + path[0]));
      ASSERT_EQ(lines.size(), 5u);
      EXPECT_EQ(Result(lines[1]).substr(0, 1), "0") << lines[1];
      EXPECT_EQ(lines[2], "alloc 2");
      EXPECT_EQ(lines[3], "free 0");
      EXPECT_EQ(lines[4], "alloc 0");
    }
  }
}

TEST_F(InterposerTest, TheShareIsTheCardsSizeToThePrograms) {
  EXPECT_EQ(Run("proc", {"init", "alloc", "1024", "info", "total"}, Share(4096)),
            (std::vector<std::string>{"init 0", "alloc 0", "info 0 free=3072 total=4096",
                                      "total 0 total=4096"}));
  // NVML's memory query, on the share's device (by UUID), answers the same.
  const std::filesystem::path nvml = dir_ / "nvml.json";
  std::ofstream(nvml) << R"({"devices": [{"uuid": "GPU-1", "name": "NVIDIA H100 80GB HBM3",
                             "memoryMiB": 81920, "usedMiB": 20000}]})";
  std::map<std::string, std::string> env = Share(4096);
  env["TESSERA_FAKE_NVML"] = nvml.string();
  env["TESSERA_GPU_UUIDS"] = "GPU-1";
  EXPECT_EQ(
      Run("proc", {"init", "alloc", "1024", "nvml", TESSERA_FAKE_NVML_LIB}, env),
      (std::vector<std::string>{"init 0", "alloc 0", "nvml 0 total=4096 used=1024 free=3072"}));
  // Another device's answer is the card's own.
  env["TESSERA_GPU_UUIDS"] = "GPU-2";
  EXPECT_EQ(Run("proc", {"init", "nvml", TESSERA_FAKE_NVML_LIB}, env),
            (std::vector<std::string>{"init 0", "nvml 0 total=81920 used=20000 free=61920"}));
}

TEST_F(InterposerTest, TwoProcessesOfOneShareStayUnderItTogether) {
  Probe a(Argv("proc", {"init", "alloc", "3072", "ready", "wait"}), Share(4096));
  EXPECT_EQ(a.Line(), "init 0");
  EXPECT_EQ(a.Line(), "alloc 0");
  EXPECT_EQ(a.Line(), "ready");
  EXPECT_EQ(Run("dlsym", {"init", "alloc", "2048", "alloc", "1024", "info"}, Share(4096)),
            (std::vector<std::string>{"init 0", "alloc 2", "alloc 0", "info 0 free=0 total=4096"}));
  a.Continue();
  EXPECT_EQ(a.Wait(), 0);
}

TEST_F(InterposerTest, TwoSharesOnOneCardAreLimitedSeparately) {
  Probe a(Argv("proc", {"init", "alloc", "3072", "ready", "wait"}), Share(4096, "first"));
  EXPECT_EQ(a.Line(), "init 0");
  EXPECT_EQ(a.Line(), "alloc 0");
  EXPECT_EQ(a.Line(), "ready");
  EXPECT_EQ(Run("proc", {"init", "alloc", "3072", "alloc", "2048"}, Share(4096, "second")),
            (std::vector<std::string>{"init 0", "alloc 0", "alloc 2"}));
  a.Continue();
  EXPECT_EQ(a.Wait(), 0);
}

TEST_F(InterposerTest, AProcessKilledMidRunGivesItsMemoryBack) {
  Probe a(Argv("proc", {"init", "alloc", "3072", "ready", "wait"}), Share(4096));
  EXPECT_EQ(a.Line(), "init 0");
  EXPECT_EQ(a.Line(), "alloc 0");
  EXPECT_EQ(a.Line(), "ready");
  Probe b(Argv("proc", {"init", "alloc", "3072", "ready", "wait", "alloc", "3072", "info"}),
          Share(4096));
  EXPECT_EQ(b.Line(), "init 0");
  EXPECT_EQ(b.Line(), "alloc 2");
  EXPECT_EQ(b.Line(), "ready");
  a.Kill();
  EXPECT_EQ(a.Wait(), -1);
  b.Continue();
  EXPECT_EQ(b.Line(), "alloc 0");
  EXPECT_EQ(b.Line(), "info 0 free=1024 total=4096");
  EXPECT_EQ(b.Wait(), 0);
}

// The driver's error reaches the caller, and what was reserved for the call is given back.
TEST_F(InterposerTest, AThreadWithoutAContextGetsTheDriversErrorAndLeaksNothing) {
  EXPECT_EQ(Run("proc",
                {"init", "thread", "alloc", "4096", "thread", "info", "thread", "vmm", "4096",
                 "alloc", "4096"},
                Share(4096)),
            (std::vector<std::string>{"init 0", "alloc " + std::to_string(kInvalidContext),
                                      "info " + std::to_string(kInvalidContext) + " free=0 total=0",
                                      "vmm 0", "alloc 2"}));
}

// Memory another process of the share exported is already counted; another share's is counted
// on opening, and refused when it would pass the share.
TEST_F(InterposerTest, IpcImportsCountOnlyMemoryOfAnotherShare) {
  Probe a(Argv("proc", {"init", "alloc", "1024", "export", "0", "ready", "wait"}), Share(4096));
  EXPECT_EQ(a.Line(), "init 0");
  EXPECT_EQ(a.Line(), "alloc 0");
  const std::string exported = a.Line();
  ASSERT_EQ(exported.substr(0, 16), "export 0 handle=");
  const std::string handle = exported.substr(16);
  EXPECT_EQ(a.Line(), "ready");
  EXPECT_EQ(
      Run("proc", {"init", "import", handle, "alloc", "3072", "info"}, Share(4096)),
      (std::vector<std::string>{"init 0", "import 0", "alloc 0", "info 0 free=0 total=4096"}));
  EXPECT_EQ(Run("proc",
                {"init", "alloc", "3584", "import", handle, "free", "0", "import", handle, "info"},
                Share(4096, "other")),
            (std::vector<std::string>{"init 0", "alloc 0", "import 2", "free 0", "import 0",
                                      "info 0 free=3072 total=4096"}));
  a.Continue();
  EXPECT_EQ(a.Wait(), 0);
}

// A second interposer's dlsym(RTLD_NEXT) still finds what follows it, not itself.
TEST_F(InterposerTest, RtldNextKeepsItsMeaningForLibrariesPreloadedAfter) {
  std::map<std::string, std::string> env = Share(4096);
  env["LD_PRELOAD"] = std::string(TESSERA_SHARE_LIB) + ":" + TESSERA_NEXT_PROBE_LIB;
  EXPECT_EQ(Run("linked", {"pid", "init", "alloc", "5000"}, env),
            (std::vector<std::string>{"pid 0", "init 0", "alloc 2"}));
}

// A share of 30% of the card, its kernels back to back for 10 s: they run 30% of the time
// (within a tenth of it), and waiting for the gate costs next to no CPU (no busy waiting). The
// fake driver's kernels last 5 ms; its NVML samples say when they ran.
TEST_F(InterposerTest, TheComputeLimiterHoldsThirtyPercentWithoutSpinning) {
  std::map<std::string, std::string> env = Share(0);
  env["TESSERA_SHARE_COMPUTE_PERCENT"] = "30";
  const std::vector<std::string> lines = Run("proc", {"init", "kernels", "10000", "5000"}, env);
  ASSERT_EQ(lines.size(), 2u);
  double busy = 0;
  long cpu_ms = 0;
  ASSERT_EQ(std::sscanf(lines[1].c_str(), "kernels 0 busy=%lf cpu_ms=%ld", &busy, &cpu_ms), 2)
      << lines[1];
  EXPECT_GE(busy, 27.0);
  EXPECT_LE(busy, 33.0);
  EXPECT_LT(cpu_ms, 1000);
  // Unlimited, the same kernels keep the card busy nearly all the time.
  const std::vector<std::string> free = Run("proc", {"init", "kernels", "1000", "5000"}, Share(0));
  ASSERT_EQ(free.size(), 2u);
  ASSERT_EQ(std::sscanf(free[1].c_str(), "kernels 0 busy=%lf", &busy), 1);
  EXPECT_GT(busy, 85.0);
}

// A process in a pid namespace of its own (as in a container) sees a pid that NVML's samples do
// not carry: nothing holds it until the agent maps it to its host pid (MapSharePids), after which
// the share is held as on the host.
TEST_F(InterposerTest, TheComputeLimiterHoldsAProcessInAPidNamespaceOfItsOwn) {
  if (std::system("unshare --pid --fork true > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "unshare --pid is not allowed here";
  }
  std::map<std::string, std::string> env = Share(0, "ns");
  env["TESSERA_SHARE_COMPUTE_PERCENT"] = "30";
  auto run = [&](const char* ms) {
    Probe p({"/usr/bin/unshare", "--pid", "--fork", TESSERA_SHARE_PROBE, "proc", "init", "kernels",
             ms, "5000"},
            env);
    const std::vector<std::string> lines = p.Lines();
    EXPECT_EQ(p.Wait(), 0);
    double busy = -1;
    if (lines.size() == 2) std::sscanf(lines[1].c_str(), "kernels 0 busy=%lf", &busy);
    return busy;
  };
  EXPECT_GT(run("2000"), 85.0);
  std::atomic<bool> stop{false};
  std::thread agent([&] {
    while (!stop) {
      tessera::agent::MapSharePids((dir_ / "ns").string());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const double busy = run("10000");
  stop = true;
  agent.join();
  EXPECT_GE(busy, 27.0);
  EXPECT_LE(busy, 33.0);
}

TEST_F(InterposerTest, ProgramsWithoutCudaRunAsBefore) {
  Probe p({"/bin/sh", "-c", "echo fine; ls / > /dev/null 2>&1 && echo listed"}, Share(4096));
  EXPECT_EQ(p.Lines(), (std::vector<std::string>{"fine", "listed"}));
  EXPECT_EQ(p.Wait(), 0);
}

// A region the process may not open: it counts alone, says so once, and still holds the share.
TEST_F(InterposerTest, AnUnopenableRegionFallsBackToCountingTheProcessAlone) {
  std::map<std::string, std::string> env = Share(4096);
  env["TESSERA_SHARE_REGION"] = (dir_ / "missing" / "region").string();
  EXPECT_EQ(Run("proc", {"init", "alloc", "3072", "alloc", "2048"}, env),
            (std::vector<std::string>{"init 0", "alloc 0", "alloc 2"}));
}

}  // namespace
