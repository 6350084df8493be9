#include "agent/waker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "agent/runner.h"

namespace tessera::agent {
namespace {

TEST(Waker, WakesOnNotifyFromAnotherThreadOnceAndOnReadableDescriptors) {
  Waker waker;
  EXPECT_FALSE(waker.Wait(10)) << "nothing happened: the timeout";
  std::thread other([&] { waker.Notify(); });
  EXPECT_TRUE(waker.Wait(10'000));
  other.join();
  // Wake-ups before a Wait are one, and consumed by it.
  waker.Notify();
  waker.Notify();
  EXPECT_TRUE(waker.Wait(10'000));
  EXPECT_FALSE(waker.Wait(10));

  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const int fds[] = {pipe_fds[0]};
  EXPECT_FALSE(waker.Wait(10, fds));
  EXPECT_FALSE(Readable(pipe_fds[0]));
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  EXPECT_TRUE(waker.Wait(10'000, fds));
  EXPECT_TRUE(Readable(pipe_fds[0])) << "left as it is";
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(Waker, ARunnersExitDescriptorsWakeAWaiterWhenATaskEnds) {
  Runner runner;
  ProcessSpec spec;
  spec.key = "a/j/p-0";
  spec.argv = {"sleep", "0.2"};
  spec.workdir = "/tmp";
  spec.log_path = "/dev/null";
  ASSERT_TRUE(runner.Start(spec).ok());
  const std::vector<int> fds = runner.ExitFds();
  ASSERT_EQ(fds.size(), 1u) << "this kernel gives no pidfds";
  Waker waker;
  EXPECT_FALSE(waker.Wait(0, fds)) << "still running";
  EXPECT_TRUE(waker.Wait(10'000, fds));
  const std::vector<Exit> exits = runner.Poll(0);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 0);
  EXPECT_TRUE(runner.ExitFds().empty());

  // A stop's escalation is a deadline the loop must wake for, until it has escalated.
  char log[] = "/tmp/tessera-waker-XXXXXX";
  const int log_fd = mkstemp(log);
  ASSERT_GE(log_fd, 0);
  close(log_fd);
  spec.log_path = log;
  spec.argv = {"sh", "-c", "trap '' TERM; echo ready; sleep 30"};
  ASSERT_TRUE(runner.Start(spec).ok());
  EXPECT_EQ(runner.NextDeadline(), -1);
  for (int i = 0; i < 100 && std::filesystem::file_size(log) == 0; ++i) usleep(50'000);
  runner.Stop(spec.key, 1'000, 500);
  EXPECT_EQ(runner.NextDeadline(), 1'500);
  EXPECT_TRUE(runner.Poll(1'000).empty());
  EXPECT_TRUE(runner.Poll(1'500).empty());
  EXPECT_EQ(runner.NextDeadline(), -1) << "escalated";
  EXPECT_TRUE(waker.Wait(10'000, runner.ExitFds()));
  ASSERT_EQ(runner.Poll(2'000).size(), 1u);
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tessera::agent
