#include "server/exec_hub.h"

#include <algorithm>
#include <utility>

namespace tessera::server {

using nlohmann::json;

namespace {

// Output may hold bytes that are not UTF-8: they are replaced, never an exception.
std::string Frame(const json& frame) {
  return frame.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

Status ExecHub::Open(const std::string& id, ExecRequest request, int64_t now_ms) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.size() >= limits_.max_sessions) {
      return ResourceExhausted("too many exec sessions are open (" +
                               std::to_string(limits_.max_sessions) + "); try again later");
    }
    if (sessions_.contains(id)) return AlreadyExists("exec session " + id + " exists");
    const size_t mine = std::count_if(sessions_.begin(), sessions_.end(), [&](const auto& kv) {
      return kv.second.request.owner == request.owner;
    });
    if (mine >= limits_.max_per_owner) {
      return ResourceExhausted("this token has " + std::to_string(mine) +
                               " exec sessions open, the most it may; end one first");
    }
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->second.first == request.node) {
        wake.push_back(std::move(it->second.second));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    Session& s = sessions_[id];
    s.request = std::move(request);
    s.heard_ms = now_ms;
  }
  for (auto& w : wake) w();
  return Status::Ok();
}

json ExecHub::Claim(const std::string& node, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  json out = json::array();
  for (auto& [id, s] : sessions_) {
    if (s.claimed || s.ended || s.request.node != node) continue;
    s.claimed = true;
    s.heard_ms = now_ms;
    out.push_back({{"id", id},
                   {"namespace", s.request.ns},
                   {"job", s.request.job},
                   {"pod", s.request.pod},
                   {"command", s.request.command}});
  }
  return out;
}

std::optional<uint64_t> ExecHub::WaitForWork(const std::string& node, std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, s] : sessions_) {
    if (!s.claimed && !s.ended && s.request.node == node) return std::nullopt;
  }
  const uint64_t waiter = next_waiter_++;
  waiters_[waiter] = {node, std::move(wake)};
  return waiter;
}

void ExecHub::StopWaiting(uint64_t waiter) {
  std::lock_guard<std::mutex> lock(mu_);
  waiters_.erase(waiter);
}

Result<ExecHub::Session*> ExecHub::AgentSession(const std::string& id, const std::string& node) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.request.node != node || !it->second.claimed) {
    return NotFound("exec session " + id + " is not open on this node");
  }
  if (it->second.ended) return FailedPrecondition("exec session " + id + " has ended");
  return &it->second;
}

std::function<void()> ExecHub::Push(Session& s, const json& frame) {
  s.frames += Frame(frame);
  return std::exchange(s.reader, nullptr);
}

Status ExecHub::Append(const std::string& id, const std::string& node, const std::string& stream,
                       const std::string& data, int64_t now_ms) {
  if (stream != "stdout" && stream != "stderr") {
    return InvalidArgument("stream: must be stdout or stderr");
  }
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto open = AgentSession(id, node);
    if (!open.ok()) return open.status();
    Session& s = **open;
    if (s.frames.size() + data.size() > limits_.max_buffered) {
      return ResourceExhausted("the client has not read the output yet; send it again");
    }
    s.heard_ms = now_ms;
    if (!data.empty()) wake = Push(s, {{stream, data}});
  }
  if (wake) wake();
  return Status::Ok();
}

Status ExecHub::Finish(const std::string& id, const std::string& node, const json& end,
                       int64_t now_ms) {
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto open = AgentSession(id, node);
    if (!open.ok()) return open.status();
    Session& s = **open;
    s.heard_ms = now_ms;
    s.ended = true;
    wake = Push(s, end);
  }
  if (wake) wake();
  return Status::Ok();
}

Status ExecHub::CheckOwner(const std::string& id, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  // The same answer for another's session as for none: ids are not confirmed to strangers.
  if (it == sessions_.end() || it->second.request.owner != owner) {
    return NotFound("exec session " + id + " not found");
  }
  return Status::Ok();
}

std::optional<std::string> ExecHub::Read(const std::string& id, bool* done,
                                         std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  *done = false;
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    *done = true;
    return Frame({{"error", "the session ended on the server"}});
  }
  Session& s = it->second;
  if (s.frames.empty()) {
    s.reader = std::move(wake);
    return std::nullopt;
  }
  std::string out = std::exchange(s.frames, std::string());
  if (s.ended) {
    *done = true;
    sessions_.erase(it);
  }
  return out;
}

void ExecHub::Abandon(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (!it->second.claimed) {
    sessions_.erase(it);  // nothing runs: nobody to tell
    return;
  }
  // Kept, ended, until the agent hears of it (or Expire): its calls fail.
  it->second.ended = true;
  it->second.frames.clear();
  it->second.reader = nullptr;
}

void ExecHub::Expire(int64_t now_ms) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      Session& s = it->second;
      if (s.ended) {
        // Abandoned (no reader will come) or read to its end frame: gone once the agent had
        // time to hear of it.
        if (!s.reader && now_ms - s.heard_ms > limits_.silence_timeout_ms) {
          it = sessions_.erase(it);
          continue;
        }
      } else if (!s.claimed && now_ms - s.heard_ms > limits_.claim_timeout_ms) {
        s.ended = true;
        if (auto w = Push(s, {{"error", "the agent of node " + s.request.node +
                                            " did not take the command up; is it running?"}}))
          wake.push_back(std::move(w));
      } else if (s.claimed && now_ms - s.heard_ms > limits_.silence_timeout_ms) {
        s.ended = true;
        if (auto w = Push(s, {{"error", "the agent of node " + s.request.node +
                                            " stopped answering; the command may still run"}}))
          wake.push_back(std::move(w));
      }
      ++it;
    }
  }
  for (auto& w : wake) w();
}

size_t ExecHub::open_sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace tessera::server
