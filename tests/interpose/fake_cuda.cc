// A test double of the CUDA driver, libcuda.so.1, with the C ABI of interpose/cuda_abi.h. Device
// memory is a counter per device (TESSERA_FAKE_CUDA_MEMORY_MIB each, 81920 unless set;
// TESSERA_FAKE_CUDA_DEVICES devices, 1 unless set); allocations get addresses of their own and
// fail with CUDA_ERROR_OUT_OF_MEMORY past the card. Contexts are per thread, as the driver's are:
// a thread with none gets CUDA_ERROR_INVALID_CONTEXT from calls that need one. A kernel is a
// sleep of gridDimX microseconds, and the library answers NVML's per-process utilization for it
// (installed as libnvidia-ml.so.1 too): the share of each 200 ms this process's kernels ran, as
// NVML samples it on an H100. IPC handles carry the exporter's address and size, so
// another process can open them. cuGetProcAddress maps the plain names to the versioned entry
// points (and to the _ptsz ones for the per-thread default stream), as the driver does.
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "interpose/cuda_abi.h"

extern "C" {
TESSERA_CUDA_WRAPPED(TESSERA_CUDA_DECLARE)
TESSERA_CUDA_CALLED(TESSERA_CUDA_DECLARE)
CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int* version);
CUresult cuDeviceGet(CUdevice* dev, int ordinal);
CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxSynchronize(void);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev);
}

struct CUctx_st {
  int device;
};

namespace {

struct Block {
  int device;
  uint64_t bytes;
};

struct Card {
  std::mutex mu;
  uint64_t used[8] = {};
  std::map<uint64_t, Block> blocks;  // by address or handle
  uint64_t next = 0x7f0000000000ULL;
  bool initialized = false;
};

Card& TheCard() {
  static Card* c = new Card;
  return *c;
}

thread_local CUctx_st* current = nullptr;

int Devices() {
  const char* n = std::getenv("TESSERA_FAKE_CUDA_DEVICES");
  const int v = n != nullptr ? std::atoi(n) : 1;
  return v < 1 ? 1 : v > 8 ? 8 : v;
}

uint64_t Capacity() {
  const char* m = std::getenv("TESSERA_FAKE_CUDA_MEMORY_MIB");
  const uint64_t mib = m != nullptr ? std::strtoull(m, nullptr, 10) : 81920;
  return mib << 20;
}

// Takes `bytes` on `device` and returns the block's id, or 0 when the card is full.
uint64_t Take(int device, uint64_t bytes) {
  Card& c = TheCard();
  std::lock_guard<std::mutex> lock(c.mu);
  if (bytes == 0 || bytes > Capacity() - c.used[device]) return 0;
  c.used[device] += bytes;
  const uint64_t id = c.next;
  c.next += (bytes + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  c.blocks[id] = Block{device, bytes};
  return id;
}

CUresult Give(uint64_t id) {
  Card& c = TheCard();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.blocks.find(id);
  if (it == c.blocks.end()) return CUDA_ERROR_INVALID_VALUE;
  c.used[it->second.device] -= it->second.bytes;
  c.blocks.erase(it);
  return CUDA_SUCCESS;
}

// The current context's device, or -1 when the thread has none.
int Device() { return current != nullptr ? current->device : -1; }

CUresult Alloc(CUdeviceptr* dptr, uint64_t bytes, int device) {
  if (!TheCard().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t id = Take(device, bytes);
  if (id == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *dptr = id;
  return CUDA_SUCCESS;
}

uint64_t ElementBytes(int format, unsigned int channels) {
  const uint64_t one = format == CU_AD_FORMAT_UNSIGNED_INT8 || format == CU_AD_FORMAT_SIGNED_INT8
                           ? 1
                       : format == CU_AD_FORMAT_UNSIGNED_INT16 ||
                               format == CU_AD_FORMAT_SIGNED_INT16 || format == CU_AD_FORMAT_HALF
                           ? 2
                           : 4;
  return one * (channels == 0 ? 1 : channels);
}

uint64_t WallUs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000ULL + static_cast<uint64_t>(t.tv_nsec) / 1000;
}

// The time kernels ran, in 200 ms buckets of wall time (the last 128): NVML's sampling period
// on an H100.
constexpr uint64_t kBucketUs = 200'000;
constexpr int kBuckets = 128;
struct Busy {
  std::mutex mu;
  uint64_t bucket[kBuckets] = {};   // which bucket (time / kBucketUs) each entry holds
  uint64_t busy_us[kBuckets] = {};  // kernel time within it
};
Busy& TheBusy() {
  static Busy* b = new Busy;
  return *b;
}

void RecordBusy(uint64_t start, uint64_t end) {
  Busy& b = TheBusy();
  std::lock_guard<std::mutex> lock(b.mu);
  for (uint64_t t = start; t < end;) {
    const uint64_t index = t / kBucketUs;
    const uint64_t until = std::min(end, (index + 1) * kBucketUs);
    const int at = static_cast<int>(index % kBuckets);
    if (b.bucket[at] != index) {
      b.bucket[at] = index;
      b.busy_us[at] = 0;
    }
    b.busy_us[at] += until - t;
    t = until;
  }
}

// The IPC handle's content: a magic, the exporter's block and its size.
struct IpcContent {
  uint64_t magic;
  uint64_t address;
  uint64_t bytes;
  int32_t pid;
};
constexpr uint64_t kIpcMagic = 0x46414b4549504321ULL;

}  // namespace

extern "C" {

CUresult cuInit(unsigned int) {
  TheCard().initialized = true;
  return CUDA_SUCCESS;
}
CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = 12080;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) {
  if (!TheCard().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = Devices();
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (!TheCard().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= Devices()) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (!TheCard().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= Devices()) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = Capacity();
  return CUDA_SUCCESS;
}
CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int, CUdevice dev) {
  if (!TheCard().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= Devices()) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = new CUctx_st{dev};
  current = *ctx;
  return CUDA_SUCCESS;
}
// One primary context per device, for the life of the process.
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  static CUctx_st primary[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
  if (!TheCard().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= Devices() || ctx == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = &primary[dev];
  return CUDA_SUCCESS;
}
CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (current == ctx) current = nullptr;
  delete ctx;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
  current = ctx;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* dev) {
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = current->device;
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) { return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (Device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  Card& c = TheCard();
  std::lock_guard<std::mutex> lock(c.mu);
  *total = Capacity();
  *free = Capacity() - c.used[Device()];
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) { return Alloc(dptr, bytes, Device()); }
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int) {
  return Alloc(dptr, bytes, Device());
}
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                            unsigned int) {
  if (pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t p = (width + 511) / 512 * 512;
  const CUresult r = Alloc(dptr, p * height, Device());
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}
CUresult cuMemFree_v2(CUdeviceptr dptr) { return Give(dptr); }
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream) {
  return Alloc(dptr, bytes, Device());
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  return cuMemAllocAsync(dptr, bytes, s);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool, CUstream) {
  return Alloc(dptr, bytes, Device());
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool p, CUstream s) {
  return cuMemAllocFromPoolAsync(dptr, bytes, p, s);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream) { return Give(dptr); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) { return cuMemFreeAsync(dptr, s); }

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long) {
  if (prop == nullptr || handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr id = 0;
  const CUresult r = Alloc(&id, size, prop->location.id);
  if (r == CUDA_SUCCESS) *handle = id;
  return r;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { return Give(handle); }

CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (d == nullptr || array == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr id = 0;
  const CUresult r =
      Alloc(&id, d->Width * (d->Height ? d->Height : 1) * ElementBytes(d->Format, d->NumChannels),
            Device());
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<CUarray>(id);
  return r;
}
CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (d == nullptr || array == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr id = 0;
  const CUresult r = Alloc(&id,
                           d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
                               ElementBytes(d->Format, d->NumChannels),
                           Device());
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<CUarray>(id);
  return r;
}
CUresult cuArrayDestroy(CUarray array) { return Give(reinterpret_cast<uint64_t>(array)); }
CUresult cuMipmappedArrayCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* d,
                                unsigned int levels) {
  if (d == nullptr || array == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t total = 0;
  size_t w = d->Width, h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;
  for (unsigned int i = 0; i < (levels ? levels : 1); ++i) {
    total += w * h * z * ElementBytes(d->Format, d->NumChannels);
    w = w > 1 ? w / 2 : 1;
    h = h > 1 ? h / 2 : 1;
    z = z > 1 ? z / 2 : 1;
  }
  CUdeviceptr id = 0;
  const CUresult r = Alloc(&id, total, Device());
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<CUmipmappedArray>(id);
  return r;
}
CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) {
  return Give(reinterpret_cast<uint64_t>(array));
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  Card& c = TheCard();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.blocks.upper_bound(dptr);
  if (it == c.blocks.begin()) return CUDA_ERROR_NOT_FOUND;
  --it;
  if (dptr >= it->first + it->second.bytes) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = it->first;
  if (size != nullptr) *size = it->second.bytes;
  return CUDA_SUCCESS;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  size_t size = 0;
  CUdeviceptr base = 0;
  if (handle == nullptr || cuMemGetAddressRange_v2(&base, &size, dptr) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  IpcContent content{kIpcMagic, base, size, static_cast<int32_t>(getpid())};
  std::memset(handle->reserved, 0, sizeof handle->reserved);
  std::memcpy(handle->reserved, &content, sizeof content);
  return CUDA_SUCCESS;
}
// Mapping another process's memory takes none of this card's.
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int) {
  IpcContent content{};
  std::memcpy(&content, handle.reserved, sizeof content);
  if (content.magic != kIpcMagic || dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (Device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (content.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // as the driver says
  Card& c = TheCard();
  std::lock_guard<std::mutex> lock(c.mu);
  const uint64_t id = c.next;
  c.next += (content.bytes + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  c.blocks[id] = Block{Device(), content.bytes};
  c.used[Device()] += 0;
  *dptr = id;
  return CUDA_SUCCESS;
}
CUresult cuIpcOpenMemHandle(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int flags) {
  return cuIpcOpenMemHandle_v2(dptr, handle, flags);
}
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  Card& c = TheCard();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.blocks.erase(dptr) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuImportExternalMemory(CUexternalMemory* mem, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* d) {
  if (d == nullptr || mem == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr id = 0;
  const CUresult r = Alloc(&id, d->size, Device());
  if (r == CUDA_SUCCESS) *mem = reinterpret_cast<CUexternalMemory>(id);
  return r;
}
CUresult cuDestroyExternalMemory(CUexternalMemory mem) {
  return Give(reinterpret_cast<uint64_t>(mem));
}

CUresult cuLaunchKernel(CUfunction, unsigned int gx, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, CUstream, void**, void**) {
  if (Device() < 0) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t start = WallUs();
  std::this_thread::sleep_for(std::chrono::microseconds(gx));
  RecordBusy(start, WallUs());
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int sh,
                             CUstream s, void** p, void** e) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}

// The other launches start nothing.
CUresult cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**, void**) {
  return Device() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** p, void** e) {
  return cuLaunchKernelEx(c, f, p, e);
}
CUresult cuLaunchCooperativeKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                                   unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
                                   void**) {
  return Device() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int sh, CUstream s, void** p) {
  return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, sh, s, p);
}
CUresult cuGraphLaunch(CUgraphExec, CUstream) {
  return Device() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}
CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) { return cuGraphLaunch(g, s); }

// The driver's table: plain name -> entry point (and the per-thread-default-stream one).
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  struct Name {
    const char* name;
    void* fn;
    void* ptsz;
  };
#define FN(f) reinterpret_cast<void*>(&f)
  static const Name names[] = {
      {"cuInit", FN(cuInit), nullptr},
      {"cuDriverGetVersion", FN(cuDriverGetVersion), nullptr},
      {"cuDeviceGet", FN(cuDeviceGet), nullptr},
      {"cuDeviceGetCount", FN(cuDeviceGetCount), nullptr},
      {"cuDeviceTotalMem", FN(cuDeviceTotalMem_v2), nullptr},
      {"cuCtxCreate", FN(cuCtxCreate_v2), nullptr},
      {"cuCtxDestroy", FN(cuCtxDestroy_v2), nullptr},
      {"cuCtxSetCurrent", FN(cuCtxSetCurrent), nullptr},
      {"cuDevicePrimaryCtxRetain", FN(cuDevicePrimaryCtxRetain), nullptr},
      {"cuCtxGetDevice", FN(cuCtxGetDevice), nullptr},
      {"cuCtxSynchronize", FN(cuCtxSynchronize), nullptr},
      {"cuMemGetInfo", FN(cuMemGetInfo_v2), nullptr},
      {"cuMemAlloc", FN(cuMemAlloc_v2), nullptr},
      {"cuMemAllocPitch", FN(cuMemAllocPitch_v2), nullptr},
      {"cuMemAllocManaged", FN(cuMemAllocManaged), nullptr},
      {"cuMemFree", FN(cuMemFree_v2), nullptr},
      {"cuMemAllocAsync", FN(cuMemAllocAsync), FN(cuMemAllocAsync_ptsz)},
      {"cuMemAllocFromPoolAsync", FN(cuMemAllocFromPoolAsync), FN(cuMemAllocFromPoolAsync_ptsz)},
      {"cuMemFreeAsync", FN(cuMemFreeAsync), FN(cuMemFreeAsync_ptsz)},
      {"cuMemCreate", FN(cuMemCreate), nullptr},
      {"cuMemRelease", FN(cuMemRelease), nullptr},
      {"cuArrayCreate", FN(cuArrayCreate_v2), nullptr},
      {"cuArray3DCreate", FN(cuArray3DCreate_v2), nullptr},
      {"cuArrayDestroy", FN(cuArrayDestroy), nullptr},
      {"cuMipmappedArrayCreate", FN(cuMipmappedArrayCreate), nullptr},
      {"cuMipmappedArrayDestroy", FN(cuMipmappedArrayDestroy), nullptr},
      {"cuMemGetAddressRange", FN(cuMemGetAddressRange_v2), nullptr},
      {"cuIpcGetMemHandle", FN(cuIpcGetMemHandle), nullptr},
      {"cuIpcOpenMemHandle", FN(cuIpcOpenMemHandle_v2), nullptr},
      {"cuIpcCloseMemHandle", FN(cuIpcCloseMemHandle), nullptr},
      {"cuImportExternalMemory", FN(cuImportExternalMemory), nullptr},
      {"cuDestroyExternalMemory", FN(cuDestroyExternalMemory), nullptr},
      {"cuLaunchKernel", FN(cuLaunchKernel), FN(cuLaunchKernel_ptsz)},
      {"cuLaunchKernelEx", FN(cuLaunchKernelEx), FN(cuLaunchKernelEx_ptsz)},
      {"cuLaunchCooperativeKernel", FN(cuLaunchCooperativeKernel),
       FN(cuLaunchCooperativeKernel_ptsz)},
      {"cuGraphLaunch", FN(cuGraphLaunch), FN(cuGraphLaunch_ptsz)},
      {"cuGetProcAddress", FN(cuGetProcAddress_v2), nullptr},
  };
#undef FN
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  for (const Name& n : names) {
    if (std::strcmp(n.name, symbol) != 0) continue;
    // Before 12.5 cuGetProcAddress names the first version of itself.
    if (std::strcmp(symbol, "cuGetProcAddress") == 0 && version < 12050) {
      *pfn = reinterpret_cast<void*>(&cuGetProcAddress);
    } else {
      *pfn = (flags & 2) != 0 && n.ptsz != nullptr ? n.ptsz : n.fn;
    }
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  const CUresult r = cuGetProcAddress(symbol, pfn, version, flags);
  if (status != nullptr) *status = r == CUDA_SUCCESS ? 0 : 1;
  return r;
}

// This process's pid on the host, as NVML reports it: the first of /proc/self/status's NSpid
// (a process in a pid namespace of its own sees another pid).
unsigned int HostPid() {
  FILE* f = std::fopen("/proc/self/status", "r");
  unsigned int pid = static_cast<unsigned int>(getpid());
  char line[256];
  while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "NSpid:", 6) == 0) {
      pid = static_cast<unsigned int>(std::strtoul(line + 6, nullptr, 10));
      break;
    }
  }
  if (f != nullptr) std::fclose(f);
  return pid;
}

// NVML, as far as the share interposer's compute sampler reads it.
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} FakeProcessSample;

int nvmlInit_v2(void) { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  *device = reinterpret_cast<void*>(static_cast<uintptr_t>(index + 1));
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char*, void** device) {
  *device = reinterpret_cast<void*>(1);
  return 0;
}
// As NVML on an H100: one sample of this process, its latest completed 200 ms period after
// `last_seen` in which its kernels ran (its end, and the share of it they ran, in percent).
int nvmlDeviceGetProcessUtilization(void*, FakeProcessSample* samples, unsigned int* count,
                                    unsigned long long last_seen) {
  Busy& b = TheBusy();
  std::lock_guard<std::mutex> lock(b.mu);
  const uint64_t now = WallUs() / kBucketUs;
  unsigned int n = 0;
  for (uint64_t index = now - 1; index + kBuckets > now && n == 0; --index) {
    const int at = static_cast<int>(index % kBuckets);
    const uint64_t end = (index + 1) * kBucketUs;
    if (b.bucket[at] != index || b.busy_us[at] == 0 || end <= last_seen) continue;
    if (samples != nullptr && n < *count) {
      samples[n] = FakeProcessSample{
          HostPid(),
          end,
          static_cast<unsigned int>((b.busy_us[at] * 100 + kBucketUs / 2) / kBucketUs),
          0,
          0,
          0};
    }
    ++n;
  }
  if (n == 0) return 6;  // NVML_ERROR_NOT_FOUND: no sample since last_seen
  if (samples == nullptr || n > *count) {
    *count = n;
    return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  *count = n;
  return 0;
}

}  // extern "C"
