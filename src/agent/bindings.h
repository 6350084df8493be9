// The Jobs bound to this node, followed by a watch instead of listings. The server shows an
// agent's watch (and listing) only the Jobs bound to its node that have not ended, and one that
// leaves that set (ended, deleted, bound elsewhere) as DELETED (see ApiServer::Watch). Each watch
// starts with the state (Kubernetes' watch-list protocol: ADDED events, then a bookmark that says
// they are all sent) and lasts a few minutes; the next one starts at once, so every watch is also a
// full resync. Until a watch has sent the state, after a watch failed, and while one runs past its
// end (a peer that went silent), the set is not known and callers list instead.
#ifndef TESSERA_AGENT_BINDINGS_H_
#define TESSERA_AGENT_BINDINGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "agent/worker.h"

namespace tessera::agent {

// What the watches have shown: pure, driven line by line.
class BoundJobs {
 public:
  // A new watch starts: its state replaces the current one once all of it is sent; until
  // then the current one stands.
  void Restart();
  // A watch failed: nothing is known until the next one has sent the state.
  void Lost();
  // Applies one line of a watch ({"type", "object"}); true when Items() changed.
  bool Apply(std::string_view line);
  // The Jobs bound here (a JSON array ordered by namespace and name); nullopt when unknown.
  std::optional<nlohmann::json> Items() const;

 private:
  using Id = std::pair<std::string, std::string>;  // namespace, name
  std::map<Id, nlohmann::json> live_, next_;
  bool known_ = false;       // live_ holds the state
  bool collecting_ = false;  // the current watch is still sending its state (into next_)
};

class BindingWatch {
 public:
  // `api` must be usable from another thread. `changed` is called on the watch's thread after
  // each change of Items().
  BindingWatch(std::shared_ptr<ApiClient> api, std::function<void()> changed,
               int watch_seconds = 300);
  ~BindingWatch();  // Stop

  // Watches on a thread of its own until Stop.
  void Start();
  // After it returns `changed` is not called again. A request under way is left to end by
  // itself (within the watch's length) on its thread, which then ends.
  void Stop();

  // The Jobs bound here, as BoundJobs::Items; nullopt also while the current watch has run
  // past its end by more than a margin.
  std::optional<nlohmann::json> Items() const;

 private:
  struct State;
  static void Loop(std::shared_ptr<State> state, std::shared_ptr<ApiClient> api);
  std::shared_ptr<ApiClient> api_;
  std::shared_ptr<State> state_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_BINDINGS_H_
