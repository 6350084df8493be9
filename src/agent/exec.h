// The agent's side of `tessera exec` (see server/exec_hub.h): it claims the sessions opened for
// its node by long poll and runs each command inside its pod, as `kubectl exec` does: in the
// pod's process environment (its variables, working directory, user and cgroup), or in its
// container through the runtime (`<runtime> exec <container> CMD...`). Output goes to the
// server as it comes (stdout and stderr apart), then how the command ended. A command stops
// (SIGTERM to its process group, SIGKILL after a grace period) when its client goes away, when
// its pod stops running here, or when the agent stops.
#ifndef TESSERA_AGENT_EXEC_H_
#define TESSERA_AGENT_EXEC_H_

#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/exec_targets.h"
#include "agent/runner.h"
#include "agent/worker.h"

namespace tessera::agent {

// The process that runs `command` in the pod started as `pod`: the runtime's exec for a
// container, else the command itself with the pod's environment, directories, user and
// cgroup. Its output is not the pod's log.
ProcessSpec ExecSpec(const ProcessSpec& pod, const std::vector<std::string>& command);

struct ExecOptions {
  std::string node;
  int claim_wait_seconds = 5;  // each long poll (also how long Stop may wait for it)
  int64_t stop_grace_ms = 2'000;
  int64_t keepalive_ms = 1'000;  // a sign of life (and a check on the client) at least this often
};

class ExecAgent {
 public:
  // `api` must be usable from several threads at once.
  ExecAgent(std::shared_ptr<ApiClient> api, const ExecTargets& targets, ExecOptions options);
  ~ExecAgent();  // Stop

  // Claims sessions and runs them, each on its own thread, until Stop.
  void Start();
  // Stops claiming and stops every command still running; returns when they have ended. A
  // long poll under way is left to end by itself (on its own thread, which then ends what it
  // claimed as refused).
  void Stop();

  // Runs one claimed session ({"id", "namespace", "job", "pod", "command"}) to its end on the
  // calling thread (tests drive it directly).
  void Serve(const nlohmann::json& session);

 private:
  struct Claimer;
  static void ClaimLoop(std::shared_ptr<Claimer> claimer, std::string path);
  // Sends `data` of `stream`; false when the session is over for the server (the client left).
  bool Send(const std::string& id, const char* stream, const std::string& data);
  void End(const std::string& id, const nlohmann::json& end);

  const std::shared_ptr<ApiClient> api_;
  const ExecTargets& targets_;
  const ExecOptions options_;
  std::atomic<bool> stopping_ = false;
  std::shared_ptr<Claimer> claimer_;
  std::mutex mu_;
  std::condition_variable changed_;
  int running_ = 0;  // sessions being served
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_EXEC_H_
