// The subset of NVML's C ABI (nvml.h, NVIDIA driver R450 and later) that Tessera uses, declared
// from the NVML API reference: types, constants and function signatures. The agent resolves the
// functions with dlsym; the test double (tests/agent/fake_nvml.cc) implements them.
#ifndef TESSERA_AGENT_NVML_ABI_H_
#define TESSERA_AGENT_NVML_ABI_H_

extern "C" {

typedef int nvmlReturn_t;
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

typedef struct nvmlDevice_st* nvmlDevice_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlEventSet_st* nvmlEventSet_t;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

enum : unsigned long long { nvmlEventTypeXidCriticalError = 0x0000000000000008ULL };
enum : int { NVML_ERROR_TIMEOUT = 10 };

// The process record of the unversioned nvmlDeviceGetComputeRunningProcesses.
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// nvmlDeviceGetFieldValues: one requested field and its answer.
typedef union nvmlValue_st {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;
typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
enum : unsigned int {
  // NVLink data sent and received by the GPU since the driver loaded, in KiB (all links).
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
};

// nvmlComputeMode_t.
enum : int {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};

enum : int {
  NVML_TEMPERATURE_GPU = 0,
  NVML_CLOCK_SM = 1,
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
  NVML_VOLATILE_ECC = 0,
  NVML_NVLINK_MAX_LINKS = 18,
};
// nvmlInit's answer when the kernel module and the user-space library are of different driver
// versions ("Driver/library version mismatch"), and when no driver is loaded.
enum : int { NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18 };
// nvmlPcieUtilCounter_t: nvmlDeviceGetPcieThroughput's direction (KB/s over a 20 ms sample).
enum : int { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
// nvmlPageRetirementCause_t.
enum : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
// nvmlNvLinkErrorCounter_t: data-link replays, recoveries, CRC errors in flits and in data.
enum : int {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
};
// nvmlClocksThrottleReasons bits.
enum : unsigned long long {
  nvmlClocksThrottleReasonGpuIdle = 0x1ULL,
  nvmlClocksThrottleReasonApplicationsClocksSetting = 0x2ULL,
  nvmlClocksThrottleReasonSwPowerCap = 0x4ULL,
  nvmlClocksThrottleReasonHwSlowdown = 0x8ULL,
  nvmlClocksThrottleReasonSyncBoost = 0x10ULL,
  nvmlClocksThrottleReasonSwThermalSlowdown = 0x20ULL,
  nvmlClocksThrottleReasonHwThermalSlowdown = 0x40ULL,
  nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x80ULL,
};

#define TESSERA_NVML_FUNCTIONS(X)                                                               \
  X(nvmlInit_v2, (void))                                                                        \
  X(nvmlShutdown, (void))                                                                       \
  X(nvmlSystemGetDriverVersion, (char*, unsigned int))                                          \
  X(nvmlSystemGetNVMLVersion, (char*, unsigned int))                                            \
  X(nvmlDeviceGetCount_v2, (unsigned int*))                                                     \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t*))                               \
  X(nvmlDeviceGetUUID, (nvmlDevice_t, char*, unsigned int))                                     \
  X(nvmlDeviceGetName, (nvmlDevice_t, char*, unsigned int))                                     \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t*))                                     \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t, nvmlPciInfo_t*))                                    \
  X(nvmlDeviceGetMigMode, (nvmlDevice_t, unsigned int*, unsigned int*))                         \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t, unsigned int*))                              \
  X(nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t, unsigned int, nvmlDevice_t*))           \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t, unsigned int*))                                  \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t, unsigned int*))                              \
  X(nvmlDeviceGetEccMode, (nvmlDevice_t, int*, int*))                                           \
  X(nvmlDeviceGetNvLinkState, (nvmlDevice_t, unsigned int, int*))                               \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2, (nvmlDevice_t, unsigned int, nvmlPciInfo_t*))          \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t*))                          \
  X(nvmlDeviceGetTemperature, (nvmlDevice_t, int, unsigned int*))                               \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned int*))                                     \
  X(nvmlDeviceGetClockInfo, (nvmlDevice_t, int, unsigned int*))                                 \
  X(nvmlDeviceGetTotalEccErrors, (nvmlDevice_t, int, int, unsigned long long*))                 \
  X(nvmlDeviceGetComputeRunningProcesses, (nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*)) \
  X(nvmlDeviceGetFieldValues, (nvmlDevice_t, int, nvmlFieldValue_t*))                           \
  X(nvmlEventSetCreate, (nvmlEventSet_t*))                                                      \
  X(nvmlDeviceRegisterEvents, (nvmlDevice_t, unsigned long long, nvmlEventSet_t))               \
  X(nvmlEventSetWait_v2, (nvmlEventSet_t, nvmlEventData_t*, unsigned int))                      \
  X(nvmlEventSetFree, (nvmlEventSet_t))                                                         \
  X(nvmlDeviceGetComputeMode, (nvmlDevice_t, int*))                                             \
  X(nvmlDeviceGetVbiosVersion, (nvmlDevice_t, char*, unsigned int))                             \
  X(nvmlDeviceGetRetiredPages, (nvmlDevice_t, int, unsigned int*, unsigned long long*))         \
  X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t, int*))                               \
  X(nvmlDeviceGetRemappedRows,                                                                  \
    (nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*, unsigned int*))                 \
  X(nvmlDeviceGetCurrPcieLinkGeneration, (nvmlDevice_t, unsigned int*))                         \
  X(nvmlDeviceGetMaxPcieLinkGeneration, (nvmlDevice_t, unsigned int*))                          \
  X(nvmlDeviceGetCurrPcieLinkWidth, (nvmlDevice_t, unsigned int*))                              \
  X(nvmlDeviceGetMaxPcieLinkWidth, (nvmlDevice_t, unsigned int*))                               \
  X(nvmlDeviceGetCurrentClocksThrottleReasons, (nvmlDevice_t, unsigned long long*))             \
  X(nvmlDeviceGetNvLinkErrorCounter, (nvmlDevice_t, unsigned int, int, unsigned long long*))    \
  X(nvmlDeviceGetPcieThroughput, (nvmlDevice_t, int, unsigned int*))

// Each returns nvmlReturn_t. And:
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);  // nvmlErrorString
}

#endif  // TESSERA_AGENT_NVML_ABI_H_
