#include "store/compactor.h"

#include <cstdio>
#include <utility>

namespace tessera::store {

Compactor::Compactor(Store& store, std::function<bool()> leading,
                     std::chrono::milliseconds interval)
    : store_(store), leading_(std::move(leading)), interval_(interval) {
  runner_ = std::thread([this] { Run(); });
}

Compactor::~Compactor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  runner_.join();
}

int64_t Compactor::compacted() {
  std::lock_guard<std::mutex> lock(mu_);
  return compacted_;
}

void Compactor::Run() {
  int64_t seen = store_.Revision();  // compacted to at the next turn
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, interval_, [&] { return stopping_; })) return;
    }
    const int64_t now = store_.Revision();
    if (leading_() && seen > compacted()) {
      if (Status s = store_.Compact(seen); s.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        compacted_ = seen;
      } else {
        std::fprintf(stderr, "warning: compaction to revision %lld failed: %s\n",
                     static_cast<long long>(seen), s.message().c_str());
      }
    }
    seen = now;
  }
}

}  // namespace tessera::store
