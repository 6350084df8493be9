// WaitingStream: the one way a streamed response waits for its source.
#include "server/waiting_stream.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace tessera::server {
namespace {

// A source of numbered items with wake-ups by id, as the change feed and the log store keep
// them: Subscribe registers nothing when there is news already.
struct Source {
  std::vector<std::string> items;
  std::map<uint64_t, std::function<void()>> waiting;
  uint64_t next = 1;
  std::optional<uint64_t> Subscribe(size_t from, std::function<void()> wake) {
    if (items.size() > from) return std::nullopt;
    waiting[next] = std::move(wake);
    return next++;
  }
  void Add(std::string item) {
    items.push_back(std::move(item));
    auto woken = std::move(waiting);
    waiting.clear();
    for (auto& [id, wake] : woken) wake();
  }
};

class ItemStream : public WaitingStream {
 public:
  explicit ItemStream(Source& source) : source_(source) {}
  void Next(Emit emit) override {
    for (;;) {
      if (sent_ < source_.items.size()) return emit(source_.items[sent_++]);
      const bool waiting = WaitOn(
          emit, [&](std::function<void()> wake) { return source_.Subscribe(sent_, wake); },
          [&s = source_](uint64_t id) { s.waiting.erase(id); });
      if (waiting) return;
    }
  }
  void OnCancel() override { ++cancelled; }
  int cancelled = 0;

 private:
  Source& source_;
  size_t sent_ = 0;
};

TEST(WaitingStream, WaitsForItsSourceAndIsWokenOnceThereIsNews) {
  Source source;
  auto stream = std::make_shared<ItemStream>(source);
  std::vector<std::string> got;
  auto emit = [&](std::optional<std::string> chunk) { got.push_back(chunk.value_or("<end>")); };
  stream->Next(emit);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(source.waiting.size(), 1u);
  source.Add("a");
  EXPECT_EQ(got, std::vector<std::string>{"a"});
  stream->Next(emit);
  EXPECT_EQ(source.waiting.size(), 1u);
  // Cancelled: its wake-up is dropped, nothing more is registered, OnCancel runs once.
  stream->Cancel();
  EXPECT_TRUE(source.waiting.empty());
  EXPECT_EQ(stream->cancelled, 1);
  source.Add("b");
  EXPECT_EQ(got, std::vector<std::string>{"a"});
}

TEST(WaitingStream, AStreamGoneIsNotWokenNorKeptAlive) {
  Source source;
  int emitted = 0;
  {
    auto stream = std::make_shared<ItemStream>(source);
    stream->Next([&](std::optional<std::string>) { ++emitted; });
    ASSERT_EQ(source.waiting.size(), 1u);
  }
  source.Add("a");  // the wake-up finds no stream
  EXPECT_EQ(emitted, 0);
}

}  // namespace
}  // namespace tessera::server
