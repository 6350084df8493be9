// GPU resets the scheduling loop asks for (core/quarantine.h: a RESET_GPU or unknown Xid), run by
// the node's agent only where the admin allowed it (`tessera agent --allow-gpu-reset`); without
// that flag Tessera never resets a GPU, and the quarantine's event says what to run.
//
// A GPU is reset once per quarantine, when no process runs on it (its pods were moved away), by
// the command of --gpu-reset-command (default `nvidia-smi --gpu-reset -i {index}`), run without a
// shell, killed after a timeout. The outcome is reported in the Node's status.resets, which the
// loop reads: a reset that succeeded, then clean checks, bring the GPU back.
#ifndef TESSERA_AGENT_GPU_RESET_H_
#define TESSERA_AGENT_GPU_RESET_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "core/quarantine.h"
#include "core/status.h"

namespace tessera::agent {

struct GpuResetOptions {
  // The command's words, "{index}" replaced by the GPU's index in each.
  std::vector<std::string> command = {"nvidia-smi", "--gpu-reset", "-i", "{index}"};
  int timeout_ms = 120'000;
};

// "nvidia-smi --gpu-reset -i {index}" as words (split at spaces); an empty one is an error.
Result<std::vector<std::string>> ParseResetCommand(const std::string& text);

struct ResetOutcome {
  int64_t gpu = 0;
  bool ok = false;
  std::string message;
};

class GpuResetter {
 public:
  explicit GpuResetter(GpuResetOptions options) : options_(std::move(options)) {}

  // Resets each GPU of `q` whose reset is requested, not yet tried for this quarantine, and that
  // no process of `samples` uses. Returns what was tried.
  std::vector<ResetOutcome> Step(const core::NodeQuarantine& q,
                                 const std::vector<GpuSample>& samples, int64_t now_ms);
  // status.resets: the last attempt per GPU, {"gpu", "time", "ok", "message"}.
  nlohmann::json Json() const;

 private:
  ResetOutcome Run(int64_t gpu) const;

  GpuResetOptions options_;
  std::map<int64_t, int64_t> tried_for_;  // gpu -> the quarantine (since) it was tried for
  std::map<int64_t, nlohmann::json> last_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_GPU_RESET_H_
