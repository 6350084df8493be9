#include "core/accounting.h"

#include <algorithm>
#include <tuple>

namespace tessera::core {

namespace {

// Index of the open segments of one kind by key.
std::map<std::string_view, size_t> ByKey(std::span<const UsageSegment> open, SegmentKind kind) {
  std::map<std::string_view, size_t> out;
  for (size_t i = 0; i < open.size(); ++i) {
    if (open[i].kind == kind) out.emplace(open[i].key, i);
  }
  return out;
}

UsageSegment Open(const HeldDevice& h, SegmentKind kind, int64_t start_ms) {
  UsageSegment s;
  s.kind = kind;
  s.key = h.key;
  s.ns = h.ns;
  s.queue = h.queue;
  s.job = h.job;
  s.pod = h.pod;
  s.model = h.model;
  s.gpu_milli = h.gpu_milli;
  s.start_ms = start_ms;
  return s;
}

}  // namespace

LedgerUpdate Reconcile(std::span<const UsageSegment> open, std::span<const HeldDevice> held,
                       const EndedHoldings& ended, int64_t now_ms) {
  LedgerUpdate u;
  const auto held_open = ByKey(open, SegmentKind::kHeld);
  const auto idle_open = ByKey(open, SegmentKind::kIdle);
  std::map<std::string_view, const HeldDevice*> now_held;
  for (const HeldDevice& h : held) now_held.emplace(h.key, &h);

  for (const auto& [key, h] : now_held) {
    if (!held_open.contains(key)) {
      u.opened.push_back(Open(*h, SegmentKind::kHeld, std::min(h->since_ms, now_ms)));
    }
    auto idle = idle_open.find(key);
    if (h->idle && idle == idle_open.end()) {
      u.opened.push_back(Open(*h, SegmentKind::kIdle, now_ms));
    } else if (!h->idle && idle != idle_open.end()) {
      u.closed.emplace_back(idle->second, std::max(open[idle->second].start_ms, now_ms));
    }
  }
  // Holdings gone: both segments end when the holding did.
  for (const auto& [key, i] : held_open) {
    if (now_held.contains(key)) continue;
    int64_t end = now_ms;
    if (auto e = ended.find(key); e != ended.end()) end = std::min(e->second, now_ms);
    end = std::max(end, open[i].start_ms);
    u.closed.emplace_back(i, end);
    if (auto idle = idle_open.find(key); idle != idle_open.end()) {
      u.closed.emplace_back(idle->second, std::max(end, open[idle->second].start_ms));
    }
  }
  // An idle segment whose holding has no open segment (a ledger written by an older state).
  for (const auto& [key, i] : idle_open) {
    if (!held_open.contains(key) && !now_held.contains(key)) {
      u.closed.emplace_back(i, std::max(open[i].start_ms, now_ms));
    }
  }
  return u;
}

std::vector<IdlePod> IdlePods(std::span<const UsageSegment> open, int64_t now_ms,
                              int64_t window_ms) {
  struct Acc {
    IdlePod pod;
    int held = 0, idle = 0;
  };
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>, Acc> pods;
  for (const UsageSegment& s : open) {
    if (!s.open()) continue;
    Acc& a = pods[{s.ns, s.job, s.pod}];
    if (s.kind == SegmentKind::kHeld) {
      ++a.held;
      a.pod.gpu_milli += s.gpu_milli;
      a.pod.ns = s.ns;
      a.pod.job = s.job;
      a.pod.pod = s.pod;
      a.pod.queue = s.queue;
    } else {
      ++a.idle;
      a.pod.idle_since_ms = std::max(a.pod.idle_since_ms, s.start_ms);
    }
  }
  std::vector<IdlePod> out;
  for (auto& [k, a] : pods) {
    if (a.held > 0 && a.idle == a.held && now_ms - a.pod.idle_since_ms >= window_ms) {
      out.push_back(std::move(a.pod));
    }
  }
  return out;
}

int64_t PricePerHour(const PriceTable& prices, std::string_view model) {
  int64_t price = -1;
  size_t best = 0;
  for (const auto& [prefix, p] : prices) {
    if (prefix.size() >= best && model.substr(0, prefix.size()) == prefix) {
      best = prefix.size();
      price = p;
    }
  }
  return price;
}

std::vector<UsageRow> SummarizeUsage(std::span<const UsageSegment> segments, UsageGroup by,
                                     int64_t since_ms, int64_t until_ms, const PriceTable& prices) {
  struct Acc {
    UsageRow row;
    __int128 cost = 0, wasted = 0;  // milli-GPU x ms x hundredths per hour
  };
  std::map<std::string, Acc> rows;
  std::map<std::string_view, int64_t> price_of;
  for (const UsageSegment& s : segments) {
    const int64_t start = std::max(s.start_ms, since_ms);
    const int64_t end = std::min(s.open() ? until_ms : s.end_ms, until_ms);
    if (end <= start) continue;
    const std::string key = by == UsageGroup::kNamespace ? s.ns
                            : by == UsageGroup::kQueue   ? s.queue
                                                         : s.ns + "/" + s.job;
    Acc& a = rows[key];
    a.row.key = key;
    const int64_t amount = s.gpu_milli * (end - start);
    auto p = price_of.find(s.model);
    if (p == price_of.end()) p = price_of.emplace(s.model, PricePerHour(prices, s.model)).first;
    if (p->second < 0) a.row.unpriced = true;
    const __int128 cost = static_cast<__int128>(amount) * std::max<int64_t>(p->second, 0);
    if (s.kind == SegmentKind::kHeld) {
      a.row.milli_gpu_ms += amount;
      a.cost += cost;
    } else {
      a.row.idle_milli_gpu_ms += amount;
      a.wasted += cost;
    }
  }
  std::vector<UsageRow> out;
  out.reserve(rows.size());
  constexpr int64_t kMilliGpuMsPerHour = 1000LL * 3'600'000;
  for (auto& [k, a] : rows) {
    // Rounded to the nearest hundredth.
    a.row.cost_hundredths =
        static_cast<int64_t>((a.cost + kMilliGpuMsPerHour / 2) / kMilliGpuMsPerHour);
    a.row.wasted_cost_hundredths =
        static_cast<int64_t>((a.wasted + kMilliGpuMsPerHour / 2) / kMilliGpuMsPerHour);
    out.push_back(std::move(a.row));
  }
  return out;
}

}  // namespace tessera::core
