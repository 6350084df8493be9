// The scheduler's election on etcd (store/etcd_election.h) and the fence its writes carry, on a
// member of Debian's etcd started for the test process.
#include "store/etcd_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_fixture.h"
#include "store/etcd_store.h"

namespace tessera::store {
namespace {

class EtcdElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(SharedEtcd().ready()) << "etcd did not start";
    etcd_ = *ParseEtcdUrl(TestEtcdUrl());
  }
  EtcdOptions etcd_;
};

TEST_F(EtcdElectionTest, OneLeadsAndAnotherTakesOverWhenItResigns) {
  auto a = std::make_unique<EtcdElection>(etcd_, "scheduler", "replica-a", 4);
  ASSERT_TRUE(Eventually([&] { return a->Leading().has_value(); })) << "a never led";
  EtcdElection b(etcd_, "scheduler", "replica-b", 4);
  ASSERT_TRUE(Eventually([&] { return b.Leader() == "replica-a"; })) << b.Leader();
  EXPECT_FALSE(b.Leading().has_value());
  // A resigns (its lease revoked): B leads within its campaign's retry, not a whole TTL.
  const auto resigned = std::chrono::steady_clock::now();
  a.reset();
  ASSERT_TRUE(Eventually([&] { return b.Leading().has_value(); })) << "b never led";
  EXPECT_LT(std::chrono::steady_clock::now() - resigned, std::chrono::seconds(3));
  EXPECT_EQ(b.Leader(), "replica-b");
  EXPECT_EQ(b.transitions(), 1);
}

// A leader whose lease ended (as when it was stopped past its TTL) is deposed: another is
// elected, and a write under the old leader's fence is refused whole, while the new leader's
// goes through.
TEST_F(EtcdElectionTest, ADeposedLeadersWritesAreFencedOff) {
  auto opened = OpenEtcdStore({.etcd = etcd_});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<Store> store = std::move(opened).value();
  EtcdElection a(etcd_, "scheduler", "replica-a", 4);
  ASSERT_TRUE(Eventually([&] { return a.Leading().has_value(); }));
  const Fence old = *a.Leading();
  const Write bind{Write::Op::kPut, {"Job", "team-a", "train"}, "{\"bound\":\"a\"}", {}};
  ASSERT_TRUE(store->CommitIf(std::vector<Write>{bind}, old).ok());

  // Its lease ends without it knowing (revoked behind its back): the key goes with it.
  EtcdClient client(etcd_);
  auto key = client.Call("kv/range", {{"key", Base64(a.key())}});
  ASSERT_TRUE(key.ok());
  const std::string lease = std::to_string(EtcdInt((*key)["kvs"][0], "lease"));
  ASSERT_TRUE(client.Call("lease/revoke", {{"ID", lease}}).ok());
  EtcdElection b(etcd_, "scheduler", "replica-b", 4);
  ASSERT_TRUE(Eventually([&] { return b.Leading().has_value(); }));
  EXPECT_NE(b.Leading()->create_revision, old.create_revision);

  const Write stale{Write::Op::kPut, {"Job", "team-a", "train"}, "{\"bound\":\"a-again\"}", {}};
  auto refused = store->CommitIf(std::vector<Write>{stale}, old);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().message();
  EXPECT_EQ((*store->Get({"Job", "team-a", "train"}))->body, "{\"bound\":\"a\"}");
  const Write fresh{Write::Op::kPut, {"Job", "team-a", "train"}, "{\"bound\":\"b\"}", {}};
  EXPECT_TRUE(store->CommitIf(std::vector<Write>{fresh}, *b.Leading()).ok());
  // The deposed replica learns it at its next renewal, and stops counting itself the leader.
  EXPECT_TRUE(Eventually([&] { return !a.Leading().has_value(); }));
}

// Two replicas' stores on one prefix: what one commits reaches the other's change log, and its
// listener is called (that is how another replica's watchers and caches learn of it).
TEST_F(EtcdElectionTest, AnotherReplicasCommitsReachThisOnesChanges) {
  auto one = OpenEtcdStore({.etcd = etcd_});
  auto two = OpenEtcdStore({.etcd = etcd_});
  ASSERT_TRUE(one.ok() && two.ok());
  std::atomic<int> heard{0};
  (*two)->OnChange([&] { ++heard; });
  const int64_t from = (*two)->Revision();
  auto r =
      (*one)->Commit(std::vector<Write>{{Write::Op::kCreate, {"Job", "team-a", "x"}, "{}", {}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(Eventually([&] { return heard > 0; })) << "no change heard";
  auto changes = (*two)->ChangesAfter(from, 10);
  ASSERT_TRUE(changes.ok()) << changes.status().message();
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ((*changes)[0].object.key.name, "x");
  EXPECT_EQ((*two)->Revision(), (*r)[0]);
  (*two)->OnChange({});
}

}  // namespace
}  // namespace tessera::store
