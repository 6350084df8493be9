#include "server/log_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/time.h"

namespace tessera::server {
namespace {

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-logs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(LogStoreTest, TailsAndFollowsAcrossRotation) {
  LogStore logs(dir_, /*max_bytes_per_pod=*/64);
  ASSERT_TRUE(logs.Append("team-a", "train", "u-1", "worker-0", "one\ntwo\nthree\n").ok());
  LogStore::Position end;
  EXPECT_EQ(*logs.Tail("team-a", "train", "u-1", "worker-0", 2, &end), "two\nthree\n");
  EXPECT_EQ(*logs.Tail("team-a", "train", "u-1", "worker-0", -1, &end), "one\ntwo\nthree\n");
  EXPECT_EQ(*logs.Tail("team-a", "train", "u-1", "worker-0", 0, &end), "");
  EXPECT_EQ(end.offset, 14);

  // Appends after `end` arrive through Since; a subscriber is woken once.
  int woken = 0;
  logs.Subscribe("team-a", "train", "u-1", "worker-0", end, [&] { ++woken; });
  ASSERT_TRUE(logs.Append("team-a", "train", "u-1", "worker-0", "four\n").ok());
  EXPECT_EQ(woken, 1);
  LogStore::Position from = end;
  EXPECT_EQ(*logs.Since("team-a", "train", "u-1", "worker-0", &from), "four\n");
  EXPECT_EQ(*logs.Since("team-a", "train", "u-1", "worker-0", &from), "");

  // Past the 64-byte cap the file rotates; a follower continues with the new file.
  const std::string big(60, 'x');
  ASSERT_TRUE(logs.Append("team-a", "train", "u-1", "worker-0", big + "\n").ok());
  EXPECT_EQ(*logs.Since("team-a", "train", "u-1", "worker-0", &from), big + "\n");
  EXPECT_EQ(from.generation, 1);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/team-a/train/u-1/worker-0.log.1"));
  EXPECT_EQ(logs.Pods("team-a", "train", "u-1"), std::vector<std::string>{"worker-0"});
}

TEST_F(LogStoreTest, NamesCannotEscapeTheDirectory) {
  LogStore logs(dir_);
  EXPECT_FALSE(logs.Append("..", "train", "u", "p", "x").ok());
  EXPECT_FALSE(logs.Append("team-a", "../../etc", "u", "p", "x").ok());
  EXPECT_FALSE(logs.Append("team-a", "train", "u", "a/b", "x").ok());
  EXPECT_FALSE(logs.Append("team-a", "train", "../u", "p", "x").ok());
  EXPECT_FALSE(logs.Append("team-a", "train", "", "p", "x").ok());
  EXPECT_TRUE(logs.Pods("..", "x", "u").empty());
}

// A log belongs to one Job: another of the same name (another uid) starts with none.
TEST_F(LogStoreTest, AJobCreatedAgainUnderItsNameHasAFreshLog) {
  LogStore logs(dir_);
  ASSERT_TRUE(logs.Append("team-a", "train", "uid-1", "main-0", "first run\n").ok());
  ASSERT_TRUE(logs.Append("team-a", "train", "uid-2", "main-0", "second run\n").ok());
  LogStore::Position end;
  EXPECT_EQ(*logs.Tail("team-a", "train", "uid-2", "main-0", -1, &end), "second run\n");
  EXPECT_EQ(*logs.Tail("team-a", "train", "uid-1", "main-0", -1, &end), "first run\n");
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// kubectl logs -f and kubectl attach end when the pod does: its end wakes the followers, who
// then read what is left and stop; the pod started again opens its log again.
TEST_F(LogStoreTest, TheEndOfAPodWakesItsFollowers) {
  LogStore logs(dir_);
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "worker-0", "one\n").ok());
  LogStore::Position end;
  ASSERT_TRUE(logs.Tail("a", "train", "u-1", "worker-0", 0, &end).ok());
  int woken = 0;
  ASSERT_TRUE(logs.Subscribe("a", "train", "u-1", "worker-0", end, [&] { ++woken; }));
  EXPECT_FALSE(logs.Ended("a", "train", "u-1", "worker-0"));
  logs.End("a", "train", "u-1", "worker-0");
  EXPECT_EQ(woken, 1);
  EXPECT_TRUE(logs.Ended("a", "train", "u-1", "worker-0"));
  logs.End("a", "train", "u-1", "worker-0");  // once
  EXPECT_EQ(woken, 1);
  // Ended: nothing to wait for.
  EXPECT_FALSE(logs.Subscribe("a", "train", "u-1", "worker-0", end, [&] { ++woken; }));
  EXPECT_FALSE(logs.Ended("a", "train", "u-1", "worker-1"));
  // Started again (a retry): open.
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "worker-0", "two\n").ok());
  EXPECT_FALSE(logs.Ended("a", "train", "u-1", "worker-0"));
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// Kubernetes' PodLogOptions as the kubelet answers them: sinceTime/sinceSeconds by each line's
// time (when the piece it starts in was received), tailLines of those, timestamps, limitBytes.
TEST_F(LogStoreTest, ReadsSinceATimeWithTimestampsAndALimit) {
  LogStore logs(dir_);
  const int64_t t0 = 1'800'000'000'000;
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "w-0", "one\ntw", t0).ok());
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "w-0", "o\nthree\n", t0 + 5000).ok());
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "w-0", "four\n", t0 + 9000).ok());
  LogStore::Position end;
  LogStore::ReadOptions o;
  o.since_ms = t0 + 1;  // "two" started in the first piece: it is older
  EXPECT_EQ(*logs.Read("a", "train", "u-1", "w-0", o, &end), "three\nfour\n");
  EXPECT_EQ(end.offset, 19);
  o.tail_lines = 1;
  EXPECT_EQ(*logs.Read("a", "train", "u-1", "w-0", o, &end), "four\n");
  o = {};
  o.timestamps = true;
  o.tail_lines = 2;
  EXPECT_EQ(*logs.Read("a", "train", "u-1", "w-0", o, &end),
            api::FormatTime(t0 + 5000) + " three\n" + api::FormatTime(t0 + 9000) + " four\n");
  o = {};
  o.limit_bytes = 6;
  EXPECT_EQ(*logs.Read("a", "train", "u-1", "w-0", o, &end), "one\ntw");
  // Output from before times were kept reads as unknown: never newer than a since.
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "w-1", "old\n").ok());
  o = {};
  o.since_ms = 1;
  EXPECT_EQ(*logs.Read("a", "train", "u-1", "w-1", o, &end), "");
}

}  // namespace
}  // namespace tessera::server
