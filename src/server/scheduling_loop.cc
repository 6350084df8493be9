#include "server/scheduling_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <tuple>

#include "api/json_text.h"
#include "server/cycle_decide.h"
#include "server/cycle_writes.h"

namespace tessera::server {

Result<std::unique_ptr<SchedulingLoop>> SchedulingLoop::Create(ControlPlane& plane,
                                                               SchedulingLoopOptions options) {
  core::SchedulerConfig sc;
  sc.policy = options.policy;
  auto placer = core::Scheduler::Create(sc);
  if (!placer.ok()) return placer.status();
  return std::unique_ptr<SchedulingLoop>(
      new SchedulingLoop(plane, std::move(options), std::move(placer).value()));
}

SchedulingLoop::SchedulingLoop(ControlPlane& plane, SchedulingLoopOptions options,
                               std::unique_ptr<core::Scheduler> placer)
    : plane_(plane),
      options_(std::move(options)),
      placer_(std::move(placer)),
      reader_(plane, options_.node_grace_ms, options_.quarantine, options_.finished_ttl_ms),
      reporter_(plane),
      refresh_budget_(options_.pending_refreshes_per_s) {
  options_.cycle.report_quotas = true;  // published with the queues' order
}

SchedulingLoop::~SchedulingLoop() { Stop(); }

Result<CycleSummary> SchedulingLoop::RunOnce(int64_t now_ms) {
  const auto started = std::chrono::steady_clock::now();
  Result<CycleSummary> sum = Internal("cycle not run");
  plane_.exec().Expire(now_ms);
  try {
    sum = Cycle(now_ms);
  } catch (const std::exception& e) {
    // A defect, not the state's fault: this cycle decides nothing, the next one tries again.
    sum = Internal(std::string("scheduling cycle failed: ") + e.what());
    std::fprintf(stderr, "error: %s\n", api::SafeText(sum.status().message()).c_str());
  }
  follow_up_ = !sum.ok() || sum->follow_up;
  if (sum.ok() && !sum->standby) {
    plane_.metrics().ObserveCycle(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
        sum->admitted, sum->preempted, sum->pending);
  }
  return sum;
}

Result<CycleSummary> SchedulingLoop::Cycle(int64_t now_ms) {
  CycleSummary sum;
  std::optional<store::Fence> fence;
  if (options_.leadership) {
    fence = options_.leadership();
    plane_.metrics().SetLeader(fence.has_value(),
                               options_.transitions ? options_.transitions() : 0);
    if (!fence) {
      sum.standby = true;
      return sum;
    }
  }
  refresh_budget_.Refill(now_ms);
  own_revisions_.clear();
  CycleWrites writes(plane_, now_ms, event_seq_, own_revisions_, std::move(fence));
  auto tally = [&](CycleSummary& out) -> CycleSummary& {
    writes.Flush();
    out.writes = writes.committed();
    out.write_conflicts = writes.conflicts();
    return out;
  };

  // Read: the snapshot, and what is due whatever is decided.
  CycleSnapshot snap = reader_.Read(now_ms, writes);
  RevokeStoppedJobsTokens(std::move(snap.admitted_uids), &snap.problems);
  sum.pending = static_cast<int>(snap.pending.size());
  sum.follow_up = snap.follow_up;
  DecisionWriter record(snap, writes, now_ms,
                        {options_.pending_refresh_ms, options_.preemption_hold_ms},
                        refresh_budget_);
  record.HoldBack();

  // Decide.
  auto decision = Decide(snap, *placer_, options_.cycle, held_, now_ms);
  if (!decision.ok()) return decision.status();
  sum.problems = snap.problems;
  if (!decision->config_error.empty()) {
    sum.config_error = decision->config_error;
    for (size_t j : snap.pending_jobs) {
      record.SetPending(j, "the queue configuration is invalid: " + decision->config_error);
    }
    return tally(sum);
  }
  held_ = decision->result.reservations;

  // Write: the decisions reach the store (and the agents) first, the statuses after them.
  const Recorded recorded = record.Decisions(decision->result);
  sum.admitted = recorded.admitted;
  sum.preempted = recorded.preempted;
  sum.follow_up = sum.follow_up || recorded.follow_up;
  writes.Flush();
  PublishOrder(snap, decision->result, record.Statuses(decision->result, decision->inactive),
               now_ms);
  sum.inactive_queues = static_cast<int>(decision->inactive.size());

  // Report.
  auto reclaimed = reporter_.Report(now_ms, snap, *decision, recorded, writes);
  if (!reclaimed.ok()) return reclaimed.status();
  sum.follow_up = sum.follow_up || *reclaimed;
  return tally(sum);
}

void SchedulingLoop::PublishOrder(const CycleSnapshot& snap, const core::CycleResult& result,
                                  std::vector<std::string> reasons, int64_t now_ms) {
  QueueOrder order;
  order.at_ms = now_ms;
  for (size_t i = 0; i < snap.pending.size() && i < result.pending_places.size(); ++i) {
    if (reasons[i].empty()) continue;  // admitted
    const core::QueuePlace& place = result.pending_places[i];
    const nlohmann::json& obj = snap.jobs[snap.pending_jobs[i]].obj();
    order.entries.push_back({NamespaceOf(obj), NameOf(obj), place.queue, place.position,
                             place.waiting, place.priority, place.fits_when_all_end,
                             std::move(reasons[i])});
  }
  std::sort(order.entries.begin(), order.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.queue, a.position, a.ns, a.name) <
           std::tie(b.queue, b.position, b.ns, b.name);
  });
  order.quotas = result.quotas;
  plane_.queue_order().Publish(std::move(order));
}

void SchedulingLoop::RevokeStoppedJobsTokens(std::set<std::string> running,
                                             std::vector<std::string>* problems) {
  const bool one_left = !running_jobs_known_ ||
                        std::any_of(running_jobs_.begin(), running_jobs_.end(),
                                    [&](const std::string& j) { return !running.contains(j); });
  if (one_left) {
    if (auto revoked = plane_.RevokeExecTokens(running); revoked.ok()) {
      running_jobs_known_ = true;
    } else {
      problems->push_back(revoked.status().message());
    }
  }
  running_jobs_ = std::move(running);
}

namespace {

// Whether a change can change what a cycle decides. Events (the loop's own among them), tokens
// and node leases cannot: they do not wake the loop, which still runs once a period.
bool Wakes(const store::Change& c) {
  const std::string& kind = c.object.key.kind;
  return kind != "Event" && kind != "Token" && kind != "Lease";
}

}  // namespace

bool SchedulingLoop::WaitForChange(std::unique_lock<std::mutex>& lock, int64_t seen,
                                   std::chrono::steady_clock::time_point deadline) {
  while (!stop_) {
    lock.unlock();
    auto changes = plane_.feed().After(seen, 1024);
    bool matters = !changes.ok();  // compacted away: run
    for (const store::Change& c : changes.ok() ? *changes : std::vector<store::Change>()) {
      seen = c.revision;
      // The revisions of a cycle's own writes are in ascending order.
      matters = matters ||
                (Wakes(c) && (follow_up_ || !std::binary_search(own_revisions_.begin(),
                                                                own_revisions_.end(), c.revision)));
    }
    std::optional<uint64_t> sub;
    if (!matters) {
      sub = plane_.feed().Subscribe(seen, [this] {
        std::lock_guard<std::mutex> l(mu_);
        dirty_ = true;
        wake_.notify_all();
      });
    }
    lock.lock();
    if (matters) return true;
    if (!sub) continue;  // a change landed meanwhile: read it
    const bool woke = wake_.wait_until(lock, deadline, [this] { return stop_ || dirty_; });
    dirty_ = false;
    lock.unlock();
    plane_.feed().Unsubscribe(*sub);
    lock.lock();
    if (!woke) return false;
  }
  return false;
}

void SchedulingLoop::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      const int64_t head = plane_.feed().head();
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.period_ms);
      lock.unlock();
      const auto started = std::chrono::steady_clock::now();
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      (void)RunOnce(now);
      ++cycles_;
      const auto took = std::chrono::steady_clock::now() - started;
      lock.lock();
      // A gap as long as the cycle (within the options' bounds), however fast changes come;
      // then the next change after what this cycle saw that matters (its own writes only when
      // it asked to be followed), at the latest after the period.
      const auto gap = std::clamp<std::chrono::steady_clock::duration>(
          took, std::chrono::milliseconds(options_.min_gap_ms),
          std::chrono::milliseconds(options_.max_gap_ms));
      wake_.wait_for(lock, gap, [this] { return stop_; });
      WaitForChange(lock, head, deadline);
    }
  });
}

void SchedulingLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessera::server
