#include "agent/bindings.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "agent/fence.h"
#include "api/json_read.h"

namespace tessera::agent {

using api::Member;
using api::Str;
using nlohmann::json;

void BoundJobs::Restart() {
  collecting_ = true;
  next_.clear();
}

void BoundJobs::Lost() {
  known_ = false;
  collecting_ = false;
  live_.clear();
  next_.clear();
}

bool BoundJobs::Apply(std::string_view line) {
  const json event = json::parse(line, nullptr, false);
  const std::string type = Str(event, "type");
  const json& object = Member(event, "object");
  const json& meta = Member(object, "metadata");
  if (type == "BOOKMARK") {
    if (!collecting_ || Str(Member(meta, "annotations"), "k8s.io/initial-events-end") != "true") {
      return false;
    }
    collecting_ = false;
    const bool changed = !known_ || live_ != next_;
    live_ = std::move(next_);
    next_.clear();
    known_ = true;
    return changed;
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") return false;
  Id id{Str(meta, "namespace"), Str(meta, "name")};
  if (id.second.empty()) return false;
  std::map<Id, json>& into = collecting_ ? next_ : live_;
  if (type == "DELETED") return into.erase(id) > 0 && !collecting_;
  into[std::move(id)] = object;
  return !collecting_;
}

std::optional<json> BoundJobs::Items() const {
  if (!known_) return std::nullopt;
  json items = json::array();
  for (const auto& [id, job] : live_) items.push_back(job);
  return items;
}

namespace {

// How long past its end a watch may run before what it showed is no longer trusted.
constexpr int64_t kOverrunMs = 30'000;

}  // namespace

struct BindingWatch::State {
  std::mutex mu;
  std::condition_variable stop_cv;
  BoundJobs jobs;
  bool stopping = false;
  bool running = false;
  int64_t started_ms = 0;  // SteadyMs when the current watch was asked for
  int watch_seconds = 300;
  std::function<void()> changed;
};

BindingWatch::BindingWatch(std::shared_ptr<ApiClient> api, std::function<void()> changed,
                           int watch_seconds)
    : api_(std::move(api)), state_(std::make_shared<State>()) {
  state_->changed = std::move(changed);
  state_->watch_seconds = watch_seconds;
}

BindingWatch::~BindingWatch() { Stop(); }

void BindingWatch::Start() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->running || state_->stopping) return;
    state_->running = true;
  }
  std::thread(Loop, state_, api_).detach();
}

void BindingWatch::Stop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stopping = true;
  state_->stop_cv.notify_all();
}

std::optional<json> BindingWatch::Items() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (BootMs() - state_->started_ms > int64_t{state_->watch_seconds} * 1000 + kOverrunMs) {
    return std::nullopt;
  }
  return state_->jobs.Items();
}

void BindingWatch::Loop(std::shared_ptr<State> state, std::shared_ptr<ApiClient> api) {
  const std::string target =
      "/apis/tessera.io/v1/jobs?watch=true&allowWatchBookmarks=true&sendInitialEvents=true"
      "&resourceVersionMatch=NotOlderThan&timeoutSeconds=" +
      std::to_string(state->watch_seconds);
  int64_t backoff_ms = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(state->mu);
      state->stop_cv.wait_for(lock, std::chrono::milliseconds(backoff_ms),
                              [&] { return state->stopping; });
      if (state->stopping) return;
      state->jobs.Restart();
      state->started_ms = BootMs();
    }
    std::string partial;
    auto status = api->Stream(target, [&](std::string_view data) {
      partial += data;
      size_t start = 0;
      for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->stopping) return;
        if (state->jobs.Apply(std::string_view(partial).substr(start, nl - start))) {
          state->changed();
        }
      }
      partial.erase(0, start);
    });
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->stopping) return;
    if (status.ok() && *status == 200) {
      // Ended by its timeout: the next one resyncs at once. One cut short (a connection
      // dropped) is followed after a pause, without forgetting what it showed.
      const bool short_lived = BootMs() - state->started_ms < state->watch_seconds * 500;
      backoff_ms = short_lived ? 1'000 : 0;
      continue;
    }
    // Refused or unreachable: list meanwhile (Items is unknown), try again later.
    state->jobs.Lost();
    state->changed();
    backoff_ms = std::clamp<int64_t>(backoff_ms * 2, 1'000, 30'000);
  }
}

}  // namespace tessera::agent
