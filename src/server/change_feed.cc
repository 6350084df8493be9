#include "server/change_feed.h"

#include <algorithm>
#include <utility>

namespace tessera::server {

void ChangeFeed::CatchUp() {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> kinds;  // of what this call published
    size_t published = 0;         // the newest `published` changes of recent_ are this call's
    bool compacted = false;
    while (true) {
      auto changes = store_.ChangesAfter(head_, 4096);
      if (!changes.ok()) {
        // Compacted past the newest kept change (a burst larger than the log keeps): resume at
        // the store's revision; older revisions are served from the store or refused.
        recent_.clear();
        head_ = store_.Revision();
        route_log_.clear();
        index_from_ = head_;
        compacted = true;
        break;
      }
      for (store::Change& c : *changes) {
        head_ = c.revision;
        kinds.insert(c.object.key.kind);
        ++published;
        auto p = std::make_shared<Published>();
        p->change = std::move(c);
        if (router_ && !routed_.empty()) {
          p->routes = router_(p->change);
          p->routed = true;
          for (const std::string& route : p->routes) route_log_[route].push_back(p);
        } else {
          index_from_ = p->change.revision;  // its routes are not known
        }
        recent_.push_back(std::move(p));
        if (recent_.size() > kept_) {
          index_from_ = std::max(index_from_, recent_.front()->change.revision);
          recent_.pop_front();
        }
        if (++since_sweep_ >= kept_) SweepRoutes();
      }
      if (changes->size() < 4096) break;
    }
    auto wake_all = [&](std::map<uint64_t, Waiter>& waiters) {
      for (auto it = waiters.begin(); it != waiters.end();) {
        if (it->second.after < head_) {
          wake.push_back(std::move(it->second.wake));
          kind_of_.erase(it->first);
          it = waiters.erase(it);
        } else {
          ++it;
        }
      }
    };
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->first.empty() || compacted || kinds.contains(it->first)) wake_all(it->second);
      it = it->second.empty() ? waiting_.erase(it) : std::next(it);
    }
    // Routed waiters: found through the routes of this call's changes (all of them when the
    // call published more than is kept: they read from the store's log then).
    const bool all_kept = !compacted && published <= recent_.size();
    if (!all_kept || !router_) {
      std::vector<uint64_t> behind;
      for (const auto& [id, w] : routed_) {
        if (w.after < head_) behind.push_back(id);
      }
      for (uint64_t id : behind) WakeRouted(id, &wake);
    }
    for (size_t i = recent_.size() - published;
         all_kept && router_ && !routed_.empty() && i < recent_.size(); ++i) {
      // Published above, under this lock, while routed waiters waited: its routes are worked out.
      const Published& p = *recent_[i];
      const store::Change& c = p.change;
      for (const std::string& route : p.routes) {
        auto ids = by_route_.find(route);
        if (ids == by_route_.end()) continue;
        std::vector<uint64_t> woken;
        for (uint64_t id : ids->second) {
          const Waiter& w = routed_.at(id);
          if (c.revision > w.after && c.object.key.kind == w.kind) woken.push_back(id);
        }
        for (uint64_t id : woken) WakeRouted(id, &wake);
      }
    }
    while (!by_after_.empty() && by_after_.begin()->first + kRoutedCatchUp <= head_) {
      WakeRouted(by_after_.begin()->second, &wake);
    }
  }
  for (auto& w : wake) w();
}

Result<std::vector<store::Change>> ChangeFeed::After(int64_t after, size_t limit) {
  auto shared = AfterShared(after, limit);
  if (!shared.ok()) return shared.status();
  std::vector<store::Change> out;
  out.reserve(shared->size());
  for (const Shared& p : *shared) out.push_back(p->change);
  return out;
}

Result<std::vector<ChangeFeed::Shared>> ChangeFeed::AfterShared(int64_t after, size_t limit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (after >= head_) return std::vector<Shared>{};
    if (!recent_.empty() && recent_.front()->change.revision <= after + 1) {
      // Revisions increase along recent_: start at the first after `after`.
      auto it =
          std::upper_bound(recent_.begin(), recent_.end(), after,
                           [](int64_t rev, const Shared& p) { return rev < p->change.revision; });
      std::vector<Shared> out;
      for (; it != recent_.end() && out.size() < limit; ++it) out.push_back(*it);
      return out;
    }
  }
  auto changes = store_.ChangesAfter(after, limit);
  if (!changes.ok()) return changes.status();
  std::vector<Shared> out;
  out.reserve(changes->size());
  for (store::Change& c : *changes) {
    auto p = std::make_shared<Published>();
    p->change = std::move(c);
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<ChangeFeed::RoutedChanges> ChangeFeed::AfterRoutes(
    int64_t after, const std::vector<std::string>& routes, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!router_ || after < index_from_) return std::nullopt;
  RoutedChanges out;
  for (const std::string& route : routes) {
    auto log = route_log_.find(route);
    if (log == route_log_.end()) continue;
    std::deque<Shared>& changes = log->second;
    while (!changes.empty() && changes.front()->change.revision <= index_from_) {
      changes.pop_front();
    }
    auto it =
        std::upper_bound(changes.begin(), changes.end(), after,
                         [](int64_t rev, const Shared& p) { return rev < p->change.revision; });
    out.changes.insert(out.changes.end(), it, changes.end());
  }
  // A change on several of the routes (a Job bound to the node and shown by it) is read once.
  auto older = [](const Shared& a, const Shared& b) {
    return a->change.revision < b->change.revision;
  };
  std::sort(out.changes.begin(), out.changes.end(), older);
  out.changes.erase(std::unique(out.changes.begin(), out.changes.end()), out.changes.end());
  out.through = head_;
  if (out.changes.size() > limit) {
    // Cut after the last change of a revision: one transaction's changes (on etcd) share it,
    // and a reader goes on after `through`.
    size_t end = limit;
    const int64_t last = out.changes[end - 1]->change.revision;
    while (end < out.changes.size() && out.changes[end]->change.revision == last) ++end;
    out.changes.resize(end);
    out.through = last;
  }
  return out;
}

void ChangeFeed::SweepRoutes() {
  since_sweep_ = 0;
  for (auto it = route_log_.begin(); it != route_log_.end();) {
    std::deque<Shared>& changes = it->second;
    while (!changes.empty() && changes.front()->change.revision <= index_from_) {
      changes.pop_front();
    }
    it = changes.empty() ? route_log_.erase(it) : std::next(it);
  }
}

std::optional<uint64_t> ChangeFeed::Subscribe(int64_t after, std::function<void()> wake,
                                              std::string kind) {
  if (before_subscribe_) before_subscribe_();
  std::lock_guard<std::mutex> lock(mu_);
  if (after < head_) return std::nullopt;
  const uint64_t id = next_id_++;
  kind_of_.emplace(id, kind);
  std::map<uint64_t, Waiter>& same_kind = waiting_[kind];
  same_kind.emplace(id, Waiter{after, std::move(kind), std::move(wake), {}});
  return id;
}

std::optional<uint64_t> ChangeFeed::SubscribeRouted(int64_t after, std::function<void()> wake,
                                                    std::string kind,
                                                    std::vector<std::string> routes) {
  if (before_subscribe_) before_subscribe_();
  std::lock_guard<std::mutex> lock(mu_);
  if (after < head_) return std::nullopt;
  const uint64_t id = next_id_++;
  for (const std::string& route : routes) by_route_[route].insert(id);
  by_after_.emplace(after, id);
  routed_.emplace(id, Waiter{after, std::move(kind), std::move(wake), std::move(routes)});
  return id;
}

void ChangeFeed::EraseRouted(std::map<uint64_t, Waiter>::iterator it) {
  for (const std::string& route : it->second.routes) {
    auto ids = by_route_.find(route);
    if (ids == by_route_.end()) continue;
    ids->second.erase(it->first);
    if (ids->second.empty()) by_route_.erase(ids);
  }
  by_after_.erase({it->second.after, it->first});
  routed_.erase(it);
}

void ChangeFeed::WakeRouted(uint64_t id, std::vector<std::function<void()>>* wake) {
  auto it = routed_.find(id);
  if (it == routed_.end()) return;
  wake->push_back(std::move(it->second.wake));
  EraseRouted(it);
}

void ChangeFeed::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto routed = routed_.find(id); routed != routed_.end()) return EraseRouted(routed);
  auto kind = kind_of_.find(id);
  if (kind == kind_of_.end()) return;
  auto waiters = waiting_.find(kind->second);
  waiters->second.erase(id);
  if (waiters->second.empty()) waiting_.erase(waiters);
  kind_of_.erase(kind);
}

int64_t ChangeFeed::head() const {
  std::lock_guard<std::mutex> lock(mu_);
  return head_;
}

size_t ChangeFeed::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kind_of_.size() + routed_.size();
}

}  // namespace tessera::server
