#include "agent/gpu_reset.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "api/time.h"

extern char** environ;

namespace tessera::agent {

using nlohmann::json;

Result<std::vector<std::string>> ParseResetCommand(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) return InvalidArgument("--gpu-reset-command: empty");
  return words;
}

ResetOutcome GpuResetter::Run(int64_t gpu) const {
  std::vector<std::string> words;
  for (std::string w : options_.command) {
    for (size_t at; (at = w.find("{index}")) != std::string::npos;) {
      w.replace(at, 7, std::to_string(gpu));
    }
    words.push_back(std::move(w));
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int e = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  std::string cmd;
  for (const std::string& w : words) cmd += (cmd.empty() ? "" : " ") + w;
  if (e != 0) return {gpu, false, cmd + ": cannot run: " + std::strerror(e)};
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return {gpu, false, cmd + ": timed out"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {gpu, true, cmd + ": done"};
  return {gpu, false,
          cmd + (WIFEXITED(status) ? ": exited " + std::to_string(WEXITSTATUS(status))
                                   : ": killed by signal " + std::to_string(WTERMSIG(status)))};
}

std::vector<ResetOutcome> GpuResetter::Step(const core::NodeQuarantine& q,
                                            const std::vector<GpuSample>& samples, int64_t now_ms) {
  std::vector<ResetOutcome> out;
  for (const core::QuarantinedGpu& g : q.gpus) {
    if (!g.reset_requested) continue;
    auto tried = tried_for_.find(g.gpu);
    if (tried != tried_for_.end() && tried->second == g.since_ms) continue;
    bool busy = false;
    for (const GpuSample& s : samples) {
      busy = busy || (static_cast<int64_t>(s.index) == g.gpu && !s.processes.empty());
    }
    if (busy) continue;  // its pods are still stopping, or something else runs there
    tried_for_[g.gpu] = g.since_ms;
    ResetOutcome r = Run(g.gpu);
    last_[g.gpu] = {{"gpu", g.gpu},
                    {"time", api::FormatTime(now_ms)},
                    {"ok", r.ok},
                    {"message", r.message.substr(0, 512)}};
    out.push_back(std::move(r));
  }
  return out;
}

json GpuResetter::Json() const {
  json out = json::array();
  for (const auto& [gpu, r] : last_) out.push_back(r);
  return out;
}

}  // namespace tessera::agent
