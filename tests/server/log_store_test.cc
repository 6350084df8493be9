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

// The last `n` lines of a pod's log (all when < 0).
std::string Tail(const LogStore& logs, std::string_view ns, std::string_view job,
                 std::string_view uid, std::string_view pod, int64_t n, LogStore::Position* end,
                 LogStore::Runs runs = LogStore::Runs::kAll) {
  LogStore::ReadOptions o;
  o.tail_lines = n;
  o.runs = runs;
  auto text = logs.Read(ns, job, uid, pod, o, end);
  return text.ok() ? *text : "error: " + text.status().message();
}

TEST_F(LogStoreTest, TailsAndFollowsAcrossRotation) {
  LogStore logs(dir_, /*max_bytes_per_pod=*/64);
  ASSERT_TRUE(logs.Append("team-a", "train", "u-1", "worker-0", "one\ntwo\nthree\n").ok());
  LogStore::Position end;
  EXPECT_EQ(Tail(logs, "team-a", "train", "u-1", "worker-0", 2, &end), "two\nthree\n");
  EXPECT_EQ(Tail(logs, "team-a", "train", "u-1", "worker-0", -1, &end), "one\ntwo\nthree\n");
  EXPECT_EQ(Tail(logs, "team-a", "train", "u-1", "worker-0", 0, &end), "");
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
  EXPECT_EQ(Tail(logs, "team-a", "train", "uid-2", "main-0", -1, &end), "second run\n");
  EXPECT_EQ(Tail(logs, "team-a", "train", "uid-1", "main-0", -1, &end), "first run\n");
}

// kubectl logs -f and kubectl attach end when the pod does: its end wakes the followers, who
// then read what is left and stop; the pod started again opens its log again.
TEST_F(LogStoreTest, TheEndOfAPodWakesItsFollowers) {
  LogStore logs(dir_);
  ASSERT_TRUE(logs.Append("a", "train", "u-1", "worker-0", "one\n").ok());
  LogStore::Position end;
  ASSERT_EQ(Tail(logs, "a", "train", "u-1", "worker-0", 0, &end), "");
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

// A pod's container runs more than once (restartPolicy, a retried attempt, placed again): a
// read shows its current run, as the kubelet's; --previous the one before; a follower of a run
// stops when the next starts. A retried Append marks its run once.
TEST_F(LogStoreTest, ReadsTheCurrentOrThePreviousRunOfAContainer) {
  using Runs = LogStore::Runs;
  LogStore logs(dir_);
  LogStore::Position end;
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "first\n", 0, "n1.1").ok());
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, Runs::kCurrent), "first\n");
  EXPECT_EQ(end.run, 0);
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, Runs::kPrevious),
            "error: the container has not run before");
  // A follower of the first run, from its end.
  LogStore::Position follower = end;
  int woken = 0;
  ASSERT_TRUE(logs.Subscribe("a", "j", "u-1", "w-0", follower, [&] { ++woken; }));
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "more\n").ok());
  EXPECT_EQ(woken, 1);
  // The second run begins alone (its first output later), then again (a retry): once.
  ASSERT_TRUE(logs.Subscribe("a", "j", "u-1", "w-0", {0, 11, 0}, [&] { ++woken; }));
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "", 0, "n1.2").ok());
  EXPECT_EQ(woken, 2);  // a new run wakes the followers of the old
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "", 0, "n1.2").ok());
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "second\n").ok());
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, Runs::kCurrent), "second\n");
  EXPECT_EQ(end.run, 1);
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, Runs::kPrevious), "first\nmore\n");
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, Runs::kAll), "first\nmore\nsecond\n");
  // The follower of the first run gets the rest of it, then is told it is over.
  bool over = false;
  EXPECT_EQ(*logs.Since("a", "j", "u-1", "w-0", &follower, &over), "more\n");
  EXPECT_FALSE(over);
  EXPECT_EQ(*logs.Since("a", "j", "u-1", "w-0", &follower, &over), "");
  EXPECT_TRUE(over);
  EXPECT_FALSE(logs.Subscribe("a", "j", "u-1", "w-0", follower, [&] { ++woken; }));
  // A third run, with its output: the previous is now the second; kept across a restart of
  // the server (a fresh LogStore over the same directory).
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "third\n", 0, "n2.1").ok());
  LogStore again(dir_);
  EXPECT_EQ(Tail(again, "a", "j", "u-1", "w-0", -1, &end, Runs::kPrevious), "second\n");
  EXPECT_EQ(Tail(again, "a", "j", "u-1", "w-0", 1, &end, Runs::kCurrent), "third\n");
  EXPECT_EQ(end.run, 2);
  EXPECT_FALSE(again.Append("a", "j", "u-1", "w-0", "x", 0, "has space").ok());
}

// Past the cap the file rotates: a run that began before it is current from the new file's
// start; its previous one went with the old file.
TEST_F(LogStoreTest, APreviousRunRotatedAwayIsNotFound) {
  LogStore logs(dir_, /*max_bytes_per_pod=*/16);
  LogStore::Position end;
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "one\n", 0, "t1").ok());
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "two\n", 0, "t2").ok());
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, LogStore::Runs::kPrevious), "one\n");
  ASSERT_TRUE(logs.Append("a", "j", "u-1", "w-0", "twotwotwotwo\n").ok());  // rotates
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, LogStore::Runs::kCurrent),
            "twotwotwotwo\n");
  EXPECT_EQ(Tail(logs, "a", "j", "u-1", "w-0", -1, &end, LogStore::Runs::kPrevious),
            "error: the previous run's output was rotated away (the log outgrew its cap)");
}

}  // namespace
}  // namespace tessera::server
