#include "server/watch.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "api/json_read.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"
#include "server/waiting_stream.h"

namespace tessera::server {

namespace {

// The nodes a Job's stored status binds its pods to (with repeats).
std::vector<std::string> BoundNodes(const json& job) {
  std::vector<std::string> out;
  for (const json& pod : ListOf(Member(Member(job, "status"), "pods"))) {
    if (std::string node = Str(pod, "node"); !node.empty()) out.push_back(std::move(node));
  }
  return out;
}

}  // namespace

std::vector<std::string> FollowingNodes(const json& job) {
  const std::string phase = Str(Member(job, "status"), "phase");
  if (phase == "Succeeded" || phase == "Failed") return {};
  return BoundNodes(job);
}

bool BoundTo(const json& job, const std::string& node) {
  const std::vector<std::string> nodes = BoundNodes(job);
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

std::string EventLine(std::string_view type, std::string_view object) {
  std::string line = "{\"type\":\"";
  line += type;
  line += "\",\"object\":";
  line += object;
  line += "}\n";
  return line;
}

const char* EventType(store::ChangeType t) {
  switch (t) {
    case store::ChangeType::kAdded:
      return "ADDED";
    case store::ChangeType::kModified:
      return "MODIFIED";
    case store::ChangeType::kDeleted:
      return "DELETED";
  }
  return "MODIFIED";
}

std::string NodeRoute(const std::string& node) { return "node:" + node; }
std::string JobRoute(const std::string& ns, const std::string& name) {
  return "job:" + ns + "/" + name;
}

std::shared_ptr<const EventCache::Event> EventCache::Get(const store::Change& c) {
  std::lock_guard<std::mutex> lock(mu_);
  std::pair<int64_t, store::ObjectKey> id{c.revision, c.object.key};
  auto it = events_.find(id);
  if (it != events_.end()) return it->second;
  auto e = std::make_shared<Event>();
  const json obj = Served(c.object);
  e->labels = obj["metadata"].value("labels", json());
  if (c.object.key.kind == "Job") e->nodes = FollowingNodes(obj);
  e->object = obj.dump();
  e->line = EventLine(EventType(c.type), e->object);
  events_.emplace(std::move(id), e);
  if (events_.size() > 4096) events_.erase(events_.begin());
  return e;
}

namespace {

// Kubernetes' BOOKMARK events of one watch: an object of the watched type that carries only
// the revision the watcher has seen everything up to.
struct Bookmarks {
  json head;  // {"apiVersion", "kind"} of the watched type
  int64_t interval_ms = 60'000;
  std::function<int64_t()> clock;

  std::string Line(int64_t revision, bool initial_events_end) const {
    json obj = head;
    obj["metadata"] = {{"resourceVersion", std::to_string(revision)}};
    if (initial_events_end) {
      obj["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    }
    return json{{"type", "BOOKMARK"}, {"object", std::move(obj)}}.dump() + "\n";
  }
};

// One watch: events of one kind (and namespace, and selector) after a revision.
class WatchStream : public WaitingStream {
 public:
  // With `bound_to`, the watch shows the Jobs that node's agent follows only (FollowingNodes),
  // and a Job that it stops following (deleted, bound elsewhere, ended) as DELETED, as Kubernetes'
  // watches show an object leaving their field selector. (A watch resumed from a revision learns
  // what it showed from its events on.)
  WatchStream(ChangeFeed& feed, EventCache& events, std::string kind, std::optional<std::string> ns,
              std::optional<api::LabelSelector> selector, WatchRender render,
              std::optional<Bookmarks> bookmarks, std::optional<std::string> bound_to)
      : feed_(feed),
        events_(events),
        kind_(std::move(kind)),
        ns_(std::move(ns)),
        selector_(std::move(selector)),
        render_(std::move(render)),
        bookmarks_(std::move(bookmarks)),
        bound_to_(std::move(bound_to)),
        node_route_(bound_to_ ? NodeRoute(*bound_to_) : std::string()) {}

  // Starts after `revision`, first sending `initial` objects as ADDED, then, when
  // `initial_events_end`, the bookmark that says they are all sent.
  void Start(int64_t revision, const std::vector<store::StoredObject>& initial,
             bool initial_events_end) {
    last_ = revision;
    told_ = revision;
    if (bookmarks_) told_at_ = bookmarks_->clock();
    for (const store::StoredObject& o : initial) Add(pending_, "ADDED", o);
    if (initial_events_end && bookmarks_) pending_ += bookmarks_->Line(revision, true);
  }

  void Next(std::function<void(std::optional<std::string>)> emit) override {
    for (;;) {
      std::string out = std::move(pending_);
      pending_.clear();
      if (ended_) return emit(std::nullopt);
      while (out.empty()) {
        // A watch bound to a node reads the changes on its routes only, where the feed knows
        // them all; else every change since its last read, passing over the others below.
        if (bound_to_) {
          if (auto routed = feed_.AfterRoutes(last_, Routes(), 512)) {
            // A Job newly shown: its later changes come on its own route too (when it leaves
            // the node), which this read did not ask for. Read on from its revision, once the
            // changes of that revision (one transaction's, on etcd) are read.
            int64_t read_on_from = -1;
            for (const ChangeFeed::Shared& published : routed->changes) {
              const store::Change& c = published->change;
              if (read_on_from >= 0 && c.revision > read_on_from) break;
              if (!Wanted(c.object.key) || !Concerns(*published)) continue;
              const size_t had = out.size();
              const std::shared_ptr<const EventCache::Event> e = events_.Get(c);
              const auto id = std::make_pair(c.object.key.ns, c.object.key.name);
              const bool shown_before = shown_.contains(id);
              AddBound(out, c.type, c.object.key, e->nodes, e->object);
              if (out.size() > had) told_ = c.revision;
              if (!shown_before && shown_.contains(id)) read_on_from = c.revision;
            }
            if (read_on_from >= 0) {
              last_ = read_on_from;
              break;  // `out` holds the Job's ADDED line
            }
            last_ = routed->through;
            if (routed->changes.size() < 512) break;
            continue;
          }
        }
        auto changes = feed_.AfterShared(last_, 512);
        if (!changes.ok()) {
          ended_ = true;
          const json status = json::parse(StatusJson(410, "Expired", changes.status().message()));
          return emit(json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
        }
        for (const ChangeFeed::Shared& published : *changes) {
          const store::Change& c = published->change;
          last_ = c.revision;
          if (!Wanted(c.object.key)) continue;
          // A watch bound to a node passes over, by the routes worked out once at publication,
          // the changes of Jobs neither bound to its node nor shown by it (most of a cluster's).
          if (bound_to_ && published->routed && !Concerns(*published)) continue;
          const size_t had = out.size();
          if (bound_to_) {
            const std::shared_ptr<const EventCache::Event> e = events_.Get(c);
            AddBound(out, c.type, c.object.key, e->nodes, e->object);
          } else if (render_) {
            render_(EventType(c.type), c.object, &out);
          } else if (std::shared_ptr<const EventCache::Event> e = events_.Get(c);
                     !selector_ || selector_->Matches(e->labels)) {
            out += e->line;
          }
          if (out.size() > had) told_ = c.revision;
        }
        if (changes->size() < 512) break;
      }
      if (bookmarks_) {
        // Changes this watch does not show moved the revision on: say so now and then, so a
        // watcher that reconnects starts from there rather than from an older, maybe
        // compacted, revision.
        const int64_t now = bookmarks_->clock();
        if (!out.empty()) {
          told_at_ = now;
        } else if (last_ > told_ && now - told_at_ >= bookmarks_->interval_ms) {
          out = bookmarks_->Line(last_, false);
          told_ = last_;
          told_at_ = now;
        }
      }
      if (!out.empty()) return emit(std::move(out));
      // Nothing new for this watch: wait for the next commit. The feed never calls back from
      // Subscribe; a commit that landed since After is read by going round again.
      const bool waiting = WaitOn(
          emit,
          [&](std::function<void()> wake) {
            return bound_to_ ? feed_.SubscribeRouted(last_, std::move(wake), kind_, Routes())
                             : feed_.Subscribe(last_, std::move(wake), kind_);
          },
          [&feed = feed_](uint64_t id) { feed.Unsubscribe(id); });
      if (waiting) return;
    }
  }

 private:
  bool Wanted(const store::ObjectKey& key) const {
    return (kind_.empty() || key.kind == kind_) && (!ns_ || key.ns == *ns_);
  }

  // For a watch bound to a node: whether a change routed to `p.routes` may concern it (its
  // node's route, or a Job it shows).
  bool Concerns(const ChangeFeed::Published& p) const {
    if (std::find(p.routes.begin(), p.routes.end(), node_route_) != p.routes.end()) return true;
    const store::ObjectKey& key = p.change.object.key;
    return shown_.contains(std::make_pair(key.ns, key.name));
  }

  // For a watch bound to a node, the routes of the changes that concern it (feed router):
  // a Job bound there, or one it shows, which leaves.
  std::vector<std::string> Routes() const {
    std::vector<std::string> routes = {NodeRoute(*bound_to_)};
    for (const auto& [ns, name] : shown_) routes.push_back(JobRoute(ns, name));
    return routes;
  }

  // A change of a Job as a watch bound to a node shows it.
  void AddBound(std::string& out, store::ChangeType type, const store::ObjectKey& key,
                const std::vector<std::string>& nodes, const std::string& object) {
    const bool bound = type != store::ChangeType::kDeleted &&
                       std::find(nodes.begin(), nodes.end(), *bound_to_) != nodes.end();
    auto id = std::make_pair(key.ns, key.name);
    if (bound) {
      out += EventLine(shown_.contains(id) ? "MODIFIED" : "ADDED", object);
      shown_.insert(std::move(id));
    } else if (shown_.erase(id) > 0) {
      out += EventLine("DELETED", object);
    }
  }

  void Add(std::string& out, const char* type, const store::StoredObject& o) {
    if (bound_to_) {
      // A Job bound to the node names it: the others (most of a cluster's) are passed over
      // without being parsed.
      if (o.body.find("\"" + *bound_to_ + "\"") == std::string::npos) return;
      const json obj = Served(o);
      return AddBound(out, store::ChangeType::kAdded, o.key, FollowingNodes(obj), obj.dump());
    }
    if (render_) return render_(type, o, &out);
    json obj = Served(o);
    if (selector_ && !selector_->Matches(obj["metadata"].value("labels", json()))) return;
    out += json{{"type", type}, {"object", std::move(obj)}}.dump();
    out += "\n";
  }

  ChangeFeed& feed_;
  EventCache& events_;
  const std::string kind_;
  const std::optional<std::string> ns_;
  const std::optional<api::LabelSelector> selector_;
  const WatchRender render_;
  const std::optional<Bookmarks> bookmarks_;
  const std::optional<std::string> bound_to_;
  const std::string node_route_;                         // bound_to_: NodeRoute of it
  std::set<std::pair<std::string, std::string>> shown_;  // bound_to_: Jobs shown as bound
  int64_t last_ = 0;
  int64_t told_ = 0;     // the watcher has seen every change it shows up to here
  int64_t told_at_ = 0;  // when it was last sent something (bookmarks_->clock)
  std::string pending_;
  bool ended_ = false;
};

}  // namespace

HttpResponse ApiServer::Watch(const HttpRequest& req, const std::string& kind,
                              const std::optional<std::string>& ns,
                              std::optional<api::LabelSelector> selector, WatchRender render,
                              json watched, std::optional<std::string> bound_to,
                              InitialObjects initial) {
  auto digits = [](const std::string& v, size_t max) {
    return !v.empty() && v.size() <= max &&
           std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  int64_t from = 0;
  int timeout = 1800;
  if (auto it = req.query.find("resourceVersion"); it != req.query.end() && !it->second.empty()) {
    if (!digits(it->second, 18)) {
      return Error(InvalidArgument("resourceVersion: must be a string of digits"));
    }
    from = std::stoll(it->second);
  }
  if (auto t = TimeoutSeconds(req, timeout, 999999); t.ok()) {
    timeout = *t;
  } else {
    return Error(t.status());
  }
  // Bookmarks when asked for and the watched type is known (not for tables of rows).
  std::optional<Bookmarks> bookmarks;
  if (QueryFlag(req, "allowWatchBookmarks") && !watched.is_null()) {
    bookmarks = Bookmarks{std::move(watched), bookmark_interval_ms_, clock_};
  }
  // The watch-list protocol: the current state as ADDED events, ended by a bookmark.
  const auto send_initial = req.query.find("sendInitialEvents");
  const bool initial_events =
      send_initial != req.query.end() && QueryFlag(req, "sendInitialEvents");
  if (send_initial != req.query.end()) {
    if (!QueryFlag(req, "allowWatchBookmarks")) {
      return Error(
          InvalidArgument("allowWatchBookmarks: sendInitialEvents requires "
                          "allowWatchBookmarks=true"));
    }
    auto match = req.query.find("resourceVersionMatch");
    if (match == req.query.end() || match->second != "NotOlderThan") {
      return Error(
          InvalidArgument("resourceVersionMatch: sendInitialEvents requires setting "
                          "resourceVersionMatch to NotOlderThan"));
    }
  } else if (req.query.contains("resourceVersionMatch")) {
    return Error(
        InvalidArgument("resourceVersionMatch: is forbidden for watch unless "
                        "sendInitialEvents is provided"));
  }
  auto stream =
      std::make_shared<WatchStream>(feed_, *events_, kind, ns, std::move(selector),
                                    std::move(render), std::move(bookmarks), std::move(bound_to));
  if (initial_events || (from == 0 && send_initial == req.query.end())) {
    // Start from the current state (not older than `from`): its objects first, then what
    // changes after it.
    if (from > store_->Revision()) {
      return Error(InvalidArgument("resourceVersion " + std::to_string(from) +
                                   " is in the future (latest is " +
                                   std::to_string(store_->Revision()) + ")"));
    }
    const int64_t at = store_->Revision();
    auto list = initial
                    ? initial()
                    : store_->List(kind, ns ? std::optional<std::string_view>(*ns) : std::nullopt);
    if (!list.ok()) return Error(list.status());
    stream->Start(at, *list, initial_events);
  } else if (from == 0) {
    stream->Start(store_->Revision(), {}, false);
  } else {
    if (from > store_->Revision()) {
      return Error(InvalidArgument("resourceVersion " + std::to_string(from) +
                                   " is in the future (latest is " +
                                   std::to_string(store_->Revision()) + ")"));
    }
    if (auto probe = feed_.After(from, 1); !probe.ok()) {
      return Reply(410, "application/json", StatusJson(410, "Expired", probe.status().message()));
    }
    stream->Start(from, {}, false);
  }
  HttpResponse out;
  out.stream = stream;
  out.stream_seconds = timeout;
  return out;
}

}  // namespace tessera::server
