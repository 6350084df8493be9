#include "server/log_stream.h"

#include <utility>

#include "api/time.h"

namespace tessera::server {

std::string LogStream::Shape(std::string data) {
  if (options_.timestamps && clock_) {
    const std::string stamp = api::FormatTime(clock_()) + " ";
    std::string out;
    for (char c : data) {
      if (line_start_) out += stamp;
      out += c;
      line_start_ = c == '\n';
    }
    data = std::move(out);
  }
  if (options_.limit_bytes >= 0) {
    if (static_cast<int64_t>(data.size()) > options_.limit_bytes) {
      data.resize(static_cast<size_t>(options_.limit_bytes));
    }
    options_.limit_bytes -= static_cast<int64_t>(data.size());
  }
  return data;
}

void LogStream::Next(std::function<void(std::optional<std::string>)> emit) {
  if (!first_.empty()) {
    line_start_ = first_.back() == '\n';
    return emit(std::exchange(first_, std::string()));
  }
  for (;;) {
    // Limited, and all of it sent: the follow ends.
    if (options_.limit_bytes == 0) return emit(std::nullopt);
    bool over = false;
    auto more = logs_.Since(ns_, job_, uid_, pod_, &from_, &over);
    if (!more.ok()) return emit(std::nullopt);
    if (!more->empty()) return emit(Shape(std::move(more).value()));
    // Its run of the container ended (it restarted): so does the follow, as the kubelet's.
    if (over) return emit(std::nullopt);
    // The pod ended and all its output was sent: so does the follow (kubectl logs -f
    // returns).
    if (logs_.Ended(ns_, job_, uid_, pod_)) return emit(std::nullopt);
    const bool waiting = WaitOn(
        emit,
        [&](std::function<void()> wake) {
          return logs_.Subscribe(ns_, job_, uid_, pod_, from_, std::move(wake));
        },
        [&logs = logs_](uint64_t id) { logs.Unsubscribe(id); });
    if (waiting) return;
  }
}

}  // namespace tessera::server
