// libtessera-share.so: holds the processes of a fractional GPU share to the share's memory.
// Preloaded into a share's processes by the agent (LD_PRELOAD); docs/ISOLATION.md says what it
// enforces and what it cannot.
//
// The environment it reads (set by the agent, agent/assignments.h):
//   TESSERA_SHARE_MEMORY_MIB  the share's memory in MiB: one value for every device, or one
//                             per CUDA ordinal ("4096,2048"); unset or 0: not enforced
//   TESSERA_SHARE_REGION      the file the share's processes count in (share_region.h); unset:
//                             this process counts alone
//   TESSERA_GPU_UUIDS         the devices' UUIDs by CUDA ordinal, to find a share's device in
//                             NVML's queries
//
// Entry points are caught however the program reaches them: linked directly (the preloaded
// definitions come first), fetched with dlsym from libcuda.so.1 (dlsym is interposed) or through
// cuGetProcAddress (its answers are swapped for the wrappers, by the address the driver
// returns, so every version of every name is covered). Every failure inside returns a CUDA error
// to the caller; nothing here aborts the process.
//
// One file of about 1,100 lines, in sections (`// ----`): the real dlsym, the share's
// configuration, the real driver, what this process holds, the compute limiter, the CUDA entry
// points, NVML's memory queries and dlsym. Every entry point uses the same file-local state
// (the configuration, the driver's table, the held allocations, the limiter's gate), which
// must stay invisible outside the library: it loads into any program, without the C++ runtime,
// and a header shared by several files of it would only widen what must be kept hidden.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "interpose/cuda_abi.h"
#include "interpose/share_region.h"

#define TESSERA_EXPORT extern "C" __attribute__((visibility("default")))

#pragma GCC visibility push(default)
extern "C" {
TESSERA_CUDA_WRAPPED(TESSERA_CUDA_DECLARE)
}
#pragma GCC visibility pop

namespace tessera::interpose {
namespace {

// ---- The real dlsym ----------------------------------------------------------------------------

using DlsymFn = void* (*)(void*, const char*);
std::atomic<DlsymFn> real_dlsym{nullptr};

DlsymFn RealDlsym() {
  DlsymFn f = real_dlsym.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  // glibc 2.34 moved dlsym into libc under a new version; older ones have only the first.
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"}) {
    f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", version));
    if (f != nullptr) break;
  }
  real_dlsym.store(f, std::memory_order_release);
  return f;
}

// ---- The share's configuration ---------------------------------------------------------------

struct Config {
  int limit_count = 0;                // 0: nothing enforced; 1: limits[0] on every ordinal
  uint64_t limits[kMaxDevices] = {};  // bytes by CUDA ordinal (UINT64_MAX: none there)
  int uuid_count = 0;
  char uuids[kMaxDevices][96] = {};     // by CUDA ordinal
  int percent_count = 0;                // 1: percents[0] on every ordinal
  uint32_t percents[kMaxDevices] = {};  // compute percent by CUDA ordinal; 0: not limited
};

Config config;
pthread_once_t config_once = PTHREAD_ONCE_INIT;

// Calls `each(text, length)` for each comma-separated item of `s` (at most kMaxDevices).
template <typename Each>
int ForEachItem(const char* s, Each each) {
  int n = 0;
  if (s == nullptr) return 0;
  for (const char* p = s; n < kMaxDevices; ++n) {
    const char* comma = std::strchr(p, ',');
    const size_t length = comma != nullptr ? static_cast<size_t>(comma - p) : std::strlen(p);
    each(n, p, length);
    if (comma == nullptr) return n + 1;
    p = comma + 1;
  }
  return n;
}

void ReadConfig() {
  bool any = false;
  config.limit_count =
      ForEachItem(std::getenv("TESSERA_SHARE_MEMORY_MIB"), [&](int i, const char* p, size_t n) {
        uint64_t mib = 0;
        bool ok = n > 0 && n < 12;
        for (size_t k = 0; ok && k < n; ++k) {
          ok = p[k] >= '0' && p[k] <= '9';
          mib = mib * 10 + static_cast<uint64_t>(p[k] - '0');
        }
        ok = ok && mib > 0;
        config.limits[i] = ok ? mib << 20 : UINT64_MAX;
        any = any || ok;
      });
  if (!any) config.limit_count = 0;
  config.percent_count = ForEachItem(std::getenv("TESSERA_SHARE_COMPUTE_PERCENT"),
                                     [&](int i, const char* p, size_t n) {
                                       uint32_t percent = 0;
                                       bool ok = n > 0 && n < 4;
                                       for (size_t k = 0; ok && k < n; ++k) {
                                         ok = p[k] >= '0' && p[k] <= '9';
                                         percent = percent * 10 + static_cast<uint32_t>(p[k] - '0');
                                       }
                                       config.percents[i] = ok && percent < 100 ? percent : 0;
                                     });
  config.uuid_count =
      ForEachItem(std::getenv("TESSERA_GPU_UUIDS"), [&](int i, const char* p, size_t n) {
        const size_t k = n < sizeof config.uuids[i] - 1 ? n : sizeof config.uuids[i] - 1;
        std::memcpy(config.uuids[i], p, k);
        config.uuids[i][k] = '\0';
      });
}

const Config& Conf() {
  pthread_once(&config_once, &ReadConfig);
  return config;
}

bool Enforced() { return Conf().limit_count > 0; }

// The share's memory on CUDA ordinal `device` (UINT64_MAX: no limit there).
uint64_t Limit(int device) {
  const Config& c = Conf();
  if (c.limit_count == 0) return UINT64_MAX;
  if (c.limit_count == 1) return c.limits[0];
  return device >= 0 && device < c.limit_count ? c.limits[device] : UINT64_MAX;
}

// The share's compute percent on CUDA ordinal `device`; 0: not limited there.
uint32_t Percent(int device) {
  const Config& c = Conf();
  if (c.percent_count == 1) return c.percents[0];
  return device >= 0 && device < c.percent_count ? c.percents[device] : 0;
}

void Warn(const char* what, const char* then) {
  char line[512];
  const int n = std::snprintf(line, sizeof line, "tessera-share: %s; %s\n", what, then);
  if (n > 0) {
    ssize_t ignored = ::write(2, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
    (void)ignored;
  }
}

ShareRegion region;
bool region_open = false;
pthread_once_t region_once = PTHREAD_ONCE_INIT;

void OpenRegion() {
  char error[320];
  const char* path = std::getenv("TESSERA_SHARE_REGION");
  if (path != nullptr && *path != '\0') {
    region_open = region.Open(path, error, sizeof error);
    if (!region_open) Warn(error, "counting this process alone");
  }
  if (!region_open) {
    region_open = region.Open(nullptr, error, sizeof error);
    if (!region_open) Warn(error, "memory is not counted");
  }
}

// The count: the agent's region file, or one of this process alone when it names none or the
// file cannot be opened. nullptr only when neither can be made (nothing is then counted).
ShareRegion* Count() {
  pthread_once(&region_once, &OpenRegion);
  return region_open ? &region : nullptr;
}

// ---- The real driver ---------------------------------------------------------------------------

struct Cuda {
#define TESSERA_REAL(name, params, args) CUresult(*name) params = nullptr;
  TESSERA_CUDA_WRAPPED(TESSERA_REAL)
  TESSERA_CUDA_CALLED(TESSERA_REAL)
#undef TESSERA_REAL
};

// A pthread mutex held for a scope.
class Locked {
 public:
  explicit Locked(pthread_mutex_t* mu) : mu_(mu) { pthread_mutex_lock(mu_); }
  ~Locked() { pthread_mutex_unlock(mu_); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  pthread_mutex_t* mu_;
};

pthread_mutex_t cuda_mu = PTHREAD_MUTEX_INITIALIZER;
Cuda cuda_table;
std::atomic<const Cuda*> cuda{nullptr};
// Set while this thread loads the driver: the driver's own lookups then go to it unchanged.
thread_local bool loading_cuda = false;

// The driver's own entry points, from the library at `path` (the one the program opened) or
// libcuda.so.1. nullptr when no driver can be loaded.
const Cuda* Real(const char* path = nullptr) {
  if (const Cuda* c = cuda.load(std::memory_order_acquire)) return c;
  if (loading_cuda) return nullptr;
  Locked lock(&cuda_mu);
  if (const Cuda* c = cuda.load(std::memory_order_acquire)) return c;
  loading_cuda = true;
  struct Done {
    ~Done() { loading_cuda = false; }
  } done;
  void* lib = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr || RealDlsym() == nullptr) return nullptr;
  Cuda* c = &cuda_table;
#define TESSERA_RESOLVE(name, params, args) \
  c->name = reinterpret_cast<decltype(c->name)>(RealDlsym()(lib, #name));
  TESSERA_CUDA_WRAPPED(TESSERA_RESOLVE)
  TESSERA_CUDA_CALLED(TESSERA_RESOLVE)
#undef TESSERA_RESOLVE
  cuda.store(c, std::memory_order_release);
  return c;
}

// The current context's device; 0 when the thread has no context (the call itself then fails
// in the driver, or is counted on the first device).
int CurrentDevice(const Cuda* c) {
  CUdevice d = 0;
  if (c->cuCtxGetDevice == nullptr || c->cuCtxGetDevice(&d) != CUDA_SUCCESS) return 0;
  return d;
}

// ---- What this process holds -------------------------------------------------------------------

enum class Kind { kPointer, kArray, kMipmapped, kPhysical, kExternal };

struct Held {
  int device = 0;
  uint64_t bytes = 0;  // 0: not counted (an IPC import of the share's own memory)
};

// What this process holds, by kind and id: an open-addressing table (linear probing, grown
// with malloc) under one mutex.
struct Holding {
  uint64_t id;
  Held held;
  uint8_t kind;
  uint8_t state;  // kEmpty, kLive or kGone (a tombstone)
};
enum : uint8_t { kEmpty = 0, kLive = 1, kGone = 2 };

pthread_mutex_t holdings_mu = PTHREAD_MUTEX_INITIALIZER;
Holding* holdings = nullptr;
size_t holdings_size = 0;   // a power of two
size_t holdings_taken = 0;  // live entries and tombstones

size_t Home(uint64_t id, uint8_t kind) {
  return static_cast<size_t>(((id ^ kind) * 0x9E3779B97F4A7C15ULL) >> 17);
}

// Rebuilds the table with room for twice the live entries; false when memory is short.
bool Grow() {
  size_t live = 0;
  for (size_t i = 0; i < holdings_size; ++i) live += holdings[i].state == kLive;
  size_t size = 64;
  while (size < 4 * (live + 1)) size *= 2;
  auto* table = static_cast<Holding*>(std::calloc(size, sizeof(Holding)));
  if (table == nullptr) return false;
  for (size_t i = 0; i < holdings_size; ++i) {
    if (holdings[i].state != kLive) continue;
    size_t at = Home(holdings[i].id, holdings[i].kind) & (size - 1);
    while (table[at].state != kEmpty) at = (at + 1) & (size - 1);
    table[at] = holdings[i];
  }
  std::free(holdings);
  holdings = table;
  holdings_size = size;
  holdings_taken = live;
  return true;
}

// Records `id`; an id the table cannot hold stays counted until the process ends.
void Remember(Kind kind, uint64_t id, int device, uint64_t bytes) {
  const auto k = static_cast<uint8_t>(kind);
  Locked lock(&holdings_mu);
  if ((holdings_taken + 1) * 2 > holdings_size && !Grow()) return;
  size_t at = Home(id, k) & (holdings_size - 1);
  size_t free_at = SIZE_MAX;
  while (holdings[at].state != kEmpty) {
    if (holdings[at].state == kLive && holdings[at].id == id && holdings[at].kind == k) {
      holdings[at].held = Held{device, bytes};
      return;
    }
    if (holdings[at].state == kGone && free_at == SIZE_MAX) free_at = at;
    at = (at + 1) & (holdings_size - 1);
  }
  if (free_at == SIZE_MAX) {
    free_at = at;
    ++holdings_taken;
  }
  holdings[free_at] = Holding{id, Held{device, bytes}, k, kLive};
}

// Forgets `id` and gives its bytes back to the count.
void Forget(Kind kind, uint64_t id) {
  const auto k = static_cast<uint8_t>(kind);
  Held held;
  {
    Locked lock(&holdings_mu);
    if (holdings_size == 0) return;
    size_t at = Home(id, k) & (holdings_size - 1);
    while (holdings[at].state != kEmpty &&
           !(holdings[at].state == kLive && holdings[at].id == id && holdings[at].kind == k)) {
      at = (at + 1) & (holdings_size - 1);
    }
    if (holdings[at].state != kLive) return;
    held = holdings[at].held;
    holdings[at].state = kGone;
  }
  if (held.bytes > 0 && Count() != nullptr) Count()->Release(held.device, held.bytes);
}

bool Reserve(int device, uint64_t bytes) {
  return Count() == nullptr || Count()->Reserve(device, bytes, Limit(device));
}
void Release(int device, uint64_t bytes) {
  if (Count() != nullptr) Count()->Release(device, bytes);
}

// What identifies an allocation: its address or handle, as a number.
template <typename T>
uint64_t IdOf(T id) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uint64_t>(id);
  } else {
    return static_cast<uint64_t>(id);
  }
}

// Runs `call` with `bytes` reserved on `device` first: CUDA_ERROR_OUT_OF_MEMORY without calling
// when they would pass the share; the reservation is given back when the call fails, and kept
// under `kind`/`id()` when it succeeds.
template <typename Call, typename Id>
CUresult Counted(Kind kind, int device, uint64_t bytes, Call call, Id id) {
  if (!Reserve(device, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult r = call();
  if (r != CUDA_SUCCESS) {
    Release(device, bytes);
  } else {
    Remember(kind, id(), device, bytes);
  }
  return r;
}

// Bytes of one element of an array format with `channels` channels.
uint64_t ElementBytes(int format, unsigned int channels) {
  uint64_t size = 4;
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      size = 1;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      size = 2;
      break;
    default:
      break;
  }
  return size * (channels == 0 ? 1 : channels);
}

uint64_t ArrayBytes(size_t w, size_t h, size_t d, int format, unsigned int channels) {
  const uint64_t one = ElementBytes(format, channels);
  const uint64_t cells =
      static_cast<uint64_t>(w == 0 ? 1 : w) * (h == 0 ? 1 : h) * (d == 0 ? 1 : d);
  return cells > UINT64_MAX / one ? UINT64_MAX : cells * one;
}

uint64_t MipmappedBytes(const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned int levels) {
  uint64_t total = 0;
  size_t w = desc->Width, h = desc->Height, d = desc->Depth;
  for (unsigned int i = 0; i < (levels == 0 ? 1 : levels); ++i) {
    const uint64_t level = ArrayBytes(w, h, d, desc->Format, desc->NumChannels);
    total = level > UINT64_MAX - total ? UINT64_MAX : total + level;
    w = w > 1 ? w / 2 : w;
    h = h > 1 ? h / 2 : h;
    d = d > 1 ? d / 2 : d;
  }
  return total;
}

// The driver's pitch alignment for cuMemAllocPitch on current GPUs; the real pitch is read back.
constexpr uint64_t kPitchAlign = 512;

}  // namespace

}  // namespace tessera::interpose

using namespace tessera::interpose;  // NOLINT: the exported C entry points below

#define TESSERA_NO_DRIVER(c) \
  if ((c) == nullptr) return CUDA_ERROR_NOT_INITIALIZED

// ---- The compute limiter ---------------------------------------------------------------------
//
// A launch on a device where the share has a compute percent passes the share's gate
// (ShareRegion::ChargeLaunch), sleeping while the share is in debt: no busy waiting. One
// process of the share (ShareRegion::TakeSampler) looks every 50 ms for NVML's per-process
// utilization samples of the share's processes, and corrects the gate with the GPU time they
// say was used whenever one comes.

namespace tessera::interpose {
namespace {

constexpr uint64_t kSamplePeriodNs = 50'000'000;

uint64_t MonotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t WallUs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000ULL + static_cast<uint64_t>(t.tv_nsec) / 1000;
}

void SleepNs(uint64_t ns) {
  timespec t{static_cast<time_t>(ns / 1'000'000'000ULL), static_cast<long>(ns % 1'000'000'000ULL)};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// NVML's per-process utilization sample (nvml.h, R450 and later).
struct ProcessSample {
  unsigned int pid;
  unsigned long long timeStamp;  // microseconds, CLOCK_REALTIME
  unsigned int smUtil;           // percent of the sample's period
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct Sampler {
  int (*get_samples)(void*, ProcessSample*, unsigned int*, unsigned long long) = nullptr;
  void* handles[kMaxDevices] = {};
  unsigned long long last_seen[kMaxDevices] = {};
  unsigned long long period_us[kMaxDevices] = {};  // NVML's sampling period, as seen
  // The last sample's time of each of the share's processes, per device.
  int32_t pids[kMaxDevices][kMaxSlots] = {};
  unsigned long long pid_seen[kMaxDevices][kMaxSlots] = {};
};

// NVML's handle of each limited device; false (with the reason) when NVML cannot be used.
bool OpenNvml(Sampler* s, const char** why) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr || RealDlsym() == nullptr) {
    *why = "libnvidia-ml.so.1 cannot be loaded";
    return false;
  }
  auto init = reinterpret_cast<int (*)()>(RealDlsym()(lib, "nvmlInit_v2"));
  auto by_uuid =
      reinterpret_cast<int (*)(const char*, void**)>(RealDlsym()(lib, "nvmlDeviceGetHandleByUUID"));
  auto by_index = reinterpret_cast<int (*)(unsigned int, void**)>(
      RealDlsym()(lib, "nvmlDeviceGetHandleByIndex_v2"));
  s->get_samples = reinterpret_cast<decltype(s->get_samples)>(
      RealDlsym()(lib, "nvmlDeviceGetProcessUtilization"));
  if (init == nullptr || by_index == nullptr || s->get_samples == nullptr || init() != 0) {
    *why = "NVML has no per-process utilization here";
    return false;
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    if (Percent(d) == 0) continue;
    const bool named = d < Conf().uuid_count && by_uuid != nullptr;
    if ((named ? by_uuid(Conf().uuids[d], &s->handles[d])
               : by_index(static_cast<unsigned int>(d), &s->handles[d])) != 0) {
      s->handles[d] = nullptr;
    }
    s->last_seen[d] = WallUs();
  }
  return true;
}

// The GPU time (ns) the processes `pids` used on device `d` since the last call that returned
// true: each sample of theirs counts its utilization over its period. False when NVML has no
// new sample of theirs (it samples every 200 ms or so on current GPUs): nothing is known yet.
bool Measure(Sampler* s, int d, const int32_t* pids, int n, uint64_t* used) {
  *used = 0;
  if (s->handles[d] == nullptr) return false;
  ProcessSample samples[512];
  unsigned int count = 512;
  if (s->get_samples(s->handles[d], samples, &count, s->last_seen[d]) != 0) return false;
  uint64_t used_ns = 0;
  bool seen = false;
  for (unsigned int i = 0; i < count && i < 512; ++i) {
    const ProcessSample& x = samples[i];
    if (x.timeStamp <= s->last_seen[d]) continue;
    bool ours = false;
    for (int k = 0; k < n && !ours; ++k) ours = static_cast<unsigned int>(pids[k]) == x.pid;
    if (!ours) continue;
    seen = true;
    int at = -1, free_at = -1;
    for (int k = 0; k < kMaxSlots; ++k) {
      if (s->pids[d][k] == static_cast<int32_t>(x.pid) && s->pid_seen[d][k] != 0) at = k;
      if (s->pid_seen[d][k] == 0 && free_at < 0) free_at = k;
    }
    // A sample covers NVML's sampling period, learned as the shortest gap between two samples
    // of one process; an idle stretch between them has none.
    const unsigned long long since = at >= 0 ? s->pid_seen[d][at] : s->last_seen[d];
    if (x.timeStamp > since) {
      unsigned long long covered = x.timeStamp - since;
      if (at >= 0 && (s->period_us[d] == 0 || covered < s->period_us[d])) {
        s->period_us[d] = covered;
      }
      const unsigned long long period = s->period_us[d] != 0 ? s->period_us[d] : 50'000;
      if (covered > period) covered = period;
      used_ns += covered * 1000 * x.smUtil / 100;
    }
    if (at < 0) at = free_at;
    if (at >= 0) {
      s->pids[d][at] = static_cast<int32_t>(x.pid);
      s->pid_seen[d][at] = x.timeStamp;
    }
  }
  for (unsigned int i = 0; i < count && i < 512; ++i) {
    if (samples[i].timeStamp > s->last_seen[d]) s->last_seen[d] = samples[i].timeStamp;
  }
  *used = used_ns;
  return seen;
}

void* SamplerMain(void*) {
  static Sampler sampler;
  const char* why = nullptr;
  if (!OpenNvml(&sampler, &why)) {
    Warn(why, "the compute share is not measured, and not held");
    return nullptr;
  }
  while (true) {
    SleepNs(kSamplePeriodNs);
    ShareRegion* count = Count();
    if (count == nullptr || !count->TakeSampler()) continue;
    int32_t pids[kMaxSlots];
    const int n = count->Pids(pids, kMaxSlots);
    for (int d = 0; d < kMaxDevices; ++d) {
      if (Percent(d) == 0) continue;
      uint64_t used = 0;
      if (Measure(&sampler, d, pids, n, &used)) count->Correct(d, MonotonicNs(), Percent(d), used);
    }
  }
  return nullptr;
}

pthread_once_t sampler_once = PTHREAD_ONCE_INIT;

void StartSampler() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  if (pthread_create(&thread, &attr, &SamplerMain, nullptr) != 0) {
    Warn("the compute sampler cannot start", "the compute share is not held");
  }
  pthread_attr_destroy(&attr);
}

// Returns when the share may launch work on the current context's device, after sleeping while
// it is in debt there.
void Gate(const Cuda* c) {
  const int device = CurrentDevice(c);
  const uint32_t percent = Percent(device);
  if (percent == 0 || Count() == nullptr) return;
  pthread_once(&sampler_once, &StartSampler);
  uint64_t wait_ns = 0;
  while (!Count()->ChargeLaunch(device, MonotonicNs(), percent, &wait_ns)) {
    SleepNs(wait_ns < kSamplePeriodNs ? wait_ns : kSamplePeriodNs);
  }
}

}  // namespace
}  // namespace tessera::interpose

TESSERA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuMemAlloc_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced()) return c->cuMemAlloc_v2(dptr, bytesize);
  return Counted(
      Kind::kPointer, CurrentDevice(c), bytesize, [&] { return c->cuMemAlloc_v2(dptr, bytesize); },
      [&] { return static_cast<uint64_t>(*dptr); });
}

TESSERA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuMemAllocManaged == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced()) return c->cuMemAllocManaged(dptr, bytesize, flags);
  return Counted(
      Kind::kPointer, CurrentDevice(c), bytesize,
      [&] { return c->cuMemAllocManaged(dptr, bytesize, flags); },
      [&] { return static_cast<uint64_t>(*dptr); });
}

TESSERA_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                           size_t height, unsigned int element) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuMemAllocPitch_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced()) return c->cuMemAllocPitch_v2(dptr, pitch, width, height, element);
  if (dptr == nullptr || pitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int device = CurrentDevice(c);
  const uint64_t rows = height == 0 ? 1 : height;
  const uint64_t row = (static_cast<uint64_t>(width) + kPitchAlign - 1) / kPitchAlign * kPitchAlign;
  const uint64_t estimate = row > UINT64_MAX / rows ? UINT64_MAX : row * rows;
  if (!Reserve(device, estimate)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult r = c->cuMemAllocPitch_v2(dptr, pitch, width, height, element);
  if (r != CUDA_SUCCESS) {
    Release(device, estimate);
    return r;
  }
  // The driver's own pitch decides: the difference is counted, or the allocation undone.
  const uint64_t actual = static_cast<uint64_t>(*pitch) * rows;
  if (actual > estimate && !Reserve(device, actual - estimate)) {
    if (c->cuMemFree_v2 != nullptr) c->cuMemFree_v2(*dptr);
    Release(device, estimate);
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (actual < estimate) Release(device, estimate - actual);
  Remember(Kind::kPointer, *dptr, device, actual);
  return r;
}

// A free: the driver's call, then what it freed given back to the count.
#define TESSERA_FREEING(name, type, kind)                        \
  TESSERA_EXPORT CUresult name(type id) {                        \
    const Cuda* c = Real();                                      \
    TESSERA_NO_DRIVER(c);                                        \
    if (c->name == nullptr) return CUDA_ERROR_NOT_SUPPORTED;     \
    const CUresult r = c->name(id);                              \
    if (r == CUDA_SUCCESS && Enforced()) Forget(kind, IdOf(id)); \
    return r;                                                    \
  }

TESSERA_FREEING(cuMemFree_v2, CUdeviceptr, Kind::kPointer)

namespace {

template <typename Fn>
CUresult AllocAsync(Fn fn, CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (fn(c) == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced()) return fn(c)(dptr, bytesize, stream);
  return Counted(
      Kind::kPointer, CurrentDevice(c), bytesize, [&] { return fn(c)(dptr, bytesize, stream); },
      [&] { return static_cast<uint64_t>(*dptr); });
}

template <typename Fn>
CUresult AllocFromPool(Fn fn, CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                       CUstream stream) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (fn(c) == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced()) return fn(c)(dptr, bytesize, pool, stream);
  return Counted(
      Kind::kPointer, CurrentDevice(c), bytesize,
      [&] { return fn(c)(dptr, bytesize, pool, stream); },
      [&] { return static_cast<uint64_t>(*dptr); });
}

template <typename Fn>
CUresult FreeAsync(Fn fn, CUdeviceptr dptr, CUstream stream) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (fn(c) == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = fn(c)(dptr, stream);
  if (r == CUDA_SUCCESS && Enforced()) Forget(Kind::kPointer, dptr);
  return r;
}

}  // namespace

TESSERA_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  return AllocAsync([](const Cuda* c) { return c->cuMemAllocAsync; }, dptr, bytesize, stream);
}
TESSERA_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  return AllocAsync([](const Cuda* c) { return c->cuMemAllocAsync_ptsz; }, dptr, bytesize, stream);
}
TESSERA_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream stream) {
  return AllocFromPool([](const Cuda* c) { return c->cuMemAllocFromPoolAsync; }, dptr, bytesize,
                       pool, stream);
}
TESSERA_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                     CUmemoryPool pool, CUstream stream) {
  return AllocFromPool([](const Cuda* c) { return c->cuMemAllocFromPoolAsync_ptsz; }, dptr,
                       bytesize, pool, stream);
}
TESSERA_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  return FreeAsync([](const Cuda* c) { return c->cuMemFreeAsync; }, dptr, stream);
}
TESSERA_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return FreeAsync([](const Cuda* c) { return c->cuMemFreeAsync_ptsz; }, dptr, stream);
}

TESSERA_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                    const CUmemAllocationProp* prop, unsigned long long flags) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuMemCreate == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  // Only memory on a device counts; host and host-NUMA locations are the host's.
  if (!Enforced() || prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return c->cuMemCreate(handle, size, prop, flags);
  }
  return Counted(
      Kind::kPhysical, prop->location.id, size,
      [&] { return c->cuMemCreate(handle, size, prop, flags); },
      [&] { return static_cast<uint64_t>(*handle); });
}

TESSERA_FREEING(cuMemRelease, CUmemGenericAllocationHandle, Kind::kPhysical)

TESSERA_EXPORT CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuArrayCreate_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced() || desc == nullptr) return c->cuArrayCreate_v2(array, desc);
  return Counted(
      Kind::kArray, CurrentDevice(c),
      ArrayBytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels),
      [&] { return c->cuArrayCreate_v2(array, desc); },
      [&] { return reinterpret_cast<uint64_t>(*array); });
}

TESSERA_EXPORT CUresult cuArray3DCreate_v2(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuArray3DCreate_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced() || desc == nullptr) return c->cuArray3DCreate_v2(array, desc);
  return Counted(
      Kind::kArray, CurrentDevice(c),
      ArrayBytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels),
      [&] { return c->cuArray3DCreate_v2(array, desc); },
      [&] { return reinterpret_cast<uint64_t>(*array); });
}

TESSERA_FREEING(cuArrayDestroy, CUarray, Kind::kArray)

TESSERA_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* array,
                                               const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                               unsigned int levels) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuMipmappedArrayCreate == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced() || desc == nullptr) return c->cuMipmappedArrayCreate(array, desc, levels);
  return Counted(
      Kind::kMipmapped, CurrentDevice(c), MipmappedBytes(desc, levels),
      [&] { return c->cuMipmappedArrayCreate(array, desc, levels); },
      [&] { return reinterpret_cast<uint64_t>(*array); });
}

TESSERA_FREEING(cuMipmappedArrayDestroy, CUmipmappedArray, Kind::kMipmapped)

TESSERA_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuIpcGetMemHandle == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = c->cuIpcGetMemHandle(handle, dptr);
  // Memory the share exported is already counted: its own processes import it for nothing.
  if (r == CUDA_SUCCESS && Enforced() && Count() != nullptr) Count()->AddExport(handle->reserved);
  return r;
}

namespace {

// An import's size is known only once it is mapped: it is counted then, and closed again when
// it would pass the share.
template <typename Fn>
CUresult OpenIpc(Fn fn, CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int flags) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (fn(c) == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = fn(c)(dptr, handle, flags);
  if (r != CUDA_SUCCESS || !Enforced() || dptr == nullptr) return r;
  const int device = CurrentDevice(c);
  if (Count() != nullptr && Count()->IsExport(handle.reserved)) {
    Remember(Kind::kPointer, *dptr, device, 0);
    return r;
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  if (c->cuMemGetAddressRange_v2 == nullptr ||
      c->cuMemGetAddressRange_v2(&base, &size, *dptr) != CUDA_SUCCESS || !Reserve(device, size)) {
    if (c->cuIpcCloseMemHandle != nullptr) c->cuIpcCloseMemHandle(*dptr);
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Remember(Kind::kPointer, *dptr, device, size);
  return r;
}

}  // namespace

TESSERA_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* dptr, CUipcMemHandle handle,
                                           unsigned int flags) {
  return OpenIpc([](const Cuda* c) { return c->cuIpcOpenMemHandle; }, dptr, handle, flags);
}
TESSERA_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* dptr, CUipcMemHandle handle,
                                              unsigned int flags) {
  return OpenIpc([](const Cuda* c) { return c->cuIpcOpenMemHandle_v2; }, dptr, handle, flags);
}

TESSERA_FREEING(cuIpcCloseMemHandle, CUdeviceptr, Kind::kPointer)

TESSERA_EXPORT CUresult cuImportExternalMemory(CUexternalMemory* mem,
                                               const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuImportExternalMemory == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (!Enforced() || desc == nullptr) return c->cuImportExternalMemory(mem, desc);
  return Counted(
      Kind::kExternal, CurrentDevice(c), desc->size,
      [&] { return c->cuImportExternalMemory(mem, desc); },
      [&] { return reinterpret_cast<uint64_t>(*mem); });
}

TESSERA_FREEING(cuDestroyExternalMemory, CUexternalMemory, Kind::kExternal)

TESSERA_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuMemGetInfo_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = c->cuMemGetInfo_v2(free, total);
  if (r != CUDA_SUCCESS || !Enforced() || free == nullptr || total == nullptr) return r;
  const int device = CurrentDevice(c);
  const uint64_t limit = Limit(device);
  if (limit == UINT64_MAX) return r;
  const uint64_t used = Count() != nullptr ? Count()->Used(device) : 0;
  if (*total > limit) *total = limit;
  const uint64_t left = used < *total ? *total - used : 0;
  if (*free > left) *free = left;
  return r;
}

TESSERA_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuDeviceTotalMem_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = c->cuDeviceTotalMem_v2(bytes, dev);
  if (r == CUDA_SUCCESS && bytes != nullptr && *bytes > Limit(dev)) *bytes = Limit(dev);
  return r;
}

#define TESSERA_GATED(name, params, args)                    \
  TESSERA_EXPORT CUresult name params {                      \
    const Cuda* c = Real();                                  \
    TESSERA_NO_DRIVER(c);                                    \
    if (c->name == nullptr) return CUDA_ERROR_NOT_SUPPORTED; \
    Gate(c);                                                 \
    return c->name args;                                     \
  }
TESSERA_GATED(cuLaunchKernel,
              (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
               unsigned int by, unsigned int bz, unsigned int shared, CUstream stream,
               void** params, void** extra),
              (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra))
TESSERA_GATED(cuLaunchKernel_ptsz,
              (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
               unsigned int by, unsigned int bz, unsigned int shared, CUstream stream,
               void** params, void** extra),
              (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra))
TESSERA_GATED(cuLaunchKernelEx,
              (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
              (config, f, params, extra))
TESSERA_GATED(cuLaunchKernelEx_ptsz,
              (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
              (config, f, params, extra))
TESSERA_GATED(cuLaunchCooperativeKernel,
              (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
               unsigned int by, unsigned int bz, unsigned int shared, CUstream stream,
               void** params),
              (f, gx, gy, gz, bx, by, bz, shared, stream, params))
TESSERA_GATED(cuLaunchCooperativeKernel_ptsz,
              (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
               unsigned int by, unsigned int bz, unsigned int shared, CUstream stream,
               void** params),
              (f, gx, gy, gz, bx, by, bz, shared, stream, params))
TESSERA_GATED(cuGraphLaunch, (CUgraphExec graph, CUstream stream), (graph, stream))
TESSERA_GATED(cuGraphLaunch_ptsz, (CUgraphExec graph, CUstream stream), (graph, stream))
#undef TESSERA_GATED

namespace tessera::interpose {
namespace {

// Each wrapped entry point: its name, the wrapper and where the driver's own is kept.
struct Entry {
  const char* name;
  void* wrapper;
  size_t real_at;  // offset of the driver's pointer in Cuda
};

#define TESSERA_ENTRY(name, params, args) \
  Entry{#name, reinterpret_cast<void*>(&::name), offsetof(Cuda, name)},
const Entry kEntries[] = {TESSERA_CUDA_WRAPPED(TESSERA_ENTRY)};
#undef TESSERA_ENTRY

void* RealAt(const Cuda* c, size_t offset) {
  void* p = nullptr;
  std::memcpy(&p, reinterpret_cast<const char*>(c) + offset, sizeof p);
  return p;
}

// The wrapper of the driver's entry point at `fn`, or `fn` when it is not wrapped.
void* WrapperOf(const Cuda* c, void* fn) {
  if (fn == nullptr) return fn;
  for (const Entry& e : kEntries) {
    if (RealAt(c, e.real_at) == fn) return e.wrapper;
  }
  return fn;
}

}  // namespace
}  // namespace tessera::interpose

TESSERA_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version,
                                         cuuint64_t flags) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuGetProcAddress == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = c->cuGetProcAddress(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr) *pfn = WrapperOf(c, *pfn);
  return r;
}

TESSERA_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* status) {
  const Cuda* c = Real();
  TESSERA_NO_DRIVER(c);
  if (c->cuGetProcAddress_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = c->cuGetProcAddress_v2(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr) *pfn = WrapperOf(c, *pfn);
  return r;
}

// ---- NVML's memory queries ---------------------------------------------------------------------

extern "C" {
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} tessera_nvmlMemory_t;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} tessera_nvmlMemory_v2_t;
}

namespace tessera::interpose {
namespace {

enum : int { kNvmlSuccess = 0, kNvmlUninitialized = 1 };

struct Nvml {
  nvmlReturn_t (*memory)(nvmlDevice_t, tessera_nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*memory_v2)(nvmlDevice_t, tessera_nvmlMemory_v2_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
};

pthread_mutex_t nvml_mu = PTHREAD_MUTEX_INITIALIZER;
Nvml nvml;

// NVML's own functions, from the library that holds `found` (what dlsym found there) or, for a
// program linked to NVML, the next definitions after these.
Nvml NvmlFrom(void* found) {
  Locked lock(&nvml_mu);
  if (nvml.uuid != nullptr) return nvml;
  void* lib = RTLD_NEXT;
  Dl_info info{};
  if (found != nullptr && dladdr(found, &info) != 0 && info.dli_fname != nullptr) {
    if (void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD)) lib = h;
  }
  if (RealDlsym() == nullptr) return nvml;
  nvml.memory =
      reinterpret_cast<decltype(nvml.memory)>(RealDlsym()(lib, "nvmlDeviceGetMemoryInfo"));
  nvml.memory_v2 =
      reinterpret_cast<decltype(nvml.memory_v2)>(RealDlsym()(lib, "nvmlDeviceGetMemoryInfo_v2"));
  nvml.uuid = reinterpret_cast<decltype(nvml.uuid)>(RealDlsym()(lib, "nvmlDeviceGetUUID"));
  return nvml;
}

// The CUDA ordinal of NVML's `device` among the share's devices; -1 when it is not one of them.
int OrdinalOf(const Nvml& n, nvmlDevice_t device) {
  if (Conf().uuid_count == 0) return 0;
  char uuid[96] = {};
  if (n.uuid == nullptr || n.uuid(device, uuid, sizeof uuid) != kNvmlSuccess) return -1;
  for (int i = 0; i < Conf().uuid_count; ++i) {
    if (std::strcmp(Conf().uuids[i], uuid) == 0) return i;
  }
  return -1;
}

// total, free and used as the share sees them: its size, and what its processes hold.
void AsShare(int ordinal, unsigned long long* total, unsigned long long* free,
             unsigned long long* used) {
  if (ordinal < 0 || !Enforced() || Limit(ordinal) == UINT64_MAX) return;
  const uint64_t limit = Limit(ordinal);
  const uint64_t held = Count() != nullptr ? Count()->Used(ordinal) : 0;
  if (*total > limit) *total = limit;
  *used = held < *total ? held : *total;
  *free = *total - *used;
}

}  // namespace
}  // namespace tessera::interpose

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                    tessera_nvmlMemory_t* memory) {
  const Nvml n = NvmlFrom(nullptr);
  if (n.memory == nullptr) return kNvmlUninitialized;
  const nvmlReturn_t r = n.memory(device, memory);
  if (r == kNvmlSuccess && memory != nullptr) {
    AsShare(OrdinalOf(n, device), &memory->total, &memory->free, &memory->used);
  }
  return r;
}

TESSERA_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                       tessera_nvmlMemory_v2_t* memory) {
  const Nvml n = NvmlFrom(nullptr);
  if (n.memory_v2 == nullptr) return kNvmlUninitialized;
  const nvmlReturn_t r = n.memory_v2(device, memory);
  if (r == kNvmlSuccess && memory != nullptr) {
    AsShare(OrdinalOf(n, device), &memory->total, &memory->free, &memory->used);
  }
  return r;
}

// ---- dlsym -------------------------------------------------------------------------------------

namespace tessera::interpose {
namespace {

// What dlsym gives the program for `name`, which the real dlsym found at `found`: the wrapper
// when the name is wrapped and `found` is the driver's (or NVML's), else `found`.
void* Interposed(void* found, const char* name) {
  if (found == nullptr || name == nullptr || (name[0] != 'c' && name[0] != 'n')) return found;
  Dl_info mine{}, theirs{};
  if (dladdr(reinterpret_cast<void*>(&Interposed), &mine) == 0 || dladdr(found, &theirs) == 0 ||
      mine.dli_fbase == theirs.dli_fbase) {
    return found;  // unknown, or already this library's
  }
  if (std::strncmp(name, "nvmlDeviceGetMemoryInfo", 23) == 0) {
    NvmlFrom(found);
    if (std::strcmp(name, "nvmlDeviceGetMemoryInfo") == 0) {
      return reinterpret_cast<void*>(&::nvmlDeviceGetMemoryInfo);
    }
    if (std::strcmp(name, "nvmlDeviceGetMemoryInfo_v2") == 0) {
      return reinterpret_cast<void*>(&::nvmlDeviceGetMemoryInfo_v2);
    }
    return found;
  }
  if (name[0] != 'c' || name[1] != 'u') return found;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, name) != 0) continue;
    const Cuda* c = Real(theirs.dli_fname);
    return c != nullptr && RealAt(c, e.real_at) == found ? e.wrapper : found;
  }
  return found;
}

}  // namespace
}  // namespace tessera::interpose

TESSERA_EXPORT void* dlsym(void* handle, const char* name) {
  DlsymFn real = RealDlsym();
  if (real == nullptr) return nullptr;
  // RTLD_NEXT is resolved from the caller's address: handed on as a sibling call, so that the
  // real dlsym sees the caller's, not this library's.
  if (handle == RTLD_NEXT) return real(handle, name);
  return Interposed(real(handle, name), name);
}

namespace tessera::interpose {
namespace {

// In a child after fork: locks held by the parent's other threads are the child's fresh ones.
void ChildAfterFork() {
  pthread_mutex_init(&holdings_mu, nullptr);
  sampler_once = PTHREAD_ONCE_INIT;  // the parent's sampler thread is not the child's
  if (Enforced() && Count() != nullptr) Count()->AfterForkInChild();
}

__attribute__((constructor)) void Start() {
  RealDlsym();
  pthread_atfork(nullptr, nullptr, &ChildAfterFork);
}

}  // namespace
}  // namespace tessera::interpose
