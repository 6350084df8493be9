#include "agent/usage.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace tessera::agent {
namespace {

TEST(UsageTest, ProcStatBusyTimeLeavesOutIdleAndIowait) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const char* stat =
      "cpu  100 20 30 5000 400 6 7 8 0 0\n"
      "cpu0 50 10 15 2500 200 3 3 4 0 0\n"
      "intr 1 2 3\n";
  EXPECT_EQ(ProcStatBusyUsec(stat, 100), (100 + 20 + 30 + 6 + 7 + 8) * 10'000);
  EXPECT_EQ(ProcStatBusyUsec("cpu0 1 2 3 4\n", 100), -1);  // no aggregate line
  EXPECT_EQ(ProcStatBusyUsec("cpu  1 x 3 4 5\n", 100), -1);
}

TEST(UsageTest, MemInfoWorkingSetIsTotalLessAvailable) {
  const char* meminfo =
      "MemTotal:       16000000 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:   12000000 kB\n";
  EXPECT_EQ(MemInfoWorkingSet(meminfo), int64_t{4'000'000} * 1024);
  EXPECT_EQ(MemInfoWorkingSet("MemTotal: 10 kB\n"), -1);
}

TEST(UsageTest, CgroupFiguresAsCadvisorComputesThem) {
  EXPECT_EQ(CgroupCpuUsec("usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n"), 123456);
  EXPECT_EQ(CgroupCpuUsec("user_usec 1\n"), -1);
  EXPECT_EQ(CgroupWorkingSet("10000000\n", "anon 5000\ninactive_file 3000000\nactive_file 1\n"),
            7'000'000);
  // More inactive file pages than memory.current (they are counted lazily): never below 0.
  EXPECT_EQ(CgroupWorkingSet("100\n", "inactive_file 3000\n"), 0);
  EXPECT_EQ(CgroupWorkingSet("max\n", ""), -1);
}

TEST(UsageTest, ProcPidStatWithSpacesAndParenthesesInTheName) {
  const char* line =
      "4242 (my (odd) task) S 4200 4242 4200 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 "
      "12345 1000000 77 18446744073709551615";
  auto s = ParseProcPidStat(line);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->ppid, 4200);
  EXPECT_EQ(s->pgid, 4242);
  EXPECT_EQ(s->cpu_ticks, 11 + 22 + 33 + 44);
  EXPECT_EQ(s->rss_pages, 77);
  EXPECT_FALSE(ParseProcPidStat("4242 (short) S 1 2").has_value());
  EXPECT_FALSE(ParseProcPidStat("garbage").has_value());
}

TEST(UsageTest, TreeUsageCountsGroupAndDescendantsOnce) {
  // 10 leads group 10; 11 is in it; 12 left the group (setsid) but is 11's child; 13 is 12's
  // child; 20 is someone else's.
  const std::vector<ProcStat> stats = {
      {10, 1, 10, 100, 1},  {11, 10, 10, 200, 2},  {12, 11, 12, 300, 4},
      {13, 12, 12, 400, 8}, {20, 1, 20, 5000, 16},
  };
  auto usage = TreeUsage(stats, {10, 99}, 100, 4096);
  ASSERT_TRUE(usage.contains(10));
  EXPECT_FALSE(usage.contains(99));  // gone: not measured
  EXPECT_EQ(usage[10].cpu_usec, (100 + 200 + 300 + 400) * 10'000);
  EXPECT_EQ(usage[10].memory_bytes, (1 + 2 + 4 + 8) * 4096);
}

TEST(UsageTest, MeterGivesRatesOverTheWindow) {
  UsageMeter m;
  EXPECT_FALSE(m.Observe("node", 1000, {1'000'000, 50}).has_value());  // first: no rate
  // 2.5 CPU-seconds over 5 s: half a core.
  auto u = m.Observe("node", 6000, {3'500'000, 70});
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->nano_cores, 500'000'000);
  EXPECT_EQ(u->memory_bytes, 70);
  EXPECT_EQ(u->window_ms, 5000);
  // A counter that went back (a process left the tree): no CPU, not a negative rate.
  u = m.Observe("node", 11000, {3'000'000, 70});
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->nano_cores, 0);
  // An unknown CPU time starts over.
  EXPECT_FALSE(m.Observe("node", 12000, {-1, 70}).has_value());
  EXPECT_FALSE(m.Observe("node", 13000, {1, 70}).has_value());
  m.Observe("pod", 13000, {1, 1});
  m.Keep({"pod"});
  EXPECT_FALSE(m.Observe("node", 14000, {5, 70}).has_value());  // forgotten
  EXPECT_TRUE(m.Observe("pod", 14000, {5, 1}).has_value());
}

TEST(UsageTest, ThisMachineIsMeasured) {
  const CpuMemory node = ReadNodeUsage();
  EXPECT_GT(node.cpu_usec, 0);
  EXPECT_GT(node.memory_bytes, 0);
  // This process, as a tree of its own.
  auto usage = TreeUsage(ReadProcStats(), {getpid()}, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  ASSERT_TRUE(usage.contains(getpid()));
  EXPECT_GT(usage[getpid()].memory_bytes, 0);
}

TEST(UsageTest, ReportNamesThePods) {
  const nlohmann::json r = UsageReport({2'000'000'000, 1 << 30, 5000},
                                       {{"team-a/train/main-0", {250'000'000, 1 << 20, 5000}}});
  EXPECT_EQ(r["cpuNanoCores"], 2'000'000'000);
  EXPECT_EQ(r["pods"][0]["pod"], "team-a/train/main-0");
  EXPECT_EQ(r["pods"][0]["memoryBytes"], 1 << 20);
}

}  // namespace
}  // namespace tessera::agent
