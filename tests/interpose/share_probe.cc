// A CUDA program for the share interposer's tests: it reaches the driver as programs do and
// prints what each call returned, one line per step.
//
//   share_probe <how> <step>...
//   how:   dlsym   dlopen libcuda.so.1 and dlsym every entry point (as the runtime did before
//                  CUDA 12)
//          proc    dlsym only cuGetProcAddress_v2 and fetch every entry point through it, by
//                  its plain name (as the runtime does now); proc11 the same with
//                  cuGetProcAddress of CUDA 11.3
//          linked  call the entry points linked in (share_probe_linked only)
//   steps: init                     cuInit, device 0's primary context made current (as the
//                                   runtime does)
//          alloc|managed|async|pool|external <MiB>
//          vmm <MiB>                cuMemCreate on device 0
//          pitch <width bytes> <rows>
//          array <w> <h> | array3d <w> <h> <d> | mipmap <w> <h> <levels>   float elements
//          free <n>                 frees the n-th allocation made (any kind)
//          info | total             cuMemGetInfo / cuDeviceTotalMem, in MiB
//          export <n>               prints an IPC handle of the n-th allocation (hex)
//          import <hex>             opens an IPC handle; the result is an allocation
//          thread <step>            the next step on a new thread, which has no context
//          pid                      getpid()
//          nvml <library>           NVML's memory info of device 0 through <library>, in MiB
//          kernels <ms> <us>        kernels of <us> back to back for <ms> (the fake driver's
//                                   kernels last gridDimX microseconds); prints the share of
//                                   the time they ran (busy=percent) and the CPU time used
//          ready | wait | sleep <ms>  prints "ready" / reads a line of stdin / sleeps
// Each step prints "<step> <CUresult>" and what it read. Exit status 0 unless a step was
// malformed.
#include <dlfcn.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "interpose/cuda_abi.h"

extern "C" {
TESSERA_CUDA_WRAPPED(TESSERA_CUDA_DECLARE)
TESSERA_CUDA_CALLED(TESSERA_CUDA_DECLARE)
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice* dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
}

namespace {

struct Api {
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set)(CUcontext) = nullptr;
#define MEMBER(name, params, args) CUresult(*name) params = nullptr;
  TESSERA_CUDA_WRAPPED(MEMBER)
#undef MEMBER
};

template <typename F>
void Set(F* slot, void* p) {
  *slot = reinterpret_cast<F>(p);
}

// The entry points, reached as `how` says.
bool Load(const std::string& how, Api* api) {
  if (how == "linked") {
#ifdef TESSERA_PROBE_LINKED
    api->init = &cuInit;
    api->device_get = &cuDeviceGet;
    api->ctx_retain = &cuDevicePrimaryCtxRetain;
    api->ctx_set = &cuCtxSetCurrent;
#define LINKED(name, params, args) api->name = &::name;
    TESSERA_CUDA_WRAPPED(LINKED)
#undef LINKED
    return true;
#else
    return false;
#endif
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) {
    std::printf("load %s\n", dlerror());
    return false;
  }
  if (how == "dlsym") {
    Set(&api->init, dlsym(lib, "cuInit"));
    Set(&api->device_get, dlsym(lib, "cuDeviceGet"));
    Set(&api->ctx_retain, dlsym(lib, "cuDevicePrimaryCtxRetain"));
    Set(&api->ctx_set, dlsym(lib, "cuCtxSetCurrent"));
#define BY_DLSYM(name, params, args) Set(&api->name, dlsym(lib, #name));
    TESSERA_CUDA_WRAPPED(BY_DLSYM)
#undef BY_DLSYM
    return true;
  }
  if (how != "proc" && how != "proc11") return false;
  // The plain names cuda.h's users write; cuGetProcAddress picks the version.
  auto get = [&](const char* name) -> void* {
    void* fn = nullptr;
    if (how == "proc") {
      auto gpa =
          reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(lib, "cuGetProcAddress_v2"));
      CUdriverProcAddressQueryResult status = 0;
      if (gpa == nullptr || gpa(name, &fn, 12080, 0, &status) != CUDA_SUCCESS) return nullptr;
    } else {
      auto gpa = reinterpret_cast<decltype(&cuGetProcAddress)>(dlsym(lib, "cuGetProcAddress"));
      if (gpa == nullptr || gpa(name, &fn, 11030, 0) != CUDA_SUCCESS) return nullptr;
    }
    return fn;
  };
  Set(&api->init, get("cuInit"));
  Set(&api->device_get, get("cuDeviceGet"));
  Set(&api->ctx_retain, get("cuDevicePrimaryCtxRetain"));
  Set(&api->ctx_set, get("cuCtxSetCurrent"));
  Set(&api->cuMemAlloc_v2, get("cuMemAlloc"));
  Set(&api->cuMemAllocPitch_v2, get("cuMemAllocPitch"));
  Set(&api->cuMemAllocManaged, get("cuMemAllocManaged"));
  Set(&api->cuMemFree_v2, get("cuMemFree"));
  Set(&api->cuMemAllocAsync, get("cuMemAllocAsync"));
  Set(&api->cuMemAllocFromPoolAsync, get("cuMemAllocFromPoolAsync"));
  Set(&api->cuMemFreeAsync, get("cuMemFreeAsync"));
  Set(&api->cuMemCreate, get("cuMemCreate"));
  Set(&api->cuMemRelease, get("cuMemRelease"));
  Set(&api->cuArrayCreate_v2, get("cuArrayCreate"));
  Set(&api->cuArray3DCreate_v2, get("cuArray3DCreate"));
  Set(&api->cuArrayDestroy, get("cuArrayDestroy"));
  Set(&api->cuMipmappedArrayCreate, get("cuMipmappedArrayCreate"));
  Set(&api->cuMipmappedArrayDestroy, get("cuMipmappedArrayDestroy"));
  Set(&api->cuIpcGetMemHandle, get("cuIpcGetMemHandle"));
  Set(&api->cuIpcOpenMemHandle_v2, get("cuIpcOpenMemHandle"));
  Set(&api->cuIpcCloseMemHandle, get("cuIpcCloseMemHandle"));
  Set(&api->cuImportExternalMemory, get("cuImportExternalMemory"));
  Set(&api->cuDestroyExternalMemory, get("cuDestroyExternalMemory"));
  Set(&api->cuMemGetInfo_v2, get("cuMemGetInfo"));
  Set(&api->cuDeviceTotalMem_v2, get("cuDeviceTotalMem"));
  Set(&api->cuLaunchKernel, get("cuLaunchKernel"));
  return true;
}

enum class Kind { kPointer, kPhysical, kArray, kMipmapped, kExternal, kImport, kAsync };
struct Allocation {
  Kind kind;
  uint64_t id;
};

constexpr uint64_t kMiB = 1ULL << 20;

// How many words the step at `i` takes (its name and arguments).
size_t StepLength(const std::vector<std::string>& steps, size_t i) {
  if (i >= steps.size()) return 0;
  const std::string& op = steps[i];
  if (op == "pitch" || op == "array" || op == "kernels") return 3;
  if (op == "array3d" || op == "mipmap") return 4;
  if (op == "init" || op == "info" || op == "total" || op == "ready" || op == "wait" ||
      op == "pid") {
    return 1;
  }
  return 2;
}

class Probe {
 public:
  explicit Probe(const Api& api) : api_(api) {}

  // Runs steps [i, end); false when one is malformed.
  bool Run(const std::vector<std::string>& steps, size_t i) {
    while (i < steps.size()) {
      const std::string op = steps[i++];
      auto arg = [&]() -> uint64_t {
        if (i >= steps.size()) return 0;
        return std::strtoull(steps[i++].c_str(), nullptr, 0);
      };
      if (op == "thread") {
        // The next step alone, on a thread that never had a context.
        const size_t end = std::min(steps.size(), i + StepLength(steps, i));
        const std::vector<std::string> one(steps.begin() + i, steps.begin() + end);
        bool ok = true;
        std::thread t([&] { ok = Run(one, 0); });
        t.join();
        if (!ok) return false;
        i = end;
        continue;
      }
      if (op == "pid") {
        Say(op, static_cast<int>(getpid()) > 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
        continue;
      }
      if (op == "init") {
        CUdevice dev = 0;
        CUcontext ctx = nullptr;
        CUresult r = api_.init ? api_.init(0) : -1;
        if (r == CUDA_SUCCESS) r = api_.device_get(&dev, 0);
        if (r == CUDA_SUCCESS) r = api_.ctx_retain(&ctx, dev);
        if (r == CUDA_SUCCESS) r = api_.ctx_set(ctx);
        Say(op, r);
      } else if (op == "alloc" || op == "managed" || op == "async" || op == "pool") {
        const uint64_t bytes = arg() * kMiB;
        CUdeviceptr p = 0;
        const CUresult r = op == "alloc"     ? api_.cuMemAlloc_v2(&p, bytes)
                           : op == "managed" ? api_.cuMemAllocManaged(&p, bytes, 1)
                           : op == "async"
                               ? api_.cuMemAllocAsync(&p, bytes, nullptr)
                               : api_.cuMemAllocFromPoolAsync(&p, bytes, nullptr, nullptr);
        Keep(r, op == "async" || op == "pool" ? Kind::kAsync : Kind::kPointer, p);
        Say(op, r);
      } else if (op == "vmm") {
        CUmemAllocationProp prop{};
        prop.type = 1;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        CUmemGenericAllocationHandle h = 0;
        const CUresult r = api_.cuMemCreate(&h, arg() * kMiB, &prop, 0);
        Keep(r, Kind::kPhysical, h);
        Say(op, r);
      } else if (op == "external") {
        CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
        desc.type = 1;
        desc.handle.fd = -1;
        desc.size = arg() * kMiB;
        CUexternalMemory m = nullptr;
        const CUresult r = api_.cuImportExternalMemory(&m, &desc);
        Keep(r, Kind::kExternal, reinterpret_cast<uint64_t>(m));
        Say(op, r);
      } else if (op == "pitch") {
        const uint64_t width = arg(), rows = arg();
        CUdeviceptr p = 0;
        size_t pitch = 0;
        const CUresult r = api_.cuMemAllocPitch_v2(&p, &pitch, width, rows, 4);
        Keep(r, Kind::kPointer, p);
        Say(op, r, " pitch=" + std::to_string(pitch));
      } else if (op == "array" || op == "array3d" || op == "mipmap") {
        CUDA_ARRAY3D_DESCRIPTOR d3{};
        d3.Width = arg();
        d3.Height = arg();
        d3.Format = CU_AD_FORMAT_FLOAT;
        d3.NumChannels = 1;
        CUresult r;
        if (op == "array") {
          CUDA_ARRAY_DESCRIPTOR d{d3.Width, d3.Height, CU_AD_FORMAT_FLOAT, 1};
          CUarray a = nullptr;
          r = api_.cuArrayCreate_v2(&a, &d);
          Keep(r, Kind::kArray, reinterpret_cast<uint64_t>(a));
        } else if (op == "array3d") {
          d3.Depth = arg();
          CUarray a = nullptr;
          r = api_.cuArray3DCreate_v2(&a, &d3);
          Keep(r, Kind::kArray, reinterpret_cast<uint64_t>(a));
        } else {
          const unsigned int levels = static_cast<unsigned int>(arg());
          CUmipmappedArray a = nullptr;
          r = api_.cuMipmappedArrayCreate(&a, &d3, levels);
          Keep(r, Kind::kMipmapped, reinterpret_cast<uint64_t>(a));
        }
        Say(op, r);
      } else if (op == "free") {
        const uint64_t n = arg();
        if (n >= held_.size()) return false;
        Say(op, Free(held_[n]));
      } else if (op == "info") {
        size_t free = 0, total = 0;
        const CUresult r = api_.cuMemGetInfo_v2(&free, &total);
        Say(op, r,
            " free=" + std::to_string(free / kMiB) + " total=" + std::to_string(total / kMiB));
      } else if (op == "total") {
        size_t total = 0;
        const CUresult r = api_.cuDeviceTotalMem_v2(&total, 0);
        Say(op, r, " total=" + std::to_string(total / kMiB));
      } else if (op == "export") {
        const uint64_t n = arg();
        if (n >= held_.size()) return false;
        CUipcMemHandle h{};
        const CUresult r = api_.cuIpcGetMemHandle(&h, held_[n].id);
        std::string hex;
        for (unsigned char c : h.reserved) {
          char b[3];
          std::snprintf(b, sizeof b, "%02x", c);
          hex += b;
        }
        Say(op, r, " handle=" + hex);
      } else if (op == "import") {
        if (i >= steps.size() || steps[i].size() != 128) return false;
        CUipcMemHandle h{};
        for (int b = 0; b < 64; ++b) {
          h.reserved[b] = static_cast<char>(std::stoi(steps[i].substr(2 * b, 2), nullptr, 16));
        }
        ++i;
        CUdeviceptr p = 0;
        const CUresult r = api_.cuIpcOpenMemHandle_v2(&p, h, 1);
        Keep(r, Kind::kImport, p);
        Say(op, r);
      } else if (op == "kernels") {
        // Kernels back to back for <ms>, each <us> long on the fake driver (gridDimX).
        const uint64_t ms = arg(), us = arg();
        timespec start{}, now{};
        clock_gettime(CLOCK_MONOTONIC, &start);
        rusage before{}, after{};
        getrusage(RUSAGE_SELF, &before);
        uint64_t launched_us = 0, elapsed_us = 0;
        CUresult r = CUDA_SUCCESS;
        while (r == CUDA_SUCCESS && elapsed_us < ms * 1000) {
          r = api_.cuLaunchKernel(nullptr, static_cast<unsigned int>(us), 1, 1, 1, 1, 1, 0, nullptr,
                                  nullptr, nullptr);
          launched_us += us;
          clock_gettime(CLOCK_MONOTONIC, &now);
          elapsed_us = static_cast<uint64_t>((now.tv_sec - start.tv_sec) * 1'000'000LL +
                                             (now.tv_nsec - start.tv_nsec) / 1000);
        }
        getrusage(RUSAGE_SELF, &after);
        auto cpu_us = [](const rusage& u) {
          return static_cast<uint64_t>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000 +
                 static_cast<uint64_t>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
        };
        char more[96];
        std::snprintf(more, sizeof more, " busy=%.1f cpu_ms=%llu",
                      100.0 * static_cast<double>(launched_us) / static_cast<double>(elapsed_us),
                      static_cast<unsigned long long>((cpu_us(after) - cpu_us(before)) / 1000));
        Say(op, r, more);
      } else if (op == "nvml") {
        if (i >= steps.size()) return false;
        Nvml(steps[i++]);
      } else if (op == "ready") {
        std::printf("ready\n");
        std::fflush(stdout);
      } else if (op == "wait") {
        std::string line;
        std::getline(std::cin, line);
      } else if (op == "sleep") {
        usleep(static_cast<useconds_t>(arg() * 1000));
      } else {
        std::printf("unknown step %s\n", op.c_str());
        return false;
      }
    }
    return true;
  }

 private:
  void Say(const std::string& op, CUresult r, const std::string& more = "") {
    std::printf("%s %d%s\n", op.c_str(), r, more.c_str());
    std::fflush(stdout);
  }
  void Keep(CUresult r, Kind kind, uint64_t id) {
    if (r == CUDA_SUCCESS) held_.push_back(Allocation{kind, id});
  }
  CUresult Free(const Allocation& a) {
    switch (a.kind) {
      case Kind::kPointer:
        return api_.cuMemFree_v2(a.id);
      case Kind::kAsync:
        return api_.cuMemFreeAsync(a.id, nullptr);
      case Kind::kPhysical:
        return api_.cuMemRelease(a.id);
      case Kind::kArray:
        return api_.cuArrayDestroy(reinterpret_cast<CUarray>(a.id));
      case Kind::kMipmapped:
        return api_.cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(a.id));
      case Kind::kExternal:
        return api_.cuDestroyExternalMemory(reinterpret_cast<CUexternalMemory>(a.id));
      case Kind::kImport:
        return api_.cuIpcCloseMemHandle(a.id);
    }
    return CUDA_ERROR_INVALID_VALUE;
  }
  void Nvml(const std::string& library) {
    struct Memory {
      unsigned long long total, free, used;
    };
    void* lib = dlopen(library.c_str(), RTLD_NOW);
    if (lib == nullptr) {
      std::printf("nvml load %s\n", dlerror());
      return;
    }
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto handle = reinterpret_cast<int (*)(unsigned int, void**)>(
        dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    auto memory = reinterpret_cast<int (*)(void*, Memory*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    void* dev = nullptr;
    Memory m{};
    int r = init && handle && memory ? init() : -1;
    if (r == 0) r = handle(0, &dev);
    if (r == 0) r = memory(dev, &m);
    Say("nvml", r,
        " total=" + std::to_string(m.total / kMiB) + " used=" + std::to_string(m.used / kMiB) +
            " free=" + std::to_string(m.free / kMiB));
  }

  const Api& api_;
  std::vector<Allocation> held_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: share_probe dlsym|proc|proc11|linked <step>...\n");
    return 2;
  }
  Api api;
  if (!Load(argv[1], &api)) return 2;
  std::vector<std::string> steps(argv + 2, argv + argc);
  return Probe(api).Run(steps, 0) ? 0 : 2;
}
