// What a node agent knows about its GPUs: the inventory found at start (through NVML or a fake)
// and telemetry samples. Plain values.
#ifndef TESSERA_AGENT_GPU_INFO_H_
#define TESSERA_AGENT_GPU_INFO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::agent {

struct MigDeviceInfo {
  std::string uuid;  // MIG-...
  int64_t memory_mib = 0;
  int32_t gpu_instance_id = -1;
  int32_t compute_instance_id = -1;
};

struct GpuInfo {
  uint32_t index = 0;
  std::string uuid;     // GPU-...
  std::string name;     // "NVIDIA H200"
  std::string product;  // normalized model, e.g. "H200-141GB" (see ProductName)
  int64_t memory_mib = 0;
  std::string pci_bus_id;  // "00000000:65:00.0"
  int32_t numa_node = -1;  // -1: unknown
  bool mig_capable = false;
  bool mig_enabled = false;
  std::vector<MigDeviceInfo> mig_devices;  // existing instances, when MIG is on
  bool ecc_enabled = false;
  // nvmlComputeMode_t (NVML_COMPUTEMODE_*); -1: unknown (simulated GPUs, or NVML cannot say).
  int compute_mode = -1;
  // Indices of GPUs reachable over active NVLink links.
  std::vector<uint32_t> nvlink_peers;
};

struct NodeGpus {
  std::string source;  // "nvml" or "fake"
  std::string driver_version;
  std::string nvml_version;
  std::vector<GpuInfo> gpus;
};

struct ProcessUse {
  uint32_t pid = 0;
  int64_t used_memory_mib = 0;
};

struct GpuSample {
  uint32_t index = 0;
  uint32_t utilization_pct = 0;
  uint32_t memory_utilization_pct = 0;  // memory controller busy (DCGM_FI_DEV_MEM_COPY_UTIL)
  int64_t memory_used_mib = 0;
  int64_t memory_free_mib = 0;
  uint32_t temperature_c = 0;
  uint32_t power_mw = 0;
  uint32_t sm_clock_mhz = 0;
  uint64_t ecc_corrected = 0;  // volatile counts
  uint64_t ecc_uncorrected = 0;
  // NVLink data sent plus received since the driver loaded (KiB); absent without NVLink.
  std::optional<uint64_t> nvlink_data_kib;
  // Throughput now, for the doctor's slow-training check: PCIe sent and received (NVML's
  // sampled KB/s) and NVLink's both ways (the counter's rise over the last second).
  std::optional<uint32_t> pcie_tx_kib_per_s, pcie_rx_kib_per_s;
  std::optional<uint64_t> nvlink_kib_per_s;
  std::vector<ProcessUse> processes;
};

// What NVML tells of one GPU's health beyond its telemetry, for `tessera doctor`: the facts
// `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER,PCIE,PERFORMANCE` and `nvidia-smi nvlink -s`
// show. Unset: this GPU or driver cannot say.
struct GpuCheckup {
  uint32_t index = 0;
  std::string vbios;
  // Pages retired for repeated single-bit and for double-bit ECC errors; a retirement waiting
  // for the next driver reload (pre-Ampere cards).
  std::optional<uint32_t> retired_sbe, retired_dbe;
  std::optional<bool> retire_pending;
  // Rows remapped (Ampere and later) for correctable and uncorrectable errors; a remap waiting
  // for a GPU reset; a remap that failed (the card needs service).
  std::optional<uint32_t> remapped_correctable, remapped_uncorrectable;
  std::optional<bool> remap_pending, remap_failed;
  // The PCIe link now and at most (the card's and the slot's).
  std::optional<uint32_t> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  // nvmlClocksThrottleReasons: why the clocks are held down now (a bit mask).
  std::optional<uint64_t> throttle_reasons;
  // NVLink links present and those down, and the links' error counters summed (replay,
  // recovery, CRC).
  uint32_t nvlinks = 0;
  std::vector<uint32_t> nvlinks_down;
  std::optional<uint64_t> nvlink_errors;
};

// A product name in the GPU Feature Discovery style from an NVML device name and its memory:
// "NVIDIA H100 80GB HBM3" -> "H100-80GB", "Tesla T4" -> "T4", "NVIDIA H200" + 143771 MiB ->
// "H200-141GB" (the memory suffix is added for cards sold in several sizes).
std::string ProductName(const std::string& nvml_name, int64_t memory_mib);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_GPU_INFO_H_
