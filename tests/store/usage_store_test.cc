#include "store/usage_store.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace tessera::store {
namespace {

core::UsageSegment Segment(std::string key, std::string ns, int64_t start, int64_t end = -1) {
  core::UsageSegment s;
  s.key = std::move(key);
  s.ns = std::move(ns);
  s.queue = "q";
  s.job = "j";
  s.pod = "p";
  s.model = "T4";
  s.gpu_milli = 500;
  s.start_ms = start;
  s.end_ms = end;
  return s;
}

TEST(UsageStore, SegmentsSurviveReopeningAndAreFoundByWindow) {
  char tmpl[] = "/tmp/tessera-usage-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/usage.db";
  {
    auto u = UsageStore::Open(path);
    ASSERT_TRUE(u.ok()) << u.status().message();
    std::vector<core::UsageSegment> opened = {Segment("a", "x", 100), Segment("b", "y", 200)};
    ASSERT_TRUE((*u)->Apply(&opened, {}).ok());
    EXPECT_GT(opened[0].id, 0);
    EXPECT_NE(opened[0].id, opened[1].id);
    const std::pair<int64_t, int64_t> close[] = {{opened[0].id, 300}};
    std::vector<core::UsageSegment> none;
    ASSERT_TRUE((*u)->Apply(&none, close).ok());
  }
  auto u = UsageStore::Open(path);
  ASSERT_TRUE(u.ok());
  auto open = (*u)->LoadOpen();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].key, "b");
  EXPECT_EQ((*open)[0].model, "T4");
  EXPECT_EQ((*open)[0].gpu_milli, 500);
  // [300, 1000): "a" ended at 300, so only the open "b" overlaps.
  auto later = (*u)->Overlapping(300, 1000, std::nullopt);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].key, "b");
  auto all = (*u)->Overlapping(0, 1000, std::nullopt);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].end_ms, 300);
  auto only_x = (*u)->Overlapping(0, 1000, std::string_view("x"));
  ASSERT_EQ(only_x->size(), 1u);
  EXPECT_EQ((*only_x)[0].key, "a");
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace tessera::store
