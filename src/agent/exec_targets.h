// The pods a command can be run in (`tessera exec`, see exec.h), each as it was started: its
// ProcessSpec (for a container, `container` names it and argv[0] is the runtime), by key
// "ns/job/pod". Filled by the Worker as it starts and stops pods, read by the exec threads.
// Thread-safe.
#ifndef TESSERA_AGENT_EXEC_TARGETS_H_
#define TESSERA_AGENT_EXEC_TARGETS_H_

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "agent/runner.h"

namespace tessera::agent {

class ExecTargets {
 public:
  void Set(const std::string& key, ProcessSpec spec) {
    std::lock_guard<std::mutex> lock(mu_);
    specs_[key] = std::move(spec);
  }
  // Forgets the pods not in `running`.
  void Retain(const std::set<std::string>& running) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(specs_, [&](const auto& kv) { return !running.contains(kv.first); });
  }
  std::optional<ProcessSpec> Get(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = specs_.find(key);
    if (it == specs_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, ProcessSpec> specs_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_EXEC_TARGETS_H_
