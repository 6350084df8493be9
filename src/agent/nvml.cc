#include "agent/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>

#include "agent/nvml_abi.h"

namespace tessera::agent {

struct Nvml::Api {
#define TESSERA_NVML_POINTER(name, params) nvmlReturn_t(*name) params = nullptr;
  TESSERA_NVML_FUNCTIONS(TESSERA_NVML_POINTER)
#undef TESSERA_NVML_POINTER
  nvmlErrorString_fn nvmlErrorString = nullptr;
};

namespace {

// Functions every supported driver has; the others are used when present.
constexpr const char* kRequired[] = {
    "nvmlInit_v2",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetNVMLVersion",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPciInfo_v3",
};

std::string ErrorText(const Nvml::Api& api, nvmlReturn_t r) {
  const char* s = api.nvmlErrorString(r);
  return std::string(s ? s : "unknown error") + " (" + std::to_string(r) + ")";
}

// The NUMA node of a PCI device from sysfs ("00000000:65:00.0" -> /sys/bus/pci/devices/
// 0000:65:00.0/numa_node), -1 when unknown.
int32_t NumaNode(const std::string& bus_id) {
  std::string id = bus_id;
  if (id.size() > 12 && id.find(':') == 8) id = id.substr(4);  // 8-digit domain -> 4
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  std::ifstream in("/sys/bus/pci/devices/" + id + "/numa_node");
  int32_t node = -1;
  if (!(in >> node)) return -1;
  return node;
}

bool MigCapableName(const std::string& product) {
  for (const char* p : {"A100", "A30", "H100", "H200", "H800", "B200", "GH200", "GB200"}) {
    if (product.rfind(p, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string ProductName(const std::string& nvml_name, int64_t memory_mib) {
  std::string name = nvml_name;
  for (const char* prefix : {"NVIDIA ", "Tesla ", "Quadro "}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string_view(prefix).size());
  }
  // "A100-SXM4-80GB", "H100 80GB HBM3", "V100-SXM2-32GB": the model, then a size when the name
  // has one; form factors (SXM, PCIe) and memory types are dropped.
  for (char& c : name) c = c == ' ' ? '-' : c;
  std::string model, size;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t dash = std::min(name.find('-', start), name.size());
    const std::string part = name.substr(start, dash - start);
    start = dash + 1;
    if (part.empty()) continue;
    if (model.empty()) {
      model = part;
    } else if (part.size() > 2 && part.ends_with("GB") &&
               std::isdigit(static_cast<unsigned char>(part[0]))) {
      size = part;
    }
  }
  if (size.empty() && (model == "H100" || model == "H200" || model == "A100" || model == "H800")) {
    // Sold in several sizes: the marketed size nearest to its memory.
    const double gib = static_cast<double>(memory_mib) / 1024;
    int best = 0;
    for (int nominal : {40, 80, 94, 96, 141, 192}) {
      if (best == 0 || std::abs(nominal - gib) < std::abs(best - gib)) best = nominal;
    }
    size = std::to_string(best) + "GB";
  }
  return size.empty() ? model : model + "-" + size;
}

Result<std::unique_ptr<Nvml>> Nvml::Load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return FailedPrecondition("cannot load NVML (" + path + "): " + (why ? why : "unknown") +
                              "; is the NVIDIA driver installed? (use --fake-gpus without GPUs)");
  }
  std::unique_ptr<Nvml> nvml(new Nvml());
  nvml->handle_ = handle;
  nvml->api_ = std::make_unique<Api>();
  Api& api = *nvml->api_;
#define TESSERA_NVML_RESOLVE(name, params) \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));
  TESSERA_NVML_FUNCTIONS(TESSERA_NVML_RESOLVE)
  TESSERA_NVML_RESOLVE(nvmlErrorString, ())
#undef TESSERA_NVML_RESOLVE
  for (const char* name : kRequired) {
    if (dlsym(handle, name) == nullptr) {
      return FailedPrecondition("NVML at " + path + " lacks " + name +
                                " (driver older than R450?)");
    }
  }
  if (nvmlReturn_t r = api.nvmlInit_v2(); r != NVML_SUCCESS) {
    api.nvmlShutdown = nullptr;  // nothing to shut down
    return FailedPrecondition("NVML init failed: " + ErrorText(api, r));
  }
  return nvml;
}

Nvml::~Nvml() {
  if (events_ && api_->nvmlEventSetFree)
    api_->nvmlEventSetFree(static_cast<nvmlEventSet_t>(events_));
  if (api_ && api_->nvmlShutdown) api_->nvmlShutdown();
  if (handle_) dlclose(handle_);
}

Result<NodeGpus> Nvml::Discover() {
  const Api& api = *api_;
  NodeGpus out;
  out.source = "nvml";
  char buf[256] = {};
  if (api.nvmlSystemGetDriverVersion(buf, sizeof buf) == NVML_SUCCESS) out.driver_version = buf;
  if (api.nvmlSystemGetNVMLVersion(buf, sizeof buf) == NVML_SUCCESS) out.nvml_version = buf;
  unsigned int count = 0;
  if (nvmlReturn_t r = api.nvmlDeviceGetCount_v2(&count); r != NVML_SUCCESS) {
    return FailedPrecondition("NVML device count: " + ErrorText(api, r));
  }
  std::vector<nvmlDevice_t> devices(count);
  for (unsigned int i = 0; i < count; ++i) {
    if (nvmlReturn_t r = api.nvmlDeviceGetHandleByIndex_v2(i, &devices[i]); r != NVML_SUCCESS) {
      return FailedPrecondition("NVML device " + std::to_string(i) + ": " + ErrorText(api, r));
    }
    nvmlDevice_t d = devices[i];
    GpuInfo g;
    g.index = i;
    if (api.nvmlDeviceGetUUID(d, buf, sizeof buf) == NVML_SUCCESS) g.uuid = buf;
    if (api.nvmlDeviceGetName(d, buf, sizeof buf) == NVML_SUCCESS) g.name = buf;
    nvmlMemory_t mem{};
    if (api.nvmlDeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS) {
      g.memory_mib = static_cast<int64_t>(mem.total >> 20);
    }
    nvmlPciInfo_t pci{};
    if (api.nvmlDeviceGetPciInfo_v3(d, &pci) == NVML_SUCCESS) {
      g.pci_bus_id = pci.busId;
      g.numa_node = NumaNode(g.pci_bus_id);
    }
    g.product = ProductName(g.name, g.memory_mib);
    unsigned int current = 0, pending = 0;
    if (api.nvmlDeviceGetMigMode &&
        api.nvmlDeviceGetMigMode(d, &current, &pending) == NVML_SUCCESS) {
      g.mig_capable = true;
      g.mig_enabled = current == NVML_FEATURE_ENABLED;
    } else {
      g.mig_capable = false;
    }
    if (g.mig_enabled && api.nvmlDeviceGetMaxMigDeviceCount &&
        api.nvmlDeviceGetMigDeviceHandleByIndex) {
      unsigned int max = 0;
      api.nvmlDeviceGetMaxMigDeviceCount(d, &max);
      for (unsigned int m = 0; m < max; ++m) {
        nvmlDevice_t mig = nullptr;
        if (api.nvmlDeviceGetMigDeviceHandleByIndex(d, m, &mig) != NVML_SUCCESS) continue;
        MigDeviceInfo info;
        if (api.nvmlDeviceGetUUID(mig, buf, sizeof buf) == NVML_SUCCESS) info.uuid = buf;
        nvmlMemory_t mm{};
        if (api.nvmlDeviceGetMemoryInfo(mig, &mm) == NVML_SUCCESS) {
          info.memory_mib = static_cast<int64_t>(mm.total >> 20);
        }
        unsigned int id = 0;
        if (api.nvmlDeviceGetGpuInstanceId && api.nvmlDeviceGetGpuInstanceId(mig, &id) == 0) {
          info.gpu_instance_id = static_cast<int32_t>(id);
        }
        if (api.nvmlDeviceGetComputeInstanceId &&
            api.nvmlDeviceGetComputeInstanceId(mig, &id) == 0) {
          info.compute_instance_id = static_cast<int32_t>(id);
        }
        g.mig_devices.push_back(std::move(info));
      }
    }
    int ecc = 0, ecc_pending = 0;
    if (api.nvmlDeviceGetEccMode && api.nvmlDeviceGetEccMode(d, &ecc, &ecc_pending) == 0) {
      g.ecc_enabled = ecc == NVML_FEATURE_ENABLED;
    }
    int mode = 0;
    if (api.nvmlDeviceGetComputeMode && api.nvmlDeviceGetComputeMode(d, &mode) == 0) {
      g.compute_mode = mode;
    }
    out.gpus.push_back(std::move(g));
  }
  // NVLink peers: active links whose remote end is another GPU of this node.
  if (api.nvmlDeviceGetNvLinkState && api.nvmlDeviceGetNvLinkRemotePciInfo_v2) {
    for (unsigned int i = 0; i < count; ++i) {
      for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
        int active = 0;
        if (api.nvmlDeviceGetNvLinkState(devices[i], link, &active) != NVML_SUCCESS ||
            active != NVML_FEATURE_ENABLED) {
          continue;
        }
        nvmlPciInfo_t remote{};
        if (api.nvmlDeviceGetNvLinkRemotePciInfo_v2(devices[i], link, &remote) != NVML_SUCCESS) {
          continue;
        }
        for (const GpuInfo& peer : out.gpus) {
          std::vector<uint32_t>& peers = out.gpus[i].nvlink_peers;
          if (peer.index != i && peer.pci_bus_id == remote.busId &&
              std::find(peers.begin(), peers.end(), peer.index) == peers.end()) {
            peers.push_back(peer.index);
          }
        }
      }
      std::sort(out.gpus[i].nvlink_peers.begin(), out.gpus[i].nvlink_peers.end());
    }
  }
  for (GpuInfo& g : out.gpus) g.mig_capable = g.mig_capable || MigCapableName(g.product);
  return out;
}

std::vector<Nvml::Xid> Nvml::PollXids(int timeout_ms) {
  const Api& api = *api_;
  std::vector<Xid> out;
  if (!events_tried_) {
    events_tried_ = true;
    nvmlEventSet_t set = nullptr;
    if (!api.nvmlEventSetCreate || !api.nvmlDeviceRegisterEvents || !api.nvmlEventSetWait_v2 ||
        api.nvmlEventSetCreate(&set) != NVML_SUCCESS) {
      return out;
    }
    events_ = set;
    unsigned int count = 0;
    api.nvmlDeviceGetCount_v2(&count);
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t d = nullptr;
      if (api.nvmlDeviceGetHandleByIndex_v2(i, &d) == NVML_SUCCESS) {
        api.nvmlDeviceRegisterEvents(d, nvmlEventTypeXidCriticalError, set);
      }
    }
  }
  if (!events_) return out;
  std::vector<nvmlDevice_t> devices;
  unsigned int count = 0;
  api.nvmlDeviceGetCount_v2(&count);
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    api.nvmlDeviceGetHandleByIndex_v2(i, &d);
    devices.push_back(d);
  }
  for (int wait = timeout_ms;; wait = 0) {
    nvmlEventData_t data{};
    if (api.nvmlEventSetWait_v2(static_cast<nvmlEventSet_t>(events_), &data,
                                static_cast<unsigned int>(wait)) != NVML_SUCCESS) {
      break;
    }
    if (data.eventType != nvmlEventTypeXidCriticalError) continue;
    const auto it = std::find(devices.begin(), devices.end(), data.device);
    if (it != devices.end()) {
      out.push_back({static_cast<uint32_t>(it - devices.begin()), data.eventData});
    }
  }
  return out;
}

Result<std::vector<GpuSample>> Nvml::Sample() {
  const Api& api = *api_;
  unsigned int count = 0;
  if (nvmlReturn_t r = api.nvmlDeviceGetCount_v2(&count); r != NVML_SUCCESS) {
    return FailedPrecondition("NVML device count: " + ErrorText(api, r));
  }
  std::vector<GpuSample> out;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    if (api.nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS) continue;
    GpuSample s;
    s.index = i;
    nvmlUtilization_t u{};
    if (api.nvmlDeviceGetUtilizationRates && api.nvmlDeviceGetUtilizationRates(d, &u) == 0) {
      s.utilization_pct = u.gpu;
      s.memory_utilization_pct = u.memory;
    }
    nvmlMemory_t mem{};
    if (api.nvmlDeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS) {
      s.memory_used_mib = static_cast<int64_t>(mem.used >> 20);
      s.memory_free_mib = static_cast<int64_t>(mem.free >> 20);
    }
    if (api.nvmlDeviceGetTemperature) {
      api.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &s.temperature_c);
    }
    if (api.nvmlDeviceGetPowerUsage) api.nvmlDeviceGetPowerUsage(d, &s.power_mw);
    if (api.nvmlDeviceGetClockInfo) api.nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &s.sm_clock_mhz);
    if (api.nvmlDeviceGetTotalEccErrors) {
      unsigned long long n = 0;
      if (api.nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
                                          &n) == NVML_SUCCESS) {
        s.ecc_corrected = n;
      }
      if (api.nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                                          &n) == NVML_SUCCESS) {
        s.ecc_uncorrected = n;
      }
    }
    if (api.nvmlDeviceGetFieldValues) {
      nvmlFieldValue_t f[2] = {};
      f[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
      f[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
      if (api.nvmlDeviceGetFieldValues(d, 2, f) == NVML_SUCCESS &&
          f[0].nvmlReturn == NVML_SUCCESS && f[1].nvmlReturn == NVML_SUCCESS) {
        s.nvlink_data_kib = f[0].value.ullVal + f[1].value.ullVal;
        const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count();
        auto seen = nvlink_seen_.find(i);
        if (seen != nvlink_seen_.end() && now > seen->second.second &&
            *s.nvlink_data_kib >= seen->second.first) {
          s.nvlink_kib_per_s = (*s.nvlink_data_kib - seen->second.first) * 1000 /
                               static_cast<uint64_t>(now - seen->second.second);
        }
        nvlink_seen_[i] = {*s.nvlink_data_kib, now};
      }
    }
    if (api.nvmlDeviceGetPcieThroughput) {
      unsigned int kbps = 0;
      if (api.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &kbps) == NVML_SUCCESS) {
        s.pcie_tx_kib_per_s = kbps;
      }
      if (api.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &kbps) == NVML_SUCCESS) {
        s.pcie_rx_kib_per_s = kbps;
      }
    }
    if (api.nvmlDeviceGetComputeRunningProcesses) {
      unsigned int n = 64;
      std::vector<nvmlProcessInfo_v1_t> procs(n);
      if (api.nvmlDeviceGetComputeRunningProcesses(d, &n, procs.data()) == NVML_SUCCESS) {
        for (unsigned int k = 0; k < n && k < procs.size(); ++k) {
          s.processes.push_back({procs[k].pid, static_cast<int64_t>(procs[k].usedGpuMemory >> 20)});
        }
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// `get`'s value when it answers, unset otherwise.
template <typename T, typename Get>
std::optional<T> Maybe(Get get) {
  T v{};
  if (get(&v) != NVML_SUCCESS) return std::nullopt;
  return v;
}

// The count of pages retired for `cause`: NVML answers the count with a buffer of 0 entries,
// as success or as "insufficient size".
std::optional<uint32_t> RetiredPages(const Nvml::Api& api, nvmlDevice_t d, int cause) {
  unsigned int count = 0;
  const nvmlReturn_t r = api.nvmlDeviceGetRetiredPages(d, cause, &count, nullptr);
  if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE) return std::nullopt;
  return count;
}

void ReadLinks(const Nvml::Api& api, nvmlDevice_t d, GpuCheckup* c) {
  if (!api.nvmlDeviceGetNvLinkState) return;
  uint64_t errors = 0;
  bool counted = false;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    int active = 0;
    if (api.nvmlDeviceGetNvLinkState(d, link, &active) != NVML_SUCCESS) continue;
    ++c->nvlinks;
    if (active != NVML_FEATURE_ENABLED) c->nvlinks_down.push_back(link);
    if (!api.nvmlDeviceGetNvLinkErrorCounter) continue;
    for (int counter : {NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY,
                        NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA}) {
      unsigned long long n = 0;
      if (api.nvmlDeviceGetNvLinkErrorCounter(d, link, counter, &n) == NVML_SUCCESS) {
        errors += n;
        counted = true;
      }
    }
  }
  if (counted) c->nvlink_errors = errors;
}

}  // namespace

Result<std::vector<GpuCheckup>> Nvml::Checkup() {
  const Api& api = *api_;
  unsigned int count = 0;
  if (nvmlReturn_t r = api.nvmlDeviceGetCount_v2(&count); r != NVML_SUCCESS) {
    return FailedPrecondition("NVML device count: " + ErrorText(api, r));
  }
  std::vector<GpuCheckup> out;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t d = nullptr;
    if (api.nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS) continue;
    GpuCheckup c;
    c.index = i;
    char buf[96] = {};
    if (api.nvmlDeviceGetVbiosVersion && api.nvmlDeviceGetVbiosVersion(d, buf, sizeof buf) == 0) {
      c.vbios = buf;
    }
    if (api.nvmlDeviceGetRetiredPages) {
      c.retired_sbe =
          RetiredPages(api, d, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
      c.retired_dbe = RetiredPages(api, d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
    }
    if (api.nvmlDeviceGetRetiredPagesPendingStatus) {
      if (auto p = Maybe<int>(
              [&](int* v) { return api.nvmlDeviceGetRetiredPagesPendingStatus(d, v); })) {
        c.retire_pending = *p == NVML_FEATURE_ENABLED;
      }
    }
    if (api.nvmlDeviceGetRemappedRows) {
      unsigned int corr = 0, unc = 0, pending = 0, failed = 0;
      if (api.nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failed) == NVML_SUCCESS) {
        c.remapped_correctable = corr;
        c.remapped_uncorrectable = unc;
        c.remap_pending = pending != 0;
        c.remap_failed = failed != 0;
      }
    }
    using U = unsigned int;
    if (api.nvmlDeviceGetCurrPcieLinkGeneration) {
      c.pcie_gen = Maybe<U>([&](U* v) { return api.nvmlDeviceGetCurrPcieLinkGeneration(d, v); });
    }
    if (api.nvmlDeviceGetMaxPcieLinkGeneration) {
      c.pcie_gen_max = Maybe<U>([&](U* v) { return api.nvmlDeviceGetMaxPcieLinkGeneration(d, v); });
    }
    if (api.nvmlDeviceGetCurrPcieLinkWidth) {
      c.pcie_width = Maybe<U>([&](U* v) { return api.nvmlDeviceGetCurrPcieLinkWidth(d, v); });
    }
    if (api.nvmlDeviceGetMaxPcieLinkWidth) {
      c.pcie_width_max = Maybe<U>([&](U* v) { return api.nvmlDeviceGetMaxPcieLinkWidth(d, v); });
    }
    if (api.nvmlDeviceGetCurrentClocksThrottleReasons) {
      using L = unsigned long long;
      if (auto t =
              Maybe<L>([&](L* v) { return api.nvmlDeviceGetCurrentClocksThrottleReasons(d, v); })) {
        c.throttle_reasons = *t;
      }
    }
    ReadLinks(api, d, &c);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tessera::agent
