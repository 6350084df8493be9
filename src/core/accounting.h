// GPU accounting and idle detection, pure: what is held comes in as observations, segments of
// holding come out, and usage over a window is summed from segments.
//
// A segment is one device held by one pod from `start_ms` to `end_ms` (open while held), charged
// `gpu_milli` GPU equivalents: 1000 for a whole GPU, the share's milli-GPU, the MIG slice's
// fraction of its card, 1000/replicas for a time-slice replica. An idle segment lies inside a
// held one and covers the time its GPU's utilisation stayed below the idle threshold: wasted
// GPU-hours are allocated but idle. GPU-hours of a segment over a window [since, until) are
// gpu_milli x overlap / (1000 x 3600 s), summed in integers (milli-GPU x ms) until the end.
#ifndef TESSERA_CORE_ACCOUNTING_H_
#define TESSERA_CORE_ACCOUNTING_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tessera::core {

enum class SegmentKind : uint8_t { kHeld = 0, kIdle = 1 };

struct UsageSegment {
  int64_t id = 0;  // the ledger's identity (assigned when stored); 0 before
  SegmentKind kind = SegmentKind::kHeld;
  // The holding's identity: one device of one pod of one admission.
  std::string key;
  std::string ns, queue, job, pod, model;
  int64_t gpu_milli = 0;
  int64_t start_ms = 0;
  int64_t end_ms = -1;  // -1 while open
  bool open() const { return end_ms < 0; }
};

// A device held now, as observed.
struct HeldDevice {
  std::string key;  // stable while the holding lasts; a new admission gives a new key
  std::string ns, queue, job, pod, model;
  int64_t gpu_milli = 0;
  int64_t since_ms = 0;  // when the holding began (the admission)
  // The GPU's utilisation was sampled and is below the idle threshold.
  bool idle = false;
};

// A holding that ended at a known time (its job finished), by key.
using EndedHoldings = std::map<std::string, int64_t, std::less<>>;

struct LedgerUpdate {
  std::vector<UsageSegment> opened;  // new segments (id 0)
  // Open segments to close, by index into the `open` list given to Reconcile, with end times.
  std::vector<std::pair<size_t, int64_t>> closed;
  bool empty() const { return opened.empty() && closed.empty(); }
};

// What to change so that the open segments match `held` at `now_ms`: a held device without an
// open segment opens one from its `since_ms` (no later than now); an open segment no longer held
// closes at its holding's end time when `ended` knows it (kept within [start, now]), else now.
// An idle device opens an idle segment from now; a busy one, or one no longer held, closes its
// idle segment (at the same time as its holding). Deterministic: output in key order.
LedgerUpdate Reconcile(std::span<const UsageSegment> open, std::span<const HeldDevice> held,
                       const EndedHoldings& ended, int64_t now_ms);

// A pod whose every held device has been idle since `idle_since_ms`.
struct IdlePod {
  std::string ns, job, pod, queue;
  int64_t idle_since_ms = 0;
  int64_t gpu_milli = 0;  // GPU equivalents it holds
};

// Pods of the open segments idle for at least `window_ms` at `now_ms`, by namespace, job, pod.
// A pod is idle since the latest start of its devices' idle segments, when all have one.
std::vector<IdlePod> IdlePods(std::span<const UsageSegment> open, int64_t now_ms,
                              int64_t window_ms);

enum class UsageGroup : uint8_t { kNamespace, kQueue, kJob };

// Price of one GPU-hour per model, in hundredths of the currency unit (fen, cents). A model
// matches the longest entry it starts with ("A100" prices "A100-SXM4-80GB"); unmatched: free.
using PriceTable = std::map<std::string, int64_t, std::less<>>;
int64_t PricePerHour(const PriceTable& prices, std::string_view model);  // -1 when unpriced

struct UsageRow {
  std::string key;                     // namespace, queue, or "namespace/job"
  int64_t milli_gpu_ms = 0;            // held, within the window
  int64_t idle_milli_gpu_ms = 0;       // of which idle
  int64_t cost_hundredths = 0;         // priced models only
  int64_t wasted_cost_hundredths = 0;  // the idle part's cost
  bool unpriced = false;               // some of it ran on a model without a price
  double gpu_hours() const { return milli_gpu_ms / 3.6e9; }
  double idle_gpu_hours() const { return idle_milli_gpu_ms / 3.6e9; }
};

// Usage of `segments` within [since_ms, until_ms), open segments counted up to `until_ms`,
// grouped by `by`, ordered by key.
std::vector<UsageRow> SummarizeUsage(std::span<const UsageSegment> segments, UsageGroup by,
                                     int64_t since_ms, int64_t until_ms, const PriceTable& prices);

}  // namespace tessera::core

#endif  // TESSERA_CORE_ACCOUNTING_H_
