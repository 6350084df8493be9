// Fencing: a node's pods run only while its agent holds a fresh heartbeat. After every
// heartbeat the server accepts, the agent renews a lease, a file in its state directory holding
// the boot-clock time at which that heartbeat was sent. A keeper process, apart from the agent
// so that a frozen or killed agent cannot hold it back, stops every group the state directory
// records once the lease is older than the fence period: SIGTERM, then SIGKILL after the stop
// grace. The server waits longer than fence period + stop grace (the node publishes that sum as
// status.fenceSeconds) before it binds the node's pods elsewhere, so no pod runs on two nodes
// at once. A lease renewed again ends the fence; the agent starts what is still bound to it.
#ifndef TESSERA_AGENT_FENCE_H_
#define TESSERA_AGENT_FENCE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::agent {

// Milliseconds on CLOCK_BOOTTIME: monotonic, shared by all processes, counting suspend.
int64_t BootMs();

// The lease of the agent on `state_dir`: written atomically (rename); -1 when there is none.
Status WriteLease(const std::string& state_dir, int64_t boot_ms);
int64_t ReadLease(const std::string& state_dir);

class FenceKeeper {
 public:
  FenceKeeper(std::string state_dir, int64_t fence_ms, int64_t stop_grace_ms)
      : state_dir_(std::move(state_dir)), fence_ms_(fence_ms), stop_grace_ms_(stop_grace_ms) {}

  struct Round {
    bool fenced = false;               // the lease is older than the fence period
    std::vector<std::string> stopped;  // keys sent SIGTERM this round
    std::vector<std::string> killed;   // keys sent SIGKILL this round
    int live = 0;                      // recorded groups still running
  };
  // One check at boot time `now_ms`.
  Round Check(int64_t now_ms);

 private:
  std::string state_dir_;
  int64_t fence_ms_;
  int64_t stop_grace_ms_;
  std::map<std::string, int64_t> stopping_since_;  // key -> when SIGTERM went out
};

// The keeper process's main: checks every 250 ms, printing what it stops, until the agent
// `agent_pid` is gone and no recorded group runs. Returns the exit code.
int RunFenceKeeper(const std::string& state_dir, int64_t fence_ms, int64_t stop_grace_ms,
                   pid_t agent_pid);

// The keeper of one agent: started (after stopping a predecessor's keeper recorded in the state
// directory) by running `executable fence-keeper ...` in a session of its own, restarted by
// Ensure if it died, stopped with the object.
class KeeperProcess {
 public:
  KeeperProcess(std::string executable, std::string state_dir, int64_t fence_ms,
                int64_t stop_grace_ms);
  ~KeeperProcess();
  KeeperProcess(const KeeperProcess&) = delete;
  KeeperProcess& operator=(const KeeperProcess&) = delete;

  // Starts the keeper unless it runs; an error when it cannot be started.
  Status Ensure();

 private:
  std::string executable_, state_dir_;
  int64_t fence_ms_, stop_grace_ms_;
  pid_t pid_ = 0;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_FENCE_H_
