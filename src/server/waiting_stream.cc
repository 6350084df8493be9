#include "server/waiting_stream.h"

#include <utility>

namespace tessera::server {

void WaitingStream::Cancel() {
  std::function<void()> drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    drop = std::exchange(drop_, nullptr);
  }
  if (drop) drop();
  OnCancel();
}

std::function<void()> WaitingStream::Again(Emit emit) {
  std::weak_ptr<WaitingStream> weak = shared_from_this();
  return [weak, emit = std::move(emit)] {
    if (auto self = weak.lock()) self->Next(emit);
  };
}

bool WaitingStream::WaitOn(
    const Emit& emit,
    const std::function<std::optional<uint64_t>(std::function<void()>)>& subscribe,
    std::function<void(uint64_t)> unsubscribe) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return true;
  const std::optional<uint64_t> id = subscribe(Again(emit));
  if (!id) return false;
  drop_ = [unsubscribe = std::move(unsubscribe), id = *id] { unsubscribe(id); };
  return true;
}

bool WaitingStream::Cancelled() {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

}  // namespace tessera::server
