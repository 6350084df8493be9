// The accounting ledger's contract, on both places it lives: SQLite (a single server's
// usage.db) and etcd (replicas' shared ledger, store/etcd_usage_store.h).
#include "store/usage_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_fixture.h"
#include "store/etcd_usage_store.h"

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

// Opens the same ledger each time it is called (a restart, or another replica).
class UsageStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "etcd") {
      ASSERT_TRUE(SharedEtcd().ready()) << "etcd did not start";
      etcd_ = *ParseEtcdUrl(TestEtcdUrl());
    } else {
      char tmpl[] = "/tmp/tessera-usage-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<UsageStore> Open() {
    auto u =
        GetParam() == "etcd" ? OpenEtcdUsageStore(etcd_) : UsageStore::Open(dir_ + "/usage.db");
    EXPECT_TRUE(u.ok()) << u.status().message();
    return u.ok() ? std::move(u).value() : nullptr;
  }
  std::string dir_;
  EtcdOptions etcd_;
};

TEST_P(UsageStoreTest, SegmentsSurviveReopeningAndAreFoundByWindow) {
  {
    auto u = Open();
    ASSERT_NE(u, nullptr);
    std::vector<core::UsageSegment> opened = {Segment("a", "x", 100), Segment("b", "y", 200)};
    ASSERT_TRUE(u->Apply(&opened, {}).ok());
    EXPECT_GT(opened[0].id, 0);
    EXPECT_NE(opened[0].id, opened[1].id);
    const std::pair<int64_t, int64_t> close[] = {{opened[0].id, 300}};
    std::vector<core::UsageSegment> none;
    ASSERT_TRUE(u->Apply(&none, close).ok());
  }
  auto u = Open();
  ASSERT_NE(u, nullptr);
  auto open = u->LoadOpen();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].key, "b");
  EXPECT_EQ((*open)[0].model, "T4");
  EXPECT_EQ((*open)[0].gpu_milli, 500);
  // [300, 1000): "a" ended at 300, so only the open "b" overlaps.
  auto later = u->Overlapping(300, 1000, std::nullopt);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].key, "b");
  auto all = u->Overlapping(0, 1000, std::nullopt);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].end_ms, 300);
  auto only_x = u->Overlapping(0, 1000, std::string_view("x"));
  ASSERT_EQ(only_x->size(), 1u);
  EXPECT_EQ((*only_x)[0].key, "a");
  // A window before "b" began holds nothing of it; one that ends where "a" began, nothing.
  EXPECT_TRUE(u->Overlapping(0, 100, std::nullopt)->empty());
}

// More segments than one etcd transaction takes (128 operations): every one is stored once,
// with an id of its own, and closed ones are found by window.
TEST_P(UsageStoreTest, ManySegmentsAtOnceAreEachStoredOnce) {
  auto u = Open();
  ASSERT_NE(u, nullptr);
  std::vector<core::UsageSegment> opened;
  for (int i = 0; i < 300; ++i) opened.push_back(Segment("k" + std::to_string(i), "x", i));
  ASSERT_TRUE(u->Apply(&opened, {}).ok());
  std::set<int64_t> ids;
  for (const core::UsageSegment& s : opened) ids.insert(s.id);
  EXPECT_EQ(ids.size(), 300u);
  EXPECT_EQ(ids.count(0), 0u);
  std::vector<std::pair<int64_t, int64_t>> close;
  for (int i = 0; i < 200; ++i) close.emplace_back(opened[i].id, 1000 + i);
  std::vector<core::UsageSegment> none;
  ASSERT_TRUE(u->Apply(&none, close).ok());
  EXPECT_EQ(u->LoadOpen()->size(), 100u);
  // Ended after 1099: 100 closed ones (1100..1199) and the 100 open ones.
  EXPECT_EQ(u->Overlapping(1099, 5000, std::nullopt)->size(), 200u);
  EXPECT_EQ(u->Overlapping(0, 5000, std::nullopt)->size(), 300u);
  // A segment stored with its end (a ledger copied from elsewhere) is stored closed.
  std::vector<core::UsageSegment> copied = {Segment("old", "x", 10, 20)};
  ASSERT_TRUE(u->Apply(&copied, {}).ok());
  EXPECT_EQ(u->LoadOpen()->size(), 100u);
  auto early = u->Overlapping(0, 30, std::nullopt);
  ASSERT_TRUE(early.ok());
  ASSERT_EQ(early->size(), 31u);  // "old" and k0..k29
  EXPECT_EQ(early->back().key, "old");
}

INSTANTIATE_TEST_SUITE_P(Stores, UsageStoreTest, ::testing::Values("sqlite", "etcd"),
                         [](const auto& info) { return info.param; });

// On etcd, replicas share the ledger: what one writes another reads, their writes never share
// an id, and a deposed leader's fence refuses its writes.
class EtcdUsageStoreTest : public UsageStoreTest {};

TEST_P(EtcdUsageStoreTest, ReplicasShareOneLedgerAndAFenceRefusesADeposedLeader) {
  auto a = Open(), b = Open();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<core::UsageSegment> from_a = {Segment("a", "x", 100)};
  ASSERT_TRUE(a->Apply(&from_a, {}).ok());
  auto seen = b->LoadOpen();
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->size(), 1u);
  EXPECT_EQ((*seen)[0].id, from_a[0].id);
  const std::pair<int64_t, int64_t> close[] = {{from_a[0].id, 500}};
  std::vector<core::UsageSegment> none;
  ASSERT_TRUE(b->Apply(&none, close).ok());
  EXPECT_TRUE(a->LoadOpen()->empty());
  EXPECT_EQ(a->Overlapping(0, 1000, std::nullopt)->at(0).end_ms, 500);

  // Concurrent writers: each segment gets an id of its own.
  std::vector<core::UsageSegment> many_a, many_b;
  for (int i = 0; i < 50; ++i) {
    many_a.push_back(Segment("ca" + std::to_string(i), "x", 1));
    many_b.push_back(Segment("cb" + std::to_string(i), "x", 1));
  }
  std::vector<std::thread> writers;
  Status sa, sb;
  writers.emplace_back([&] {
    for (auto& s : many_a) {
      std::vector<core::UsageSegment> one = {s};
      if (sa = a->Apply(&one, {}); !sa.ok()) return;
    }
  });
  writers.emplace_back([&] {
    for (auto& s : many_b) {
      std::vector<core::UsageSegment> one = {s};
      if (sb = b->Apply(&one, {}); !sb.ok()) return;
    }
  });
  for (auto& t : writers) t.join();
  ASSERT_TRUE(sa.ok()) << sa.message();
  ASSERT_TRUE(sb.ok()) << sb.message();
  auto open = a->LoadOpen();
  ASSERT_TRUE(open.ok());
  std::set<int64_t> ids;
  for (const auto& s : *open) ids.insert(s.id);
  EXPECT_EQ(open->size(), 100u);
  EXPECT_EQ(ids.size(), 100u);

  // A fence whose key is not the one created at its revision: nothing is written.
  const Fence deposed{etcd_.prefix + "_election/scheduler", 7};
  std::vector<core::UsageSegment> late = {Segment("late", "x", 1)};
  Status refused = a->Apply(&late, {}, &deposed);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.message();
  EXPECT_EQ(late[0].id, 0);
  EXPECT_EQ(a->LoadOpen()->size(), 100u);
}

INSTANTIATE_TEST_SUITE_P(Etcd, EtcdUsageStoreTest, ::testing::Values("etcd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera::store
