// The memory count of one GPU share, kept in a file that every process of the share maps (the
// agent names it in TESSERA_SHARE_REGION; one per pod). Each process counts what it holds in a
// slot of its own; the share's use is the sum over live slots.
//
// Robust to processes that die: a process holds a POSIX record lock on its slot's byte while it
// lives, and the kernel drops the lock when it exits, however it exits. A slot whose lock is gone
// is dead and is cleared by the next process that counts. Counting is serialized by a record lock
// on byte 0 (across processes, and across pid namespaces: the lock lives on the file) and a mutex
// (across threads). Each slot's counters change by single 64-bit stores, so a process killed in
// the middle of an update leaves every count whole.
//
// Part of the interposer, which loads into any program: it uses the C library only (no C++
// runtime, no exceptions, no allocation).
#ifndef TESSERA_INTERPOSE_SHARE_REGION_H_
#define TESSERA_INTERPOSE_SHARE_REGION_H_

#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace tessera::interpose {

inline constexpr int kMaxDevices = 16;   // CUDA ordinals counted; higher ones count as the last
inline constexpr int kMaxSlots = 128;    // processes of one share alive at once
inline constexpr int kMaxExports = 256;  // IPC handles exported by the share's processes

struct RegionLayout;

class ShareRegion {
 public:
  constexpr ShareRegion() = default;
  ShareRegion(const ShareRegion&) = delete;
  ShareRegion& operator=(const ShareRegion&) = delete;

  // Opens the region file at `path`, creating and sizing it when it is new; with a null `path`,
  // a region of this process alone. false, with the reason in `error` (`size` bytes), when it
  // cannot be opened or mapped. Called once, before any other member.
  bool Open(const char* path, char* error, size_t size);

  // Counts `bytes` more on `device` for this process when the share's total there stays within
  // `limit`, and returns true; returns false and counts nothing otherwise (or when no slot is
  // free).
  bool Reserve(int device, uint64_t bytes, uint64_t limit);
  // Counts `bytes` less on `device` for this process (never below zero).
  void Release(int device, uint64_t bytes);
  // The share's total on `device`: every live process's count.
  uint64_t Used(int device);

  // Records the 64-byte IPC handle `handle` as exported by this share.
  void AddExport(const void* handle);
  // Whether `handle` was exported by a live process of this share.
  bool IsExport(const void* handle);

  // The compute gate (a share's percentage of a device), fed by its measured use: each launch
  // is charged an estimated cost against an allowance that `percent` of the time accrues (at
  // most 500 ms worth banked while idle); the measuring process corrects the estimate with what
  // the share was measured to use. ChargeLaunch charges a launch on `device` at `now_ns`
  // (CLOCK_MONOTONIC) and returns true while the allowance is not negative; otherwise it charges
  // nothing and sets *wait_ns to the time until it will be.
  bool ChargeLaunch(int device, uint64_t now_ns, uint32_t percent, uint64_t* wait_ns);
  // Replaces the estimates charged on `device` since the last correction by `measured_ns`, the
  // GPU time the share was measured to use meanwhile, and learns the cost of a launch from it.
  // Estimates stand until a measurement comes: they count against the burst meanwhile.
  void Correct(int device, uint64_t now_ns, uint32_t percent, uint64_t measured_ns);
  // Whether this process measures the share's use: it takes the role when no live process has
  // it.
  bool TakeSampler();
  // The pids of the share's live processes, on the host where the agent found them, else as
  // each sees itself; how many were written.
  int Pids(int32_t* out, int max);
  // For the agent, on the host: fills in the host pid of each live process of the share that
  // has none yet, as `host_pid_of(its pid namespace's inode, its pid there, context)` gives it
  // (0: not found). Processes in a container see pids of their own namespace, and NVML's samples
  // carry host pids. How many stay unknown.
  int MapHostPids(int32_t (*host_pid_of)(uint64_t pid_ns, int32_t pid, void* context),
                  void* context);
  // Unmaps the region and closes its file (the agent's use: a process of the share keeps its
  // region while it lives).
  void Close();

  // In a child after fork: the parent's slot is not the child's (record locks are not
  // inherited); the child takes a slot of its own when it first counts.
  void AfterForkInChild();

 private:
  // Takes the region's lock (byte 0) for the calling thread and process.
  void Lock();
  void Unlock();
  // This process's slot, taking a free or dead one when it has none; -1 when none is left.
  // Called with the region locked.
  int OwnSlot();
  // Clears every slot whose process is gone, and its exports. Called with the region locked.
  void ReapDead();
  bool SlotAlive(int slot) const;
  uint64_t Total(int device) const;

  int fd_ = -1;
  RegionLayout* layout_ = nullptr;
  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
  int slot_ = -1;
};

// The device index a count is kept under: `device` clamped to [0, kMaxDevices).
int CountedDevice(int device);

}  // namespace tessera::interpose

#endif  // TESSERA_INTERPOSE_SHARE_REGION_H_
