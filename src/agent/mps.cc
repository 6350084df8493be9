#include "agent/mps.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/nvml_abi.h"

extern char** environ;

namespace tessera::agent {

std::string ComputeModeName(int mode) {
  switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT:
      return "Default";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD:
      return "Exclusive_Thread";
    case NVML_COMPUTEMODE_PROHIBITED:
      return "Prohibited";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return "Exclusive_Process";
  }
  return "unknown";
}

std::map<std::string, std::string> MpsClientEnv(const std::string& dir) {
  return {{"CUDA_MPS_PIPE_DIRECTORY", dir + "/pipe"}, {"CUDA_MPS_LOG_DIRECTORY", dir + "/log"}};
}

MpsServers::~MpsServers() { StopUnused({}); }

int MpsServers::Control(const std::string& uuid, const std::vector<std::string>& args,
                        const std::string& input) const {
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> env_strings = {"CUDA_VISIBLE_DEVICES=" + uuid};
  for (const auto& [k, v] : MpsClientEnv(Dir(uuid))) env_strings.push_back(k + "=" + v);
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    if (var.starts_with("PATH=") || var.starts_with("LD_LIBRARY_PATH=")) {
      env_strings.emplace_back(var);
    }
  }
  std::vector<std::string> argv_strings = {control_};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, control_.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  if (spawned != 0) {
    close(in[1]);
    return -1;
  }
  if (!input.empty()) {
    ssize_t ignored = write(in[1], input.data(), input.size());
    (void)ignored;
  }
  close(in[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Result<std::string> MpsServers::Ensure(const GpuInfo& gpu) {
  if (control_.empty()) return FailedPrecondition("MPS is off on this node (--mps-control)");
  if (gpu.compute_mode != NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
    return FailedPrecondition(
        "GPU " + gpu.uuid + " is in compute mode " + ComputeModeName(gpu.compute_mode) +
        ", not Exclusive_Process, which MPS needs to hold its clients (the agent does not "
        "change GPU modes; nvidia-smi -i " +
        std::to_string(gpu.index) + " -c EXCLUSIVE_PROCESS)");
  }
  const std::string dir = Dir(gpu.uuid);
  if (running_.contains(gpu.uuid)) return dir;
  std::error_code ec;
  std::filesystem::create_directories(dir + "/pipe", ec);
  std::filesystem::create_directories(dir + "/log", ec);
  if (ec) return Internal("MPS directories " + dir + ": " + ec.message());
  const int code = Control(gpu.uuid, {"-d"}, "");
  if (code != 0) {
    return FailedPrecondition(
        "the MPS control daemon for GPU " + gpu.uuid + " did not start (" + control_ +
        " -d: " + (code < 0 ? "could not run" : "exit " + std::to_string(code)) + ")");
  }
  running_.insert(gpu.uuid);
  return dir;
}

void MpsServers::StopUnused(const std::set<std::string>& in_use) {
  for (auto it = running_.begin(); it != running_.end();) {
    if (in_use.contains(*it)) {
      ++it;
      continue;
    }
    Control(*it, {}, "quit\n");
    it = running_.erase(it);
  }
}

}  // namespace tessera::agent
