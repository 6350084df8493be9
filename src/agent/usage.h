// What the node and each of its pods use of CPU and memory, measured as the kubelet measures it
// for metrics-server and so for `kubectl top`:
//   CPU     a rate: CPU time used between two samples over the time between them (nanocores);
//   memory  the working set: what is in use and cannot simply be dropped (bytes).
// The node's figures come from /proc/stat (busy time: all but idle and iowait) and
// /proc/meminfo (MemTotal - MemAvailable). A pod with a cgroup v2 group (agent/cgroups.h) is
// measured by it: cpu.stat's usage_usec and memory.current less memory.stat's inactive_file, as
// cAdvisor computes the working set. A pod without one is measured by its processes: its
// leader's process group and descendants, their utime + stime + cutime + cstime and their RSS.
//
// The parsers take the files' text, so that they are tested without the machine's.
#ifndef TESSERA_AGENT_USAGE_H_
#define TESSERA_AGENT_USAGE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::agent {

// Cumulative CPU time and the current working set; -1 where unknown.
struct CpuMemory {
  int64_t cpu_usec = -1;
  int64_t memory_bytes = -1;
};

// The busy CPU time of /proc/stat's "cpu" line (user, nice, system, irq, softirq, steal) in
// microseconds, given the clock's ticks per second; -1 when the line is missing or malformed.
int64_t ProcStatBusyUsec(std::string_view proc_stat, int64_t ticks_per_second);
// MemTotal - MemAvailable of /proc/meminfo, in bytes; -1 when either is missing.
int64_t MemInfoWorkingSet(std::string_view meminfo);
// usage_usec of a cgroup's cpu.stat; -1 when missing.
int64_t CgroupCpuUsec(std::string_view cpu_stat);
// memory.current less memory.stat's inactive_file (never below 0), in bytes; -1 when
// memory.current is not a number.
int64_t CgroupWorkingSet(std::string_view memory_current, std::string_view memory_stat);

// The fields of /proc/<pid>/stat that measure a process.
struct ProcStat {
  pid_t pid = 0, ppid = 0, pgid = 0;
  int64_t cpu_ticks = 0;  // utime + stime + cutime + cstime
  int64_t rss_pages = 0;
};
// Parses /proc/<pid>/stat (the command name may hold spaces and parentheses); nullopt when
// malformed.
std::optional<ProcStat> ParseProcPidStat(std::string_view text);

// The usage of each process tree led by one of `stats`' leaders: the processes in the leader's
// process group and its descendants, counted once each. Keyed by leader; `ticks_per_second` and
// `page_bytes` convert.
std::map<pid_t, CpuMemory> TreeUsage(const std::vector<ProcStat>& stats,
                                     const std::vector<pid_t>& leaders, int64_t ticks_per_second,
                                     int64_t page_bytes);

// Read from this machine (`proc`: where procfs is mounted).
CpuMemory ReadNodeUsage(const std::string& proc = "/proc");
CpuMemory ReadCgroupUsage(const std::string& dir);
std::vector<ProcStat> ReadProcStats(const std::string& proc = "/proc");

// A running pod as the agent knows it: its key, its leader and its cgroup ("" when none).
struct PodProcesses {
  std::string key;
  pid_t leader = 0;
  std::string cgroup;
};
// Each pod's usage, by key: from its cgroup when it has one, else (or for what its group does
// not count: a hybrid hierarchy may lack the memory controller) from its process tree, one
// walk of `proc` for all of them. A pod that cannot be measured is left out.
std::map<std::string, CpuMemory> ReadPodUsage(const std::vector<PodProcesses>& pods,
                                              const std::string& proc = "/proc");

// Turns cumulative samples into rates, per measured thing (the node, each pod).
class UsageMeter {
 public:
  struct Usage {
    int64_t nano_cores = 0;
    int64_t memory_bytes = 0;
    int64_t window_ms = 0;
  };
  // Records `now` of `id`, sampled at `at_ms`; the usage over the window since its previous
  // sample, or nullopt for a first sample (or an unknown CPU time). A counter that went
  // backwards (a process that left the tree) counts as no CPU used.
  std::optional<Usage> Observe(const std::string& id, int64_t at_ms, CpuMemory now);
  // Forgets every id not in `live`.
  void Keep(const std::vector<std::string>& live);

 private:
  struct Last {
    int64_t at_ms = 0;
    int64_t cpu_usec = 0;
  };
  std::map<std::string, Last> last_;
};

// The report an agent sends (PUT /apis/tessera.io/v1/nodes/<name>/usage): the node's usage
// and each measured pod's, keyed "<ns>/<job>/<pod>" as the agent names them.
nlohmann::json UsageReport(const UsageMeter::Usage& node,
                           const std::map<std::string, UsageMeter::Usage>& pods);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_USAGE_H_
