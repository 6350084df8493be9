#include "agent/fence.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "agent/process_tree.h"
#include "agent/runner.h"

namespace tessera::agent {

int64_t BootMs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

Status WriteLease(const std::string& state_dir, int64_t boot_ms) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  const std::string path = state_dir + "/lease";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << boot_ms << "\n";
    out.flush();
    if (!out) return Internal("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Internal("cannot renew the lease " + path + ": " + ec.message());
  return Status::Ok();
}

int64_t ReadLease(const std::string& state_dir) {
  std::ifstream in(state_dir + "/lease");
  int64_t at = -1;
  if (!(in >> at)) return -1;
  return at;
}

FenceKeeper::Round FenceKeeper::Check(int64_t now_ms) {
  Round r;
  const int64_t lease = ReadLease(state_dir_);
  r.fenced = lease >= 0 && now_ms - lease > fence_ms_;
  std::map<std::string, int64_t> stopping;
  for (const RecordedGroup& g : RecordedGroups(state_dir_)) {
    // A pod is live while its leader runs or its cgroup holds a process that escaped it.
    const bool leader = Alive(g.pgid, g.started);
    if (!leader && !CgroupPopulated(g.cgroup)) continue;
    ++r.live;
    if (!r.fenced) continue;
    // Every process of the pod: its group, the monitor's descendants and its cgroup.
    auto signal = [&](int sig) {
      SignalPod(leader ? g.pgid : 0, g.cgroup, sig);
      if (leader) kill(-g.pgid, sig);
    };
    auto it = stopping_since_.find(g.key);
    if (it == stopping_since_.end()) {
      signal(SIGTERM);
      r.stopped.push_back(g.key);
      stopping[g.key] = now_ms;
    } else {
      if (now_ms - it->second >= stop_grace_ms_) {
        signal(SIGKILL);
        r.killed.push_back(g.key);
      }
      stopping[g.key] = it->second;
    }
  }
  stopping_since_ = std::move(stopping);  // a renewed lease forgets every stop
  return r;
}

int RunFenceKeeper(const std::string& state_dir, int64_t fence_ms, int64_t stop_grace_ms,
                   pid_t agent_pid) {
  FenceKeeper keeper(state_dir, fence_ms, stop_grace_ms);
  bool was_fenced = false;
  for (;;) {
    const int64_t now = BootMs();
    const FenceKeeper::Round r = keeper.Check(now);
    if (r.fenced && !was_fenced) {
      std::cout << "fenced: no heartbeat accepted for over " << fence_ms << " ms; stopping "
                << r.live << " pod(s)" << std::endl;
    }
    if (!r.fenced && was_fenced) std::cout << "lease renewed: fence lifted" << std::endl;
    for (const std::string& k : r.stopped) std::cout << "SIGTERM " << k << std::endl;
    for (const std::string& k : r.killed) std::cout << "SIGKILL " << k << std::endl;
    was_fenced = r.fenced;
    // The agent is gone once this process has been handed to another parent.
    if (getppid() != agent_pid && r.live == 0) {
      std::cout << "the agent is gone and no pod runs: exiting" << std::endl;
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

KeeperProcess::KeeperProcess(std::string executable, std::string state_dir, int64_t fence_ms,
                             int64_t stop_grace_ms)
    : executable_(std::move(executable)),
      state_dir_(std::move(state_dir)),
      fence_ms_(fence_ms),
      stop_grace_ms_(stop_grace_ms) {}

KeeperProcess::~KeeperProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  std::error_code ec;
  std::filesystem::remove(state_dir_ + "/keeper.proc", ec);
}

Status KeeperProcess::Ensure() {
  if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) return Status::Ok();
  const std::string record = state_dir_ + "/keeper.proc";
  if (pid_ == 0) {
    // A predecessor's keeper (its agent was killed): this agent's keeper takes over.
    std::ifstream in(record);
    pid_t old = 0;
    unsigned long long started = 0;
    if (in >> old >> started && Alive(old, started)) kill(old, SIGKILL);
  }
  pid_ = 0;
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  const std::string log = state_dir_ + "/keeper.log";
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = {"tessera",         "fence-keeper",
                                   "--state-dir",     state_dir_,
                                   "--fence-ms",      std::to_string(fence_ms_),
                                   "--stop-grace-ms", std::to_string(stop_grace_ms_),
                                   "--agent-pid",     std::to_string(getpid())};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char* envp[] = {path_env, nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, executable_.c_str(), &files, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Internal("cannot start the fence keeper: " + std::string(strerror(rc)));
  pid_ = pid;
  std::ofstream(record) << pid << " " << StartTime(pid) << "\n";
  return Status::Ok();
}

}  // namespace tessera::agent
