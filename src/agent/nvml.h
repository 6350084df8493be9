// NVML loaded at run time with dlopen: the subset of its C ABI the agent uses, declared here, so
// that no GPU, driver or CUDA toolkit is needed to build or test. A missing library or symbol is
// an error value with a clear message. All calls are read-only (no MIG changes, no resets).
#ifndef TESSERA_AGENT_NVML_H_
#define TESSERA_AGENT_NVML_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "core/status.h"

namespace tessera::agent {

class Nvml {
 public:
  // Loads `path` (default: libnvidia-ml.so.1 from the loader's search path) and initializes
  // NVML.
  static Result<std::unique_ptr<Nvml>> Load(const std::string& path = "libnvidia-ml.so.1");
  ~Nvml();  // shuts NVML down and unloads it

  // The inventory: per GPU index, UUID, name, memory, PCI bus id, NUMA node, MIG mode and
  // existing MIG devices, ECC mode, NVLink peers; the driver and NVML versions.
  Result<NodeGpus> Discover();
  // One telemetry sample per GPU.
  Result<std::vector<GpuSample>> Sample();
  // The health facts of each GPU (ECC pages, row remaps, PCIe link, throttling, NVLink links):
  // what `tessera doctor` reads. A fact the GPU or driver cannot give is left unset.
  Result<std::vector<GpuCheckup>> Checkup();

  struct Xid {
    uint32_t gpu = 0;  // index
    uint64_t xid = 0;
  };
  // Critical XID errors reported since the last call (waits at most `timeout_ms` for the
  // first). Empty when the driver has no event support.
  std::vector<Xid> PollXids(int timeout_ms);

  struct Api;  // the resolved entry points

 private:
  Nvml() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  void* events_ = nullptr;  // nvmlEventSet_t, made on the first PollXids
  bool events_tried_ = false;
  // Each GPU's NVLink counter and when it was read (steady ms), for its rate.
  std::map<uint32_t, std::pair<uint64_t, int64_t>> nvlink_seen_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_NVML_H_
