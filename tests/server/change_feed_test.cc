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

TEST_F(ChangeFeedTest, ARoutedWaiterWakesOnlyForAChangeOnItsRoutesAndAnUnsubscribedOneNever) {
  // A change's routes: its name, and "node:<n>" for a body naming node n.
  std::vector<std::string> routed;  // the changes the router was asked about
  feed_->set_router([&](const store::Change& c) {
    routed.push_back(c.object.key.name);
    return std::vector<std::string>{"job:" + c.object.key.name, "node:" + c.object.key.name};
  });
  int mine = 0, shown = 0, gone = 0;
  ASSERT_TRUE(feed_->SubscribeRouted(feed_->head(), [&] { ++mine; }, "Job", {"node:mine"}));
  ASSERT_TRUE(feed_->SubscribeRouted(feed_->head(), [&] { ++shown; }, "Job", {"job:shown"}));
  const auto id = feed_->SubscribeRouted(feed_->head(), [&] { ++gone; }, "Job", {"node:mine"});
  ASSERT_TRUE(id);
  feed_->Unsubscribe(*id);
  feed_->Unsubscribe(*id);  // twice is harmless
  EXPECT_EQ(feed_->subscribers(), 2u);
  Put("Job", "other");
  Put("Lease", "mine");  // its routes match, its kind does not
  EXPECT_EQ(mine + shown, 0);
  EXPECT_EQ(routed, (std::vector<std::string>{"other", "mine"}));
  Put("Job", "mine");
  EXPECT_EQ(mine, 1);
  EXPECT_EQ(shown, 0);
  Put("Job", "shown");
  EXPECT_EQ(shown, 1);
  EXPECT_EQ(gone, 0);
  EXPECT_EQ(feed_->subscribers(), 0u);
  routed.clear();
  Put("Job", "mine");  // with no routed waiter the router is not asked
  EXPECT_TRUE(routed.empty());
}

TEST_F(ChangeFeedTest, ReadersShareEachChangeWithTheRoutesWorkedOutOnceAtPublication) {
  int asked = 0;
  feed_->set_router([&](const store::Change& c) {
    ++asked;
    return std::vector<std::string>{"node:" + c.object.key.name};
  });
  const int64_t start = feed_->head();
  Put("Job", "before");  // no routed waiter: published without routes
  ASSERT_TRUE(feed_->SubscribeRouted(feed_->head(), [] {}, "Job", {"node:x"}));
  Put("Job", "x");
  EXPECT_EQ(asked, 1);
  auto a = feed_->AfterShared(start, 10);
  auto b = feed_->AfterShared(start, 10);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[1].get(), (*b)[1].get());  // one copy for every reader
  EXPECT_FALSE((*a)[0]->routed);
  EXPECT_TRUE((*a)[1]->routed);
  EXPECT_EQ((*a)[1]->routes, std::vector<std::string>{"node:x"});
  EXPECT_EQ(asked, 1);  // the waiter's wake-up used the routes worked out at publication
  // The copying read gives the same changes.
  auto copies = feed_->After(start, 10);
  ASSERT_TRUE(copies.ok());
  ASSERT_EQ(copies->size(), 2u);
  EXPECT_EQ((*copies)[1].object.key.name, "x");
  EXPECT_EQ((*copies)[1].revision, (*a)[1]->change.revision);
}

// A routed reader reads the kept changes on its routes through the feed's index: each once, in
// order, up to a limit; nothing when the routes of some change it would read are not known.
TEST_F(ChangeFeedTest, ARoutedReaderReadsOnlyTheChangesOnItsRoutes) {
  // Routes: "job:<name>", and "node:<n>" for a name "<n>-..." .
  feed_->set_router([](const store::Change& c) {
    const std::string& name = c.object.key.name;
    return std::vector<std::string>{"job:" + name, "node:" + name.substr(0, name.find('-'))};
  });
  Put("Job", "a-before");  // no routed waiter: its routes are not worked out
  const int64_t before = feed_->head();
  EXPECT_FALSE(feed_->AfterRoutes(before - 1, {"node:a"}, 10).has_value());
  ASSERT_TRUE(feed_->SubscribeRouted(feed_->head(), [] {}, "Job", {"node:z"}));
  ASSERT_TRUE(feed_->SubscribeRouted(feed_->head(), [] {}, "Job", {"node:z"}));
  Put("Job", "a-1");
  Put("Job", "b-1");
  Put("Job", "a-2");
  Put("Lease", "a-3");
  Put("Job", "b-2");
  auto names = [](const ChangeFeed::RoutedChanges& r) {
    std::vector<std::string> out;
    for (const ChangeFeed::Shared& p : r.changes) out.push_back(p->change.object.key.name);
    return out;
  };
  auto a = feed_->AfterRoutes(before, {"node:a", "job:a-2"}, 10);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(names(*a), (std::vector<std::string>{"a-1", "a-2", "a-3"}));  // a-2 once
  EXPECT_EQ(a->through, feed_->head());
  // A limit cuts the read: `through` is the last change given.
  auto first = feed_->AfterRoutes(before, {"node:a"}, 1);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(names(*first), std::vector<std::string>{"a-1"});
  EXPECT_EQ(first->through, first->changes[0]->change.revision);
  auto rest = feed_->AfterRoutes(first->through, {"node:a"}, 10);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(names(*rest), (std::vector<std::string>{"a-2", "a-3"}));
  EXPECT_TRUE(feed_->AfterRoutes(feed_->head(), {"node:a"}, 10)->changes.empty());
  EXPECT_TRUE(feed_->AfterRoutes(before, {"node:c"}, 10)->changes.empty());
}

// The index keeps what the feed keeps: a reader behind the kept changes reads them all.
TEST_F(ChangeFeedTest, ARoutedReaderBehindTheKeptChangesIsToldToReadThemAll) {
  feed_ = std::make_unique<ChangeFeed>(*store_, 4);
  feed_->set_router([](const store::Change& c) {
    return std::vector<std::string>{"node:" + c.object.key.name.substr(0, 1)};
  });
  ASSERT_TRUE(feed_->SubscribeRouted(feed_->head(), [] {}, "Job", {"node:z"}));
  const int64_t start = feed_->head();
  for (const char* name : {"a1", "b1", "b2", "b3", "b4", "a2"}) Put("Job", name);
  EXPECT_FALSE(feed_->AfterRoutes(start, {"node:a"}, 10).has_value());
  auto kept = feed_->AfterRoutes(feed_->head() - 4, {"node:a"}, 10);
  ASSERT_TRUE(kept.has_value());
  ASSERT_EQ(kept->changes.size(), 1u);
  EXPECT_EQ(kept->changes[0]->change.object.key.name, "a2");
}

TEST_F(ChangeFeedTest, ARoutedWaiterMovesOnOnceTheHeadIsFarAhead) {
  feed_->set_router([](const store::Change&) { return std::vector<std::string>{}; });
  const int64_t from = feed_->head();
  int woke = 0;
  ASSERT_TRUE(feed_->SubscribeRouted(from, [&] { ++woke; }, "Job", {"node:n1"}));
  std::vector<store::Write> writes;
  for (int64_t i = 0; i < ChangeFeed::kRoutedCatchUp - 1; ++i) {
    writes.push_back({store::Write::Op::kPut, {"Job", "", "j" + std::to_string(i)}, "{}", {}});
  }
  ASSERT_TRUE(store_->Commit(writes).ok());
  feed_->CatchUp();
  EXPECT_EQ(woke, 0);
  Put("Job", "one-more");
  EXPECT_EQ(woke, 1);
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
