// Periodic compaction (store/compactor.h): one interval of history kept, and none compacted by
// a replica that does not lead.
#include "store/compactor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "store/memory_store.h"

namespace tessera::store {
namespace {

Write Put(const std::string& name, const std::string& body) {
  return {Write::Op::kPut, {"Job", "team-a", name}, body, {}};
}

TEST(CompactorTest, KeepsOneIntervalOfHistoryAndOnlyWhileLeading) {
  MemoryStore store;
  std::atomic<bool> leading{false};
  Compactor compactor(
      store, [&] { return leading.load(); }, std::chrono::milliseconds(200));
  ASSERT_TRUE(store.Commit(std::vector<Write>{Put("a", "1")}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(compactor.compacted(), 0) << "compacted while another replica leads";
  EXPECT_TRUE(store.ChangesAfter(0, 10).ok());

  leading = true;
  const int64_t first = store.Revision();
  for (int i = 0; i < 300 && compactor.compacted() < first; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(compactor.compacted(), first);
  EXPECT_EQ(store.ChangesAfter(0, 10).status().code(), StatusCode::kFailedPrecondition);
  // What came since is kept for at least an interval.
  ASSERT_TRUE(store.Commit(std::vector<Write>{Put("a", "2")}).ok());
  auto recent = store.ChangesAfter(first, 10);
  ASSERT_TRUE(recent.ok()) << recent.status().message();
  EXPECT_EQ(recent->size(), 1u);
}

}  // namespace
}  // namespace tessera::store
