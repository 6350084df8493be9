#include "store/txn_group.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "store/etcd_client.h"

namespace tessera::store {
namespace {

using nlohmann::json;

json PutOp(const std::string& key) {
  return {{"request_put", {{"key", Base64(key)}, {"value", Base64("v")}}}};
}
json ModZero(const std::string& key) {
  return {{"key", Base64(key)}, {"target", "MOD"}, {"result", "EQUAL"}, {"mod_revision", "0"}};
}

// A fake etcd: holds the first send until `release`, records each send's operations, fails the
// comparisons of a txn that touches a key in `taken`, and gives each send the next revision.
struct FakeEtcd {
  std::mutex mu;
  std::condition_variable cv;
  bool hold_first = true;
  bool released = false;
  int sends = 0;
  int64_t revision = 100;
  std::vector<size_t> ops_per_send;
  std::set<std::string> taken;  // base64 keys that exist

  Result<std::optional<int64_t>> Send(json compare, json ops, const Fence*) {
    std::unique_lock<std::mutex> lock(mu);
    const int n = sends++;
    ops_per_send.push_back(ops.size());
    if (n == 0 && hold_first) {
      cv.notify_all();
      cv.wait(lock, [&] { return released; });
    }
    for (const json& c : compare) {
      if (taken.contains(c["key"].get<std::string>())) return std::optional<int64_t>();
    }
    for (const json& o : ops) taken.insert(o["request_put"]["key"].get<std::string>());
    return std::optional<int64_t>(++revision);
  }
};

// Runs `first` and waits until it is in flight, then queues `rest` (each on its own thread) and
// waits until they are queued, then lets the first finish. Returns each transaction's result.
std::vector<Result<std::optional<int64_t>>> RunWithOneInFlight(FakeEtcd& etcd, TxnGroup& group,
                                                               const std::vector<std::string>& keys,
                                                               size_t max_queued_wait_ms = 300) {
  std::vector<Result<std::optional<int64_t>>> results(keys.size(), std::optional<int64_t>());
  std::vector<std::thread> threads;
  auto run = [&](size_t i) {
    results[i] = group.Run(json::array({ModZero(keys[i])}), json::array({PutOp(keys[i])}), nullptr);
  };
  threads.emplace_back(run, 0);
  {
    std::unique_lock<std::mutex> lock(etcd.mu);
    etcd.cv.wait(lock, [&] { return etcd.sends == 1; });
  }
  for (size_t i = 1; i < keys.size(); ++i) threads.emplace_back(run, i);
  // The others are queued behind the send in flight: they cannot finish before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(max_queued_wait_ms));
  {
    std::lock_guard<std::mutex> lock(etcd.mu);
    etcd.released = true;
  }
  etcd.cv.notify_all();
  for (std::thread& t : threads) t.join();
  return results;
}

TxnGroup GroupOn(FakeEtcd& etcd, size_t max_ops = 128) {
  return TxnGroup([&etcd](json c, json o, const Fence* f) { return etcd.Send(c, o, f); }, max_ops,
                  1 << 20);
}

TEST(TxnGroupTest, TransactionsQueuedBehindOneInFlightGoAsOne) {
  FakeEtcd etcd;
  TxnGroup group = GroupOn(etcd);
  auto results = RunWithOneInFlight(etcd, group, {"a", "b", "c", "d", "e"});
  // The first alone, then the four queued behind it in one transaction of four puts.
  ASSERT_EQ(etcd.ops_per_send, (std::vector<size_t>{1, 4}));
  EXPECT_EQ(*results[0].value(), 101);
  for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(*results[i].value(), 102) << i;
  EXPECT_EQ(group.sent(), 2);
  EXPECT_EQ(group.run(), 5);
}

TEST(TxnGroupTest, AFailedComparisonSendsEachAloneAndOnlyItsOwnerLearnsIt) {
  FakeEtcd etcd;
  etcd.taken.insert(Base64("c"));  // c exists: its create fails
  TxnGroup group = GroupOn(etcd);
  auto results = RunWithOneInFlight(etcd, group, {"a", "b", "c", "d"});
  // a alone; b, c, d together (refused, as c exists); then b, c, d each alone.
  ASSERT_EQ(etcd.ops_per_send, (std::vector<size_t>{1, 3, 1, 1, 1}));
  EXPECT_TRUE(results[1].value().has_value());
  EXPECT_FALSE(results[2].value().has_value());
  EXPECT_TRUE(results[3].value().has_value());
}

TEST(TxnGroupTest, TwoWritesOfOneKeyNeverShareATransaction) {
  FakeEtcd etcd;
  TxnGroup group = GroupOn(etcd);
  auto results = RunWithOneInFlight(etcd, group, {"a", "b", "b", "c"});
  // etcd refuses a txn that puts one key twice: the second b waits for a transaction of its own.
  ASSERT_EQ(etcd.ops_per_send.size(), 3u);
  EXPECT_EQ(etcd.ops_per_send[1], 2u);  // b and c
  EXPECT_EQ(etcd.ops_per_send[2], 1u);  // the second b, refused: b exists by then
  int created_b = 0;
  for (size_t i : {1, 2}) created_b += results[i].value().has_value();
  EXPECT_EQ(created_b, 1);
}

TEST(TxnGroupTest, ABatchStaysWithinEtcdsOperationLimit) {
  FakeEtcd etcd;
  TxnGroup group = GroupOn(etcd, /*max_ops=*/2);
  RunWithOneInFlight(etcd, group, {"a", "b", "c", "d", "e"});
  ASSERT_EQ(etcd.ops_per_send, (std::vector<size_t>{1, 2, 2}));
}

TEST(TxnGroupTest, DifferentFencesAreNotMerged) {
  FakeEtcd etcd;
  TxnGroup group = GroupOn(etcd);
  Fence one{"/leader", 5}, two{"/leader", 9};
  std::thread first(
      [&] { (void)group.Run(json::array({ModZero("a")}), json::array({PutOp("a")}), nullptr); });
  {
    std::unique_lock<std::mutex> lock(etcd.mu);
    etcd.cv.wait(lock, [&] { return etcd.sends == 1; });
  }
  std::thread b(
      [&] { (void)group.Run(json::array({ModZero("b")}), json::array({PutOp("b")}), &one); });
  std::thread c(
      [&] { (void)group.Run(json::array({ModZero("c")}), json::array({PutOp("c")}), &two); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    std::lock_guard<std::mutex> lock(etcd.mu);
    etcd.released = true;
  }
  etcd.cv.notify_all();
  first.join();
  b.join();
  c.join();
  ASSERT_EQ(etcd.ops_per_send, (std::vector<size_t>{1, 1, 1}));
}

TEST(TxnGroupTest, AnErrorReachesEveryMemberOfItsTransaction) {
  std::atomic<int> sends{0};
  TxnGroup group(
      [&](json, json, const Fence*) -> Result<std::optional<int64_t>> {
        ++sends;
        return Unavailable("etcd has no quorum");
      },
      128, 1 << 20);
  auto r = group.Run(json::array({ModZero("a")}), json::array({PutOp("a")}), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(sends.load(), 1);
}

}  // namespace
}  // namespace tessera::store
