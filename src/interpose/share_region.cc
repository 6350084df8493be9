#include "interpose/share_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tessera::interpose {

namespace {

constexpr uint64_t kMagic = 0x5453524547494f4eULL;  // "TSREGION"
constexpr uint32_t kVersion = 4;

// Where each slot's liveness lock lies: one byte per slot past byte 0 (the region's lock).
// Record locks are advisory, so these bytes may overlap the data.
constexpr off_t kSlotLockBase = 1;

enum : uint32_t { kFree = 0, kTaken = 1 };

}  // namespace

struct RegionSlot {
  uint32_t state;
  int32_t pid;       // as the process sees itself; liveness is the lock
  uint64_t pid_ns;   // the inode of its pid namespace (/proc/self/ns/pid)
  int32_t host_pid;  // its pid on the host, as the agent found it (MapHostPids); 0: not known
  int32_t reserved;
  uint64_t used[kMaxDevices];
};

struct RegionExport {
  uint32_t state;
  int32_t slot;
  unsigned char handle[64];
};

// The compute gate of one device (ShareRegion::ChargeLaunch).
struct RegionCompute {
  int64_t allowance_ns;      // GPU time the share may still start work for; negative: in debt
  uint64_t stamp_ns;         // when the allowance last accrued (CLOCK_MONOTONIC)
  int64_t charged_ns;        // estimated cost charged since the sampler's last correction
  uint64_t launches;         // launches since then
  int64_t cost_ns;           // the estimated GPU time of one launch
  uint64_t measured_sum_ns;  // measured use, decayed (the estimate's numerator)
  double launch_sum;         // launches, decayed alike (its denominator)
};

struct RegionLayout {
  uint64_t magic;
  uint32_t version;
  int32_t sampler_slot;  // the slot whose process measures the share's use; -1: none
  RegionSlot slots[kMaxSlots];
  RegionExport exports[kMaxExports];
  RegionCompute compute[kMaxDevices];
};

int CountedDevice(int device) {
  return device < 0 ? 0 : device >= kMaxDevices ? kMaxDevices - 1 : device;
}

namespace {

// A write record lock on one byte; `wait`: block until it is granted.
bool LockByte(int fd, off_t at, bool wait) {
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = at;
  l.l_len = 1;
  while (fcntl(fd, wait ? F_SETLKW : F_SETLK, &l) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

void UnlockByte(int fd, off_t at) {
  struct flock l {};
  l.l_type = F_UNLCK;
  l.l_whence = SEEK_SET;
  l.l_start = at;
  l.l_len = 1;
  fcntl(fd, F_SETLK, &l);
}

uint64_t Load(const uint64_t& v) { return __atomic_load_n(&v, __ATOMIC_ACQUIRE); }
void Store(uint64_t& v, uint64_t x) { __atomic_store_n(&v, x, __ATOMIC_RELEASE); }

}  // namespace

bool ShareRegion::Open(const char* path, char* error, size_t size) {
  const int fd = path != nullptr ? ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)
                                 : ::memfd_create("tessera-share", MFD_CLOEXEC);
  const char* name = path != nullptr ? path : "a private region";
  if (fd < 0) {
    std::snprintf(error, size, "cannot open %s: %s", name, std::strerror(errno));
    return false;
  }
  // Sized and stamped under the region's lock, so that two first processes agree.
  if (!LockByte(fd, 0, true)) {
    std::snprintf(error, size, "cannot lock %s: %s", name, std::strerror(errno));
    ::close(fd);
    return false;
  }
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0;
  if (ok && st.st_size < static_cast<off_t>(sizeof(RegionLayout))) {
    ok = ::ftruncate(fd, sizeof(RegionLayout)) == 0;
  }
  void* at = ok ? ::mmap(nullptr, sizeof(RegionLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  if (at == MAP_FAILED) {
    std::snprintf(error, size, "cannot map %s: %s", name, std::strerror(errno));
    UnlockByte(fd, 0);
    ::close(fd);
    return false;
  }
  auto* layout = static_cast<RegionLayout*>(at);
  if (layout->magic != kMagic || layout->version != kVersion) {
    std::memset(layout, 0, sizeof(RegionLayout));
    layout->version = kVersion;
    layout->sampler_slot = -1;
    __atomic_store_n(&layout->magic, kMagic, __ATOMIC_RELEASE);
  }
  UnlockByte(fd, 0);
  fd_ = fd;
  layout_ = layout;
  return true;
}

void ShareRegion::Lock() {
  pthread_mutex_lock(&mu_);
  LockByte(fd_, 0, true);
}

void ShareRegion::Unlock() {
  UnlockByte(fd_, 0);
  pthread_mutex_unlock(&mu_);
}

uint64_t ShareRegion::Total(int device) const {
  uint64_t total = 0;
  for (const RegionSlot& s : layout_->slots) {
    if (s.state == kTaken) total += Load(s.used[device]);
  }
  return total;
}

bool ShareRegion::SlotAlive(int slot) const {
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_start = kSlotLockBase + slot;
  l.l_len = 1;
  if (fcntl(fd_, F_GETLK, &l) != 0) return true;  // unknown: keep its count
  return l.l_type != F_UNLCK;
}

void ShareRegion::ReapDead() {
  for (int i = 0; i < kMaxSlots; ++i) {
    RegionSlot& s = layout_->slots[i];
    if (i == slot_ || s.state != kTaken || SlotAlive(i)) continue;
    for (int e = 0; e < kMaxExports; ++e) {
      if (layout_->exports[e].state == kTaken && layout_->exports[e].slot == i) {
        layout_->exports[e].state = kFree;
      }
    }
    for (uint64_t& u : s.used) Store(u, 0);
    s.state = kFree;
    if (layout_->sampler_slot == i) layout_->sampler_slot = -1;
  }
}

int ShareRegion::OwnSlot() {
  if (slot_ >= 0) return slot_;
  ReapDead();
  for (int i = 0; i < kMaxSlots; ++i) {
    RegionSlot& s = layout_->slots[i];
    if (s.state != kFree) continue;
    if (!LockByte(fd_, kSlotLockBase + i, false)) continue;
    for (uint64_t& u : s.used) Store(u, 0);
    s.pid = static_cast<int32_t>(::getpid());
    struct stat ns {};
    s.pid_ns = ::stat("/proc/self/ns/pid", &ns) == 0 ? ns.st_ino : 0;
    s.host_pid = 0;
    s.state = kTaken;
    slot_ = i;
    return i;
  }
  return -1;
}

bool ShareRegion::Reserve(int device, uint64_t bytes, uint64_t limit) {
  const int d = CountedDevice(device);
  Lock();
  ReapDead();
  const int own = OwnSlot();
  const uint64_t total = Total(d);
  const bool fits = own >= 0 && bytes <= limit && total <= limit - bytes;
  if (fits) {
    uint64_t& mine = layout_->slots[own].used[d];
    Store(mine, Load(mine) + bytes);
  }
  Unlock();
  return fits;
}

void ShareRegion::Release(int device, uint64_t bytes) {
  const int d = CountedDevice(device);
  Lock();
  if (slot_ >= 0) {
    uint64_t& mine = layout_->slots[slot_].used[d];
    const uint64_t now = Load(mine);
    Store(mine, now > bytes ? now - bytes : 0);
  }
  Unlock();
}

uint64_t ShareRegion::Used(int device) {
  const int d = CountedDevice(device);
  Lock();
  ReapDead();
  const uint64_t total = Total(d);
  Unlock();
  return total;
}

void ShareRegion::AddExport(const void* handle) {
  Lock();
  const int own = OwnSlot();
  bool known = false;
  int free_at = -1;
  for (int e = 0; e < kMaxExports; ++e) {
    RegionExport& x = layout_->exports[e];
    if (x.state == kTaken && std::memcmp(x.handle, handle, sizeof x.handle) == 0) known = true;
    if (x.state == kFree && free_at < 0) free_at = e;
  }
  if (own >= 0 && !known && free_at >= 0) {
    RegionExport& x = layout_->exports[free_at];
    std::memcpy(x.handle, handle, sizeof x.handle);
    x.slot = own;
    x.state = kTaken;
  }
  Unlock();
}

bool ShareRegion::IsExport(const void* handle) {
  Lock();
  ReapDead();
  bool known = false;
  for (const RegionExport& x : layout_->exports) {
    if (x.state == kTaken && std::memcmp(x.handle, handle, sizeof x.handle) == 0) known = true;
  }
  Unlock();
  return known;
}

namespace {

// The allowance a share may bank while idle: 500 ms of its percentage (NVML measures every
// 200 ms or so, and estimates stand until then).
int64_t BurstNs(uint32_t percent) { return static_cast<int64_t>(percent) * 5'000'000; }

// Adds what `percent` of the time since the last accrual buys, up to the burst. Estimates
// charged and not yet corrected will come back: they do not count against the burst.
void Accrue(RegionCompute& c, uint64_t now_ns, uint32_t percent) {
  if (c.stamp_ns == 0 || now_ns < c.stamp_ns) c.stamp_ns = now_ns;
  const uint64_t elapsed = now_ns - c.stamp_ns;
  c.stamp_ns = now_ns;
  const int64_t gained = static_cast<int64_t>(elapsed / 100 * percent);
  const int64_t most = BurstNs(percent) - c.charged_ns;
  if (c.allowance_ns < most) c.allowance_ns = std::min(most, c.allowance_ns + gained);
}

}  // namespace

bool ShareRegion::ChargeLaunch(int device, uint64_t now_ns, uint32_t percent, uint64_t* wait_ns) {
  RegionCompute& c = layout_->compute[CountedDevice(device)];
  Lock();
  OwnSlot();
  Accrue(c, now_ns, percent);
  const bool go = c.allowance_ns >= 0;
  if (go) {
    c.allowance_ns -= c.cost_ns;
    c.charged_ns += c.cost_ns;
    ++c.launches;
  } else {
    // The time `percent` takes to pay the debt back.
    *wait_ns = static_cast<uint64_t>(-c.allowance_ns) * 100 / percent + 1;
  }
  Unlock();
  return go;
}

void ShareRegion::Correct(int device, uint64_t now_ns, uint32_t percent, uint64_t measured_ns) {
  RegionCompute& c = layout_->compute[CountedDevice(device)];
  Lock();
  Accrue(c, now_ns, percent);
  // What was charged by estimate is replaced by what was measured.
  c.allowance_ns += c.charged_ns - static_cast<int64_t>(measured_ns);
  // A launch's cost: measured time over launches, both summed with a decay of 5% a correction
  // (about a second at one every 50 ms), since measurements lag the launches they measure.
  c.measured_sum_ns = c.measured_sum_ns / 20 * 19 + measured_ns;
  c.launch_sum = c.launch_sum * 0.95 + static_cast<double>(c.launches);
  if (c.launch_sum >= 1) {
    c.cost_ns = static_cast<int64_t>(static_cast<double>(c.measured_sum_ns) / c.launch_sum);
  }
  c.charged_ns = 0;
  c.launches = 0;
  Unlock();
}

bool ShareRegion::TakeSampler() {
  Lock();
  ReapDead();
  const int own = OwnSlot();
  if (own >= 0 && layout_->sampler_slot < 0) layout_->sampler_slot = own;
  const bool mine = own >= 0 && layout_->sampler_slot == own;
  Unlock();
  return mine;
}

int ShareRegion::Pids(int32_t* out, int max) {
  Lock();
  ReapDead();
  int n = 0;
  for (const RegionSlot& s : layout_->slots) {
    if (s.state == kTaken && n < max) out[n++] = s.host_pid != 0 ? s.host_pid : s.pid;
  }
  Unlock();
  return n;
}

int ShareRegion::MapHostPids(int32_t (*host_pid_of)(uint64_t pid_ns, int32_t pid, void* context),
                             void* context) {
  Lock();
  ReapDead();
  int unknown = 0;
  for (RegionSlot& s : layout_->slots) {
    if (s.state != kTaken || s.host_pid != 0) continue;
    s.host_pid = host_pid_of(s.pid_ns, s.pid, context);
    unknown += s.host_pid == 0;
  }
  Unlock();
  return unknown;
}

void ShareRegion::Close() {
  if (layout_ != nullptr) ::munmap(layout_, sizeof(RegionLayout));
  if (fd_ >= 0) ::close(fd_);
  layout_ = nullptr;
  fd_ = -1;
  slot_ = -1;
}

void ShareRegion::AfterForkInChild() {
  pthread_mutex_init(&mu_, nullptr);
  slot_ = -1;
}

}  // namespace tessera::interpose
