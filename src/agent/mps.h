// MPS control daemons the agent runs for fractional shares that go through MPS: one per GPU whose
// GpuSharingConfig says `shared: {mps: true}`, each with its own pipe and log directories, so
// clients of one card never reach another card's server. A share's tasks then get the MPS
// server's directories and its per-client limits (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) instead of the share interposer.
//
// MPS holds clients to their limits only when the card is in exclusive-process compute mode
// (otherwise a process may open its own context beside the server). The agent never changes a
// GPU's mode: on a card in another mode it says so and its shares keep the interposer.
#ifndef TESSERA_AGENT_MPS_H_
#define TESSERA_AGENT_MPS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "core/status.h"

namespace tessera::agent {

class MpsServers {
 public:
  // `control`: the nvidia-cuda-mps-control command (a name is looked up in PATH); empty: MPS
  // is off on this node. The servers' directories are <root>/mps/<GPU UUID>/{pipe,log}.
  MpsServers(std::string control, std::string root)
      : control_(std::move(control)), root_(std::move(root)) {}
  ~MpsServers();  // stops every server it started
  MpsServers(const MpsServers&) = delete;
  MpsServers& operator=(const MpsServers&) = delete;

  // The directory of `gpu`'s MPS server (pipe/ and log/ under it), started when it does not run.
  // FailedPrecondition, saying why, when MPS is off, the card is not in exclusive-process mode,
  // or the daemon does not start.
  Result<std::string> Ensure(const GpuInfo& gpu);
  // Stops the servers of the GPUs (UUIDs) not in `in_use`.
  void StopUnused(const std::set<std::string>& in_use);

 private:
  // Runs the control command for GPU `uuid`'s server with `args`, `input` on its stdin; its
  // exit status, -1 when it could not run or took over 10 s.
  int Control(const std::string& uuid, const std::vector<std::string>& args,
              const std::string& input) const;
  std::string Dir(const std::string& uuid) const { return root_ + "/mps/" + uuid; }

  std::string control_;
  std::string root_;
  std::set<std::string> running_;  // GPU UUIDs
};

// nvmlComputeMode_t as nvidia-smi names it ("Default", "Exclusive_Process", ...; "unknown").
std::string ComputeModeName(int mode);

// The environment of an MPS client of the server in `dir`.
std::map<std::string, std::string> MpsClientEnv(const std::string& dir);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_MPS_H_
