#include "server/change_feed.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace tessera::server {
namespace {

class ChangeFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore(":memory:");
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(*s);
    feed_ = std::make_unique<ChangeFeed>(*store_);
  }
  // Commits one object and publishes it.
  void Put(const std::string& kind, const std::string& name) {
    const store::Write w{store::Write::Op::kPut, {kind, "", name}, "{\"n\":\"" + name + "\"}", {}};
    ASSERT_TRUE(store_->Commit({&w, 1}).ok());
    feed_->CatchUp();
  }
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<ChangeFeed> feed_;
};

TEST_F(ChangeFeedTest, AWaiterOfOneKindSleepsThroughOtherKindsAndWakesOnceForItsOwn) {
  std::vector<std::string> woke;
  ASSERT_TRUE(feed_->Subscribe(
      feed_->head(), [&] { woke.push_back("jobs"); }, "Job"));
  ASSERT_TRUE(feed_->Subscribe(feed_->head(), [&] { woke.push_back("any"); }));
  Put("Lease", "n1");
  EXPECT_EQ(woke, std::vector<std::string>{"any"});
  EXPECT_EQ(feed_->subscribers(), 1u);
  Put("Lease", "n2");
  Put("Job", "j1");
  EXPECT_EQ(woke, (std::vector<std::string>{"any", "jobs"}));
  EXPECT_EQ(feed_->subscribers(), 0u);
  Put("Job", "j2");  // each waiter wakes once
  EXPECT_EQ(woke.size(), 2u);
}

TEST_F(ChangeFeedTest, AFilteredWaiterWakesOnlyForAChangeItAcceptsAndAnUnsubscribedOneNever) {
  int mine = 0, gone = 0;
  ASSERT_TRUE(feed_->Subscribe(
      feed_->head(), [&] { ++mine; }, "Job",
      [](const store::Change& c) { return c.object.key.name == "mine"; }));
  const auto id = feed_->Subscribe(
      feed_->head(), [&] { ++gone; }, "Job");
  ASSERT_TRUE(id);
  feed_->Unsubscribe(*id);
  feed_->Unsubscribe(*id);  // twice is harmless
  Put("Job", "other");
  EXPECT_EQ(mine, 0);
  EXPECT_EQ(feed_->subscribers(), 1u);
  Put("Job", "mine");
  EXPECT_EQ(mine, 1);
  EXPECT_EQ(gone, 0);
  EXPECT_EQ(feed_->subscribers(), 0u);
}

TEST_F(ChangeFeedTest, SubscribingBehindTheHeadRegistersNothing) {
  Put("Job", "j1");
  EXPECT_FALSE(feed_->Subscribe(
      feed_->head() - 1, [] {}, "Job"));
  EXPECT_EQ(feed_->subscribers(), 0u);
  auto changes = feed_->After(0, 10);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ((*changes)[0].object.key.name, "j1");
}

}  // namespace
}  // namespace tessera::server
