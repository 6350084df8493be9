#include "server/log_stream.h"

#include <utility>

namespace tessera::server {

void LogStream::Next(std::function<void(std::optional<std::string>)> emit) {
  if (!first_.empty()) return emit(std::exchange(first_, std::string()));
  for (;;) {
    auto more = logs_.Since(ns_, job_, uid_, pod_, &from_);
    if (!more.ok()) return emit(std::nullopt);
    if (!more->empty()) return emit(std::move(more).value());
    // The pod ended and all its output was sent: so does the follow (kubectl logs -f
    // returns).
    if (logs_.Ended(ns_, job_, uid_, pod_)) return emit(std::nullopt);
    std::weak_ptr<LogStream> weak = shared_from_this();
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    auto sub = logs_.Subscribe(ns_, job_, uid_, pod_, from_, [weak, emit] {
      if (auto self = weak.lock()) self->Next(emit);
    });
    if (sub) {
      subscription_ = *sub;
      return;
    }
  }
}
void LogStream::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (subscription_ != 0) logs_.Unsubscribe(subscription_);
}

}  // namespace tessera::server
