#include "agent/usage.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace tessera::agent {

using nlohmann::json;

namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The whitespace-separated fields of `line`.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\n') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    if (j < line.size() && line[j] == '\n') break;
    i = j;
  }
  return out;
}

std::optional<int64_t> Number(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The line of `text` that starts with `key` followed by a space or tab; empty when none.
std::string_view LineOf(std::string_view text, std::string_view key) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.starts_with(key) && line.size() > key.size() &&
        (line[key.size()] == ' ' || line[key.size()] == '\t')) {
      return line;
    }
    at = end + 1;
  }
  return {};
}

// The number after `key` on its line ("MemTotal:  123 kB" -> 123); nullopt when absent.
std::optional<int64_t> Value(std::string_view text, std::string_view key) {
  std::vector<std::string_view> f = Fields(LineOf(text, key));
  if (f.size() < 2) return std::nullopt;
  return Number(f[1]);
}

}  // namespace

int64_t ProcStatBusyUsec(std::string_view proc_stat, int64_t ticks_per_second) {
  std::vector<std::string_view> f = Fields(LineOf(proc_stat, "cpu"));
  // cpu user nice system idle iowait irq softirq steal ...
  if (f.size() < 5 || ticks_per_second <= 0) return -1;
  int64_t busy = 0;
  for (size_t i : {1, 2, 3, 6, 7, 8}) {
    if (i >= f.size()) continue;
    auto v = Number(f[i]);
    if (!v) return -1;
    busy += *v;
  }
  return busy * 1'000'000 / ticks_per_second;
}

int64_t MemInfoWorkingSet(std::string_view meminfo) {
  auto total = Value(meminfo, "MemTotal:"), available = Value(meminfo, "MemAvailable:");
  if (!total || !available) return -1;
  return std::max<int64_t>(0, *total - *available) * 1024;
}

int64_t CgroupCpuUsec(std::string_view cpu_stat) {
  return Value(cpu_stat, "usage_usec").value_or(-1);
}

int64_t CgroupWorkingSet(std::string_view memory_current, std::string_view memory_stat) {
  while (!memory_current.empty() &&
         (memory_current.back() == '\n' || memory_current.back() == ' ')) {
    memory_current.remove_suffix(1);
  }
  auto current = Number(memory_current);
  if (!current) return -1;
  return std::max<int64_t>(0, *current - Value(memory_stat, "inactive_file").value_or(0));
}

std::optional<ProcStat> ParseProcPidStat(std::string_view text) {
  // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  auto pid = Number(Fields(text.substr(0, open)).empty() ? "" : Fields(text.substr(0, open))[0]);
  std::vector<std::string_view> f = Fields(text.substr(close + 1));
  // f[0] is the state: field 3 of the file; field n is f[n - 3].
  if (!pid || f.size() < 22) return std::nullopt;
  ProcStat s;
  s.pid = static_cast<pid_t>(*pid);
  auto ppid = Number(f[1]), pgid = Number(f[2]);
  if (!ppid || !pgid) return std::nullopt;
  s.ppid = static_cast<pid_t>(*ppid);
  s.pgid = static_cast<pid_t>(*pgid);
  for (size_t n : {14, 15, 16, 17}) {
    auto v = Number(f[n - 3]);
    if (!v) return std::nullopt;
    s.cpu_ticks += std::max<int64_t>(0, *v);
  }
  auto rss = Number(f[24 - 3]);
  if (!rss) return std::nullopt;
  s.rss_pages = std::max<int64_t>(0, *rss);
  return s;
}

std::map<pid_t, CpuMemory> TreeUsage(const std::vector<ProcStat>& stats,
                                     const std::vector<pid_t>& leaders, int64_t ticks_per_second,
                                     int64_t page_bytes) {
  std::map<pid_t, std::vector<const ProcStat*>> children;
  std::map<pid_t, std::vector<const ProcStat*>> group;
  std::map<pid_t, const ProcStat*> by_pid;
  for (const ProcStat& s : stats) {
    children[s.ppid].push_back(&s);
    group[s.pgid].push_back(&s);
    by_pid[s.pid] = &s;
  }
  std::map<pid_t, CpuMemory> out;
  for (pid_t leader : leaders) {
    std::set<pid_t> members;
    std::vector<pid_t> todo;
    if (by_pid.contains(leader)) todo.push_back(leader);
    for (const ProcStat* s : group[leader]) todo.push_back(s->pid);
    while (!todo.empty()) {
      const pid_t p = todo.back();
      todo.pop_back();
      if (!members.insert(p).second) continue;
      for (const ProcStat* c : children[p]) todo.push_back(c->pid);
    }
    if (members.empty()) continue;
    int64_t ticks = 0, pages = 0;
    for (pid_t p : members) {
      ticks += by_pid[p]->cpu_ticks;
      pages += by_pid[p]->rss_pages;
    }
    out[leader] = {ticks_per_second > 0 ? ticks * 1'000'000 / ticks_per_second : -1,
                   pages * page_bytes};
  }
  return out;
}

CpuMemory ReadNodeUsage(const std::string& proc) {
  return {ProcStatBusyUsec(ReadText(proc + "/stat"), sysconf(_SC_CLK_TCK)),
          MemInfoWorkingSet(ReadText(proc + "/meminfo"))};
}

CpuMemory ReadCgroupUsage(const std::string& dir) {
  return {CgroupCpuUsec(ReadText(dir + "/cpu.stat")),
          CgroupWorkingSet(ReadText(dir + "/memory.current"), ReadText(dir + "/memory.stat"))};
}

std::vector<ProcStat> ReadProcStats(const std::string& proc) {
  std::vector<ProcStat> out;
  DIR* d = opendir(proc.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (auto s = ParseProcPidStat(ReadText(proc + "/" + e->d_name + "/stat"))) out.push_back(*s);
  }
  closedir(d);
  return out;
}

std::map<std::string, CpuMemory> ReadPodUsage(const std::vector<PodProcesses>& pods,
                                              const std::string& proc) {
  // The cgroup's figures where it has them (a hybrid hierarchy's group may lack the memory
  // controller), the process tree's for the rest.
  std::map<std::string, CpuMemory> out;
  std::vector<pid_t> leaders;
  for (const PodProcesses& p : pods) {
    const CpuMemory c = p.cgroup.empty() ? CpuMemory{} : ReadCgroupUsage(p.cgroup);
    out[p.key] = c;
    if ((c.cpu_usec < 0 || c.memory_bytes < 0) && p.leader > 0) leaders.push_back(p.leader);
  }
  const std::map<pid_t, CpuMemory> trees =
      leaders.empty()
          ? std::map<pid_t, CpuMemory>{}
          : TreeUsage(ReadProcStats(proc), leaders, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  for (const PodProcesses& p : pods) {
    CpuMemory& c = out[p.key];
    if (auto it = trees.find(p.leader); it != trees.end()) {
      if (c.cpu_usec < 0) c.cpu_usec = it->second.cpu_usec;
      if (c.memory_bytes < 0) c.memory_bytes = it->second.memory_bytes;
    }
    if (c.cpu_usec < 0 || c.memory_bytes < 0) out.erase(p.key);
  }
  return out;
}

std::optional<UsageMeter::Usage> UsageMeter::Observe(const std::string& id, int64_t at_ms,
                                                     CpuMemory now) {
  if (now.cpu_usec < 0) {
    last_.erase(id);
    return std::nullopt;
  }
  auto it = last_.find(id);
  std::optional<Usage> out;
  if (it != last_.end() && at_ms > it->second.at_ms) {
    const int64_t window = at_ms - it->second.at_ms;
    const int64_t used = std::max<int64_t>(0, now.cpu_usec - it->second.cpu_usec);
    // usec over ms, in nanocores: used * 1e3 ns / (window * 1e-3 s).
    out = Usage{used * 1'000'000 / window, std::max<int64_t>(0, now.memory_bytes), window};
  }
  if (it == last_.end() || at_ms > it->second.at_ms) last_[id] = {at_ms, now.cpu_usec};
  return out;
}

void UsageMeter::Keep(const std::vector<std::string>& live) {
  const std::set<std::string> keep(live.begin(), live.end());
  std::erase_if(last_, [&](const auto& e) { return !keep.contains(e.first); });
}

json UsageReport(const UsageMeter::Usage& node,
                 const std::map<std::string, UsageMeter::Usage>& pods) {
  json list = json::array();
  for (const auto& [key, u] : pods) {
    list.push_back({{"pod", key},
                    {"cpuNanoCores", u.nano_cores},
                    {"memoryBytes", u.memory_bytes},
                    {"windowMs", u.window_ms}});
  }
  return {{"cpuNanoCores", node.nano_cores},
          {"memoryBytes", node.memory_bytes},
          {"windowMs", node.window_ms},
          {"pods", std::move(list)}};
}

}  // namespace tessera::agent
