#include "server/exec_hub.h"

#include <algorithm>
#include <utility>

#include "server/json_names.h"

namespace tessera::server {

namespace {

// Output may hold bytes that are not UTF-8: they are replaced, never an exception.
std::string Frame(const json& frame) {
  return frame.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

ExecFrame EndFrame(json end) { return ExecFrame{"", "", std::move(end)}; }

}  // namespace

std::vector<std::function<void()>> ExecHub::TakeWaiters(const std::string& node) {
  std::vector<std::function<void()>> wake;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.first == node) {
      wake.push_back(std::move(it->second.second));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  return wake;
}

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
    wake = TakeWaiters(request.node);
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
    json session = {{"id", id},
                    {"namespace", s.request.ns},
                    {"job", s.request.job},
                    {"pod", s.request.pod},
                    {"command", s.request.command}};
    if (s.request.stdin) session["stdin"] = true;
    out.push_back(std::move(session));
  }
  return out;
}

void ExecHub::Unclaim(const std::vector<std::string>& ids, const std::string& node) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& id : ids) {
      auto it = sessions_.find(id);
      if (it == sessions_.end() || it->second.request.node != node || it->second.ended) continue;
      it->second.claimed = false;
    }
    wake = TakeWaiters(node);
  }
  for (auto& w : wake) w();
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

std::function<void()> ExecHub::Push(Session& s, ExecFrame frame) {
  s.frame_bytes += frame.data.size();
  const bool end = frame.stream.empty();
  s.frames.push_back(std::move(frame));
  std::function<void()> reader = std::exchange(s.reader, nullptr);
  if (!end) return reader;
  std::function<void()> input_reader = std::exchange(s.input_reader, nullptr);
  std::function<void()> room = std::exchange(s.input_room, nullptr);
  return [reader, input_reader, room] {
    for (const auto& f : {reader, input_reader, room}) {
      if (f) f();
    }
  };
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
    if (s.frame_bytes + data.size() > limits_.max_buffered) {
      return ResourceExhausted("the client has not read the output yet; send it again");
    }
    s.heard_ms = now_ms;
    if (!data.empty()) wake = Push(s, ExecFrame{stream, data, nullptr});
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
    wake = Push(s, EndFrame(end));
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

std::optional<std::vector<ExecFrame>> ExecHub::ReadFrames(const std::string& id, bool* done,
                                                          std::function<void()> wake) {
  std::unique_lock<std::mutex> lock(mu_);
  *done = false;
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    *done = true;
    return std::vector<ExecFrame>{EndFrame({{"error", "the session ended on the server"}})};
  }
  Session& s = it->second;
  if (s.frames.empty()) {
    s.reader = std::move(wake);
    return std::nullopt;
  }
  std::vector<ExecFrame> out(std::make_move_iterator(s.frames.begin()),
                             std::make_move_iterator(s.frames.end()));
  s.frames.clear();
  s.frame_bytes = 0;
  if (s.ended) {
    *done = true;
    // Ended for the agent too: its input poll hears of it.
    std::function<void()> input_reader = std::exchange(s.input_reader, nullptr);
    sessions_.erase(it);
    lock.unlock();
    if (input_reader) input_reader();
  }
  return out;
}

std::optional<std::string> ExecHub::Read(const std::string& id, bool* done,
                                         std::function<void()> wake) {
  std::optional<std::vector<ExecFrame>> frames = ReadFrames(id, done, std::move(wake));
  if (!frames) return std::nullopt;
  std::string out;
  for (const ExecFrame& f : *frames) {
    out += f.stream.empty() ? Frame(f.end) : Frame({{f.stream, f.data}});
  }
  return out;
}

bool ExecHub::Input(const std::string& id, std::string_view data, bool eof,
                    std::function<void()> room) {
  std::function<void()> wake;
  bool has_room = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.request.stdin || it->second.ended) return true;
    Session& s = it->second;
    if (s.input_eof) return true;
    s.input.append(data);
    s.input_eof = eof;
    wake = std::exchange(s.input_reader, nullptr);
    if (s.input.size() >= limits_.max_buffered) {
      has_room = false;
      s.input_room = std::move(room);
    }
  }
  if (wake) wake();
  return has_room;
}

Result<std::optional<std::string>> ExecHub::TakeInput(const std::string& id,
                                                      const std::string& node, bool* eof,
                                                      std::function<void()> wake) {
  std::function<void()> room;
  std::optional<std::string> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto open = AgentSession(id, node);
    if (!open.ok()) return open.status();
    Session& s = **open;
    *eof = false;
    if (!s.input.empty()) {
      // At most what the client may buffer, so one answer stays bounded.
      const size_t n = std::min(s.input.size(), limits_.max_buffered);
      out = s.input.substr(0, n);
      s.input.erase(0, n);
      room = std::exchange(s.input_room, nullptr);
    } else if (s.input_eof) {
      *eof = true;
      out = std::string();
    } else {
      s.input_reader = std::move(wake);
    }
  }
  if (room) room();
  return out;
}

void ExecHub::Abandon(const std::string& id) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (!it->second.claimed) {
    sessions_.erase(it);  // nothing runs: nobody to tell
    return;
  }
  // Kept, ended, until the agent hears of it (or Expire): its calls fail.
  it->second.ended = true;
  it->second.frames.clear();
  it->second.frame_bytes = 0;
  it->second.reader = nullptr;
  it->second.input_room = nullptr;
  if (auto input_reader = std::exchange(it->second.input_reader, nullptr)) {
    lock.unlock();
    input_reader();  // the agent's input poll hears that the session ended
  }
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
        if (auto w = Push(s, EndFrame({{"error", "the agent of node " + s.request.node +
                                                     " did not take the command up; is it "
                                                     "running?"}})))
          wake.push_back(std::move(w));
      } else if (s.claimed && now_ms - s.heard_ms > limits_.silence_timeout_ms) {
        s.ended = true;
        if (auto w = Push(s, EndFrame({{"error", "the agent of node " + s.request.node +
                                                     " stopped answering; the command may "
                                                     "still run"}})))
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
