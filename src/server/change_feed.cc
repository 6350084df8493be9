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
        compacted = true;
        break;
      }
      for (store::Change& c : *changes) {
        head_ = c.revision;
        kinds.insert(c.object.key.kind);
        ++published;
        recent_.push_back(std::move(c));
        if (recent_.size() > kept_) recent_.pop_front();
      }
      if (changes->size() < 4096) break;
    }
    // A waiter with a filter wakes for a change of this call it accepts (or when the call
    // published more than is kept: it reads from the store's log then).
    const bool all_kept = !compacted && published <= recent_.size();
    auto accepted = [&](const Waiter& w) {
      if (!w.wants || !all_kept) return true;
      for (size_t i = recent_.size() - published; i < recent_.size(); ++i) {
        const store::Change& c = recent_[i];
        if (c.revision > w.after && (w.kind.empty() || c.object.key.kind == w.kind) && w.wants(c)) {
          return true;
        }
      }
      return false;
    };
    auto wake_accepted = [&](std::map<uint64_t, Waiter>& waiters) {
      for (auto it = waiters.begin(); it != waiters.end();) {
        if (it->second.after < head_ && accepted(it->second)) {
          wake.push_back(std::move(it->second.wake));
          kind_of_.erase(it->first);
          it = waiters.erase(it);
        } else {
          ++it;
        }
      }
    };
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->first.empty() || compacted || kinds.contains(it->first)) wake_accepted(it->second);
      it = it->second.empty() ? waiting_.erase(it) : std::next(it);
    }
  }
  for (auto& w : wake) w();
}

Result<std::vector<store::Change>> ChangeFeed::After(int64_t after, size_t limit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (after >= head_) return std::vector<store::Change>{};
    if (!recent_.empty() && recent_.front().revision <= after + 1) {
      // Revisions increase along recent_: start at the first after `after`.
      auto it =
          std::upper_bound(recent_.begin(), recent_.end(), after,
                           [](int64_t rev, const store::Change& c) { return rev < c.revision; });
      std::vector<store::Change> out;
      for (; it != recent_.end() && out.size() < limit; ++it) out.push_back(*it);
      return out;
    }
  }
  return store_.ChangesAfter(after, limit);
}

std::optional<uint64_t> ChangeFeed::Subscribe(int64_t after, std::function<void()> wake,
                                              std::string kind,
                                              std::function<bool(const store::Change&)> wants) {
  if (before_subscribe_) before_subscribe_();
  std::lock_guard<std::mutex> lock(mu_);
  if (after < head_) return std::nullopt;
  const uint64_t id = next_id_++;
  kind_of_.emplace(id, kind);
  std::map<uint64_t, Waiter>& same_kind = waiting_[kind];
  same_kind.emplace(id, Waiter{after, std::move(kind), std::move(wake), std::move(wants)});
  return id;
}

void ChangeFeed::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
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
  return kind_of_.size();
}

}  // namespace tessera::server
