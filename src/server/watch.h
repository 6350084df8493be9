// Watches (Kubernetes' ?watch=1): each change rendered once as an event line and shared by
// every watcher (EventCache), and which Jobs a node's agent follows (its list and watch show
// those only). ApiServer::Watch, in watch.cc, serves one watch as a stream of such lines.
#ifndef TESSERA_SERVER_WATCH_H_
#define TESSERA_SERVER_WATCH_H_

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace tessera::server {

// The nodes whose agents follow a Job (its list and watch show it to them): those its pods are
// bound to until it has ended. An ended Job's pods run nowhere, and a node turns over
// thousands of Jobs: its agent's view holds only what may still run there.
std::vector<std::string> FollowingNodes(const nlohmann::json& job);
// Whether a Job's stored status binds a pod to `node`.
bool BoundTo(const nlohmann::json& job, const std::string& node);
// A watch event's line: {"type":...,"object":...} and a newline.
std::string EventLine(std::string_view type, std::string_view object);
// Change feed routes (ChangeFeed::set_router): a node's, and a Job's own.
std::string NodeRoute(const std::string& node);
std::string JobRoute(const std::string& ns, const std::string& name);
// ADDED, MODIFIED or DELETED.
const char* EventType(store::ChangeType t);

// Watch events rendered once per change and shared by every watcher (the newest 4,096). A change
// is its revision and its object's key: on etcd the objects of one transaction share a revision.
class EventCache {
 public:
  struct Event {
    nlohmann::json labels;           // the object's labels, for selectors
    std::string object;              // the object served, as JSON
    std::string line;                // {"type":...,"object":...}\n
    std::vector<std::string> nodes;  // of a Job: FollowingNodes
  };

  // The event of change `c`, rendered on first use.
  std::shared_ptr<const Event> Get(const store::Change& c);

 private:
  std::mutex mu_;
  std::map<std::pair<int64_t, store::ObjectKey>, std::shared_ptr<const Event>> events_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_WATCH_H_
