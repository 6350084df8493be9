// What only the etcd store does (the contract every store keeps is in store_test.cc): reads from
// its watch-fed cache, loaded at open and kept by the watch, so that another replica's writes
// reach them; concurrent commits grouped into shared transactions.
#include "store/etcd_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_fixture.h"

namespace tessera::store {
namespace {

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(SharedEtcd().ready()) << "etcd did not start";
    etcd_ = *ParseEtcdUrl(TestEtcdUrl());
  }
  std::unique_ptr<Store> Open() {
    auto opened = OpenEtcdStore({.etcd = etcd_});
    EXPECT_TRUE(opened.ok()) << opened.status().message();
    return opened.ok() ? std::move(opened).value() : nullptr;
  }
  EtcdOptions etcd_;
};

bool Holds(Store& s, const ObjectKey& key, const std::string& body) {
  auto got = s.Get(key);
  return got.ok() && got->has_value() && (*got)->body == body;
}

TEST_F(EtcdStoreTest, ReadsSeeWhatWasThereAtOpenAndWhatOtherReplicasWriteLater) {
  // Written before either store opened, straight into etcd.
  EtcdClient client(etcd_);
  ASSERT_TRUE(client
                  .Call("kv/put", {{"key", Base64(etcd_.prefix + "Job/team-a/before")},
                                   {"value", Base64("{\"n\":0}")}})
                  .ok());
  std::unique_ptr<Store> one = Open(), two = Open();
  ASSERT_TRUE(one && two);
  EXPECT_TRUE(Eventually([&] { return Holds(*one, {"Job", "team-a", "before"}, "{\"n\":0}"); }));

  // Another replica creates, updates and deletes: this one's reads follow.
  const ObjectKey x{"Job", "team-a", "x"};
  ASSERT_TRUE(two->Commit(std::vector<Write>{{Write::Op::kCreate, x, "{\"n\":1}", {}}}).ok());
  EXPECT_TRUE(Eventually([&] { return Holds(*one, x, "{\"n\":1}"); }));
  auto listed = one->List("Job", std::string_view("team-a"));
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].key.name, "before");
  EXPECT_EQ((*listed)[1].key.name, "x");
  ASSERT_TRUE(two->Commit(std::vector<Write>{{Write::Op::kPut, x, "{\"n\":2}", {}}}).ok());
  EXPECT_TRUE(Eventually([&] { return Holds(*one, x, "{\"n\":2}"); }));
  ASSERT_TRUE(two->Commit(std::vector<Write>{{Write::Op::kDelete, x, "", {}}}).ok());
  EXPECT_TRUE(Eventually([&] {
    auto got = one->Get(x);
    return got.ok() && !got->has_value();
  }));
  // Its own writes it reads at once, with the version the commit gave.
  auto mine = one->Commit(std::vector<Write>{{Write::Op::kCreate, x, "{\"n\":3}", {}}});
  ASSERT_TRUE(mine.ok());
  auto got = one->Get(x);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->body, "{\"n\":3}");
  EXPECT_EQ((*got)->version, (*mine)[0]);
}

// A write checked first on the cache, which may not hold another replica's latest write yet:
// at the version that replica gave, it succeeds all the same (checked again on etcd's own read).
TEST_F(EtcdStoreTest, AWriteAtAVersionAnotherReplicaJustGaveSucceeds) {
  std::unique_ptr<Store> one = Open(), two = Open();
  ASSERT_TRUE(one && two);
  const ObjectKey x{"Job", "team-a", "x"};
  ASSERT_TRUE(two->Commit(std::vector<Write>{{Write::Op::kCreate, x, "{\"n\":0}", {}}}).ok());
  for (int i = 1; i <= 20; ++i) {
    auto given = two->Commit(
        std::vector<Write>{{Write::Op::kPut, x, "{\"n\":" + std::to_string(i) + "}", {}}});
    ASSERT_TRUE(given.ok()) << given.status().message();
    const std::string body = "{\"by\":\"one\",\"n\":" + std::to_string(i) + "}";
    auto r = one->Commit(std::vector<Write>{{Write::Op::kPut, x, body, (*given)[0]}});
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().message();
    // And a stale version is refused, whichever read checked it.
    auto stale = one->Commit(std::vector<Write>{{Write::Op::kPut, x, "{}", (*given)[0]}});
    EXPECT_EQ(stale.status().code(), StatusCode::kConflict) << i;
  }
}

// Creations from many threads at once: each gets its own outcome (one winner per name), the
// versions each was given are what reads return, and fewer transactions than creations were
// needed when they overlapped.
TEST_F(EtcdStoreTest, ConcurrentCreationsEachGetTheirOwnOutcome) {
  std::unique_ptr<Store> s = Open();
  ASSERT_TRUE(s);
  constexpr int kThreads = 8, kEach = 25;
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> versions(kThreads);
  std::vector<int> refused(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        // Two threads race for every name: exactly one creates it.
        const ObjectKey key{"Job", "race", "j" + std::to_string(t / 2) + "-" + std::to_string(i)};
        auto r = s->Commit(std::vector<Write>{
            {Write::Op::kCreate, key, "{\"by\":" + std::to_string(t) + "}", {}}});
        if (r.ok()) {
          versions[t].push_back((*r)[0]);
        } else {
          EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists) << r.status().message();
          ++refused[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  int created = 0, lost = 0;
  for (int t = 0; t < kThreads; ++t) {
    created += static_cast<int>(versions[t].size());
    lost += refused[t];
  }
  EXPECT_EQ(created, kThreads / 2 * kEach);
  EXPECT_EQ(lost, kThreads / 2 * kEach);
  auto listed = s->List("Job", std::string_view("race"));
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), static_cast<size_t>(kThreads / 2 * kEach));
  std::set<int64_t> given;
  for (const auto& v : versions) given.insert(v.begin(), v.end());
  for (const StoredObject& o : *listed) EXPECT_TRUE(given.contains(o.version)) << o.key.name;
}

}  // namespace
}  // namespace tessera::store
