// A test double of libnvidia-ml.so with the same C ABI (src/agent/nvml_abi.h): devices come from
// the JSON file named by TESSERA_FAKE_NVML. When the file changes, the devices' samples
// (utilisation, temperature, ...) follow it, so a test can drive a GPU. Built as a shared library
// so that the agent's real dlopen/dlsym path runs without a GPU. Built a second time with
// TESSERA_FAKE_NVML_NO_PCI to check the error for a missing symbol.
//
// {"driver": "550.54.15", "nvml": "12.550.54.15",
//  "devices": [{"uuid": "GPU-1", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
//               "busId": "00000000:18:00.0", "mig": false, "ecc": true, "computeMode": 3,
//               "migDevices": [{"uuid": "MIG-1", "memoryMiB": 9728, "gi": 1, "ci": 0}],
//               "nvlink": ["00000000:2A:00.0"], "util": 37, "memUtil": 5, "usedMiB": 1024,
//               "temp": 41, "powerMw": 120000, "smClock": 1980, "eccCorrected": 0,
//               "eccUncorrected": 0, "nvlinkTxKiB": 100, "nvlinkRxKiB": 50,
//               "processes": [{"pid": 42, "usedMiB": 512}]}]}
//
// Faults for `tessera doctor`, each optional (absent: NVML answers "not supported", except the
// NVLink links, which are up):
//   root: "initError": 18 (nvmlInit fails so: 18 is "Driver/library version mismatch");
//   device: "vbios": "96.00.89.00.01", "retiredSbe": 2, "retiredDbe": 1, "retirePending": true,
//           "remappedCorrectable": 0, "remappedUncorrectable": 1, "remapPending": true,
//           "remapFailed": false, "pcieGen": 3, "pcieGenMax": 5, "pcieWidth": 8,
//           "pcieWidthMax": 16, "throttle": 8 (nvmlClocksThrottleReasons bits),
//           "nvlinkDown": [1] (links of "nvlink" that are down), "nvlinkErrors": 12 (per link,
//           in its replay counter), "pcieTxKBps": 100, "pcieRxKBps": 24000000 (PCIe throughput).
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "agent/nvml_abi.h"

namespace {

struct nvmlDeviceState {
  nlohmann::json spec;
  bool is_mig = false;
};

std::vector<nvmlDeviceState*>& Devices() {
  static std::vector<nvmlDeviceState*> d;
  return d;
}
nlohmann::json& Root() {
  static nlohmann::json root;
  return root;
}

nvmlDeviceState* State(nvmlDevice_t d) { return reinterpret_cast<nvmlDeviceState*>(d); }

// Re-reads the devices' specs when TESSERA_FAKE_NVML changed since the last read.
void Refresh() {
  static struct timespec seen {};
  const char* path = std::getenv("TESSERA_FAKE_NVML");
  struct stat st {};
  if (path == nullptr || ::stat(path, &st) != 0) return;
  if (st.st_mtim.tv_sec == seen.tv_sec && st.st_mtim.tv_nsec == seen.tv_nsec) return;
  seen = st.st_mtim;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json root = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!root.is_object()) return;  // caught mid-write: the next sample reads it again
  const nlohmann::json devices = root.value("devices", nlohmann::json::array());
  for (size_t i = 0; i < devices.size() && i < Devices().size(); ++i) {
    Devices()[i]->spec = devices[i];
  }
}

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned int len) {
  if (s.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

// The faults `tessera doctor` reads: a device's key, or "not supported" without it.
template <typename T>
nvmlReturn_t Fact(nvmlDevice_t d, const char* key, T* out) {
  Refresh();
  const nlohmann::json& spec = State(d)->spec;
  if (!spec.contains(key)) return NVML_ERROR_NOT_SUPPORTED;
  *out = spec[key].get<T>();
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  const char* path = std::getenv("TESSERA_FAKE_NVML");
  if (path == nullptr) return 9;  // driver not loaded
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  Root() = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!Root().is_object()) return 9;
  if (Root().contains("initError")) return Root()["initError"].get<int>();
  for (const auto& d : Root().value("devices", nlohmann::json::array())) {
    Devices().push_back(new nvmlDeviceState{d, false});
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  for (nvmlDeviceState* d : Devices()) delete d;
  Devices().clear();
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  // NVML's own words for the errors a test injects.
  if (r == 0) return "Success";
  if (r == NVML_ERROR_DRIVER_NOT_LOADED) return "Driver Not Loaded";
  if (r == NVML_ERROR_LIB_RM_VERSION_MISMATCH) return "Driver/library version mismatch";
  return "Fake NVML error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned int len) {
  return CopyString(Root().value("driver", ""), v, len);
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char* v, unsigned int len) {
  return CopyString(Root().value("nvml", ""), v, len);
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = static_cast<unsigned int>(Devices().size());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i >= Devices().size()) return NVML_ERROR_INVALID_ARGUMENT;
  *d = reinterpret_cast<nvmlDevice_t>(Devices()[i]);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* out, unsigned int len) {
  return CopyString(State(d)->spec.value("uuid", ""), out, len);
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* out, unsigned int len) {
  return CopyString(State(d)->spec.value("name", ""), out, len);
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  const auto& s = State(d)->spec;
  m->total = static_cast<unsigned long long>(s.value("memoryMiB", 0)) << 20;
  m->used = static_cast<unsigned long long>(s.value("usedMiB", 0)) << 20;
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}
#ifndef TESSERA_FAKE_NVML_NO_PCI
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  const std::string bus = State(d)->spec.value("busId", "");
  std::strncpy(p->busId, bus.c_str(), sizeof p->busId - 1);
  return NVML_SUCCESS;
}
#endif
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int* current, unsigned int* pending) {
  const auto& s = State(d)->spec;
  if (!s.contains("mig")) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = s["mig"].get<bool>() ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int* n) {
  *n =
      static_cast<unsigned int>(State(d)->spec.value("migDevices", nlohmann::json::array()).size());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i, nvmlDevice_t* m) {
  const auto migs = State(d)->spec.value("migDevices", nlohmann::json::array());
  if (i >= migs.size()) return NVML_ERROR_NOT_FOUND;
  auto* st = new nvmlDeviceState{migs[i], true};  // leaked on purpose: lives until exit
  *m = reinterpret_cast<nvmlDevice_t>(st);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int* id) {
  *id = State(d)->spec.value("gi", 0u);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int* id) {
  *id = State(d)->spec.value("ci", 0u);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, int* mode) {
  *mode = State(d)->spec.value("computeMode", 0);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int* current, int* pending) {
  *current = *pending = State(d)->spec.value("ecc", false) ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int* active) {
  const auto links = State(d)->spec.value("nvlink", nlohmann::json::array());
  if (link >= links.size()) return NVML_ERROR_NOT_SUPPORTED;
  Refresh();
  const auto down = State(d)->spec.value("nvlinkDown", nlohmann::json::array());
  *active = std::find(down.begin(), down.end(), link) == down.end() ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link,
                                                 nvmlPciInfo_t* p) {
  const auto links = State(d)->spec.value("nvlink", nlohmann::json::array());
  if (link >= links.size()) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(p, 0, sizeof *p);
  std::strncpy(p->busId, links[link].get<std::string>().c_str(), sizeof p->busId - 1);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  Refresh();
  u->gpu = State(d)->spec.value("util", 0u);
  u->memory = State(d)->spec.value("memUtil", 0u);
  return NVML_SUCCESS;
}
// NVLink counters from "nvlinkTxKiB"/"nvlinkRxKiB"; other fields are not supported.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t* values) {
  for (int i = 0; i < count; ++i) {
    const char* key = values[i].fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX   ? "nvlinkTxKiB"
                      : values[i].fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX ? "nvlinkRxKiB"
                                                                                   : nullptr;
    const nlohmann::json& spec = State(d)->spec;
    values[i].nvmlReturn = key != nullptr && spec.contains(key) ? NVML_SUCCESS : 3;
    if (values[i].nvmlReturn == NVML_SUCCESS) values[i].value.ullVal = spec[key].get<uint64_t>();
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int, unsigned int* t) {
  *t = State(d)->spec.value("temp", 0u);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  *mw = State(d)->spec.value("powerMw", 0u);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int, unsigned int* mhz) {
  *mhz = State(d)->spec.value("smClock", 0u);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int, unsigned long long* n) {
  *n = State(d)->spec.value(type == 0 ? "eccCorrected" : "eccUncorrected", 0ull);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int* count,
                                                  nvmlProcessInfo_v1_t* infos) {
  const auto procs = State(d)->spec.value("processes", nlohmann::json::array());
  if (procs.size() > *count) {
    *count = static_cast<unsigned int>(procs.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = static_cast<unsigned int>(procs.size());
  for (size_t i = 0; i < procs.size(); ++i) {
    infos[i].pid = procs[i].value("pid", 0u);
    infos[i].usedGpuMemory = static_cast<unsigned long long>(procs[i].value("usedMiB", 0)) << 20;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char* out, unsigned int len) {
  std::string v;
  if (nvmlReturn_t r = Fact(d, "vbios", &v); r != NVML_SUCCESS) return r;
  return CopyString(v, out, len);
}
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int* count,
                                       unsigned long long* addresses) {
  unsigned int n = 0;
  if (nvmlReturn_t r = Fact(d, cause == 0 ? "retiredSbe" : "retiredDbe", &n); r != NVML_SUCCESS) {
    return r;
  }
  const bool fits = *count >= n;
  for (unsigned int i = 0; fits && addresses != nullptr && i < n; ++i) addresses[i] = 0x1000 * i;
  *count = n;
  return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int* pending) {
  bool p = false;
  if (nvmlReturn_t r = Fact(d, "retirePending", &p); r != NVML_SUCCESS) return r;
  *pending = p ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int* corr, unsigned int* unc,
                                       unsigned int* pending, unsigned int* failed) {
  if (nvmlReturn_t r = Fact(d, "remappedUncorrectable", unc); r != NVML_SUCCESS) return r;
  bool p = false, f = false;
  (void)Fact(d, "remapPending", &p);
  (void)Fact(d, "remapFailed", &f);
  *corr = 0;
  (void)Fact(d, "remappedCorrectable", corr);
  *pending = p ? 1 : 0;
  *failed = f ? 1 : 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int* v) {
  return Fact(d, "pcieGen", v);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int* v) {
  return Fact(d, "pcieGenMax", v);
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int* v) {
  return Fact(d, "pcieWidth", v);
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int* v) {
  return Fact(d, "pcieWidthMax", v);
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* v) {
  return Fact(d, "throttle", v);
}
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int* kbps) {
  return Fact(d, counter == NVML_PCIE_UTIL_TX_BYTES ? "pcieTxKBps" : "pcieRxKBps", kbps);
}
nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
                                             unsigned long long* n) {
  const auto links = State(d)->spec.value("nvlink", nlohmann::json::array());
  if (link >= links.size()) return NVML_ERROR_NOT_SUPPORTED;
  *n = 0;
  if (counter == NVML_NVLINK_ERROR_DL_REPLAY) (void)Fact(d, "nvlinkErrors", n);
  return NVML_SUCCESS;
}

// Events: XIDs are read from the file named by TESSERA_FAKE_NVML_XIDS ("<gpu index> <xid>" per
// line), which is consumed.
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = reinterpret_cast<nvmlEventSet_t>(new int(0));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t, unsigned long long, nvmlEventSet_t) {
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t, nvmlEventData_t* data, unsigned int) {
  static std::vector<std::pair<unsigned, unsigned long long>> queued;
  if (queued.empty()) {
    const char* path = std::getenv("TESSERA_FAKE_NVML_XIDS");
    if (path != nullptr) {
      std::ifstream in(path);
      unsigned gpu = 0;
      unsigned long long xid = 0;
      while (in >> gpu >> xid) queued.emplace_back(gpu, xid);
      in.close();
      std::remove(path);
    }
  }
  if (queued.empty()) return NVML_ERROR_TIMEOUT;
  const auto [gpu, xid] = queued.front();
  queued.erase(queued.begin());
  if (gpu >= Devices().size()) return NVML_ERROR_TIMEOUT;
  data->device = reinterpret_cast<nvmlDevice_t>(Devices()[gpu]);
  data->eventType = nvmlEventTypeXidCriticalError;
  data->eventData = xid;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  delete reinterpret_cast<int*>(set);
  return NVML_SUCCESS;
}

}  // extern "C"
