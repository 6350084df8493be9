#include "server/accountant.h"

#include <map>
#include <nlohmann/json.hpp>

#include "api/json_read.h"
#include "api/time.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

struct GpuInfo {
  std::string model;
  std::optional<int64_t> utilization_pct;
};

// node name -> GPU UUID -> model and last sampled utilisation.
std::map<std::string, std::map<std::string, GpuInfo>> GpusOf(std::span<const StoredJson> nodes) {
  std::map<std::string, std::map<std::string, GpuInfo>> out;
  for (const StoredJson& n : nodes) {
    const json& status = Member(n.obj(), "status");
    auto& gpus = out[Str(Member(n.obj(), "metadata"), "name")];
    std::map<int64_t, std::string> uuid_of;
    for (const json& g : ListOf(Member(status, "gpus"))) {
      uuid_of[static_cast<int64_t>(Num(g, "index"))] = Str(g, "uuid");
      gpus[Str(g, "uuid")].model = Str(g, "model");
    }
    for (const json& t : ListOf(Member(status, "telemetry"))) {
      auto u = uuid_of.find(static_cast<int64_t>(Num(t, "index")));
      if (u != uuid_of.end() && Member(t, "utilizationPct").is_number()) {
        gpus[u->second].utilization_pct = static_cast<int64_t>(Num(t, "utilizationPct"));
      }
    }
  }
  return out;
}

// Calls `f(key, pod, device)` for each device bound to `job`'s pods; the key names the device
// within this admission of the job.
template <typename F>
void ForEachDevice(const json& job, F f) {
  const json& meta = Member(job, "metadata");
  const json& status = Member(job, "status");
  const std::string base =
      Str(meta, "namespace") + "/" + Str(meta, "name") + "@" + Str(status, "admittedAt") + "/";
  for (const json& pod : ListOf(Member(status, "pods"))) {
    const json& devices = ListOf(Member(pod, "devices"));
    for (size_t i = 0; i < devices.size(); ++i) {
      f(base + Str(pod, "name") + "/" + std::to_string(i), pod, devices[i]);
    }
  }
}

}  // namespace

Result<std::unique_ptr<Accountant>> Accountant::Open(std::unique_ptr<store::UsageStore> ledger) {
  auto open = ledger->LoadOpen();
  if (!open.ok()) return open.status();
  return std::unique_ptr<Accountant>(new Accountant(std::move(ledger), std::move(open).value()));
}

Accountant::Accountant(std::unique_ptr<store::UsageStore> ledger,
                       std::vector<core::UsageSegment> open)
    : ledger_(std::move(ledger)), open_(std::move(open)) {}

void Accountant::Configure(AccountingOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = std::move(options);
}

AccountingOptions Accountant::options() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_;
}

Result<std::vector<core::IdlePod>> Accountant::Observe(
    int64_t now_ms, std::span<const StoredJson> jobs, std::span<const StoredJson> nodes,
    const std::set<std::string, std::less<>>& released, const std::optional<store::Fence>& fence) {
  const AccountingOptions opts = options();
  const auto gpus = GpusOf(nodes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reload_ || (fence && fence->create_revision != term_)) {
      auto open = ledger_->LoadOpen();
      if (!open.ok()) return open.status();
      open_ = std::move(open).value();
      reload_ = false;
      term_ = fence ? fence->create_revision : 0;
    }
  }
  // Finished jobs matter only while the ledger still holds them open (Observe runs on one
  // thread, so the open segments do not change until the update below).
  std::set<std::pair<std::string, std::string>> open_jobs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const core::UsageSegment& s : open_) open_jobs.emplace(s.ns, s.job);
  }
  std::vector<core::HeldDevice> held;
  core::EndedHoldings ended;
  for (const StoredJson& s : jobs) {
    const json& status = Member(s.obj(), "status");
    const std::string phase = Str(status, "phase");
    const bool ended_phase = phase == "Succeeded" || phase == "Failed";
    if (!ended_phase && phase != "Admitted") continue;  // waiting work holds nothing
    const json& meta = Member(s.obj(), "metadata");
    const std::string ns = Str(meta, "namespace"), name = Str(meta, "name");
    if (ended_phase) {
      if (!open_jobs.contains({ns, name})) continue;
      const int64_t end = ParseTime(Str(status, "finishedAt"));
      if (end < 0) continue;
      ForEachDevice(s.obj(), [&](std::string key, const json&, const json&) {
        ended.emplace(std::move(key), end);
      });
      continue;
    }
    if (released.contains(ns + "/" + name)) continue;
    const int64_t since = ParseTime(Str(status, "admittedAt"));
    ForEachDevice(s.obj(), [&](std::string key, const json& pod, const json& d) {
      core::HeldDevice h;
      h.key = std::move(key);
      h.ns = ns;
      h.queue = Str(status, "queue");
      h.job = name;
      h.pod = Str(pod, "name");
      h.gpu_milli = static_cast<int64_t>(Num(d, "gpuMilli"));
      // A pod placed after its job's admission (an array's task, a gang's late member) holds
      // its devices from its own binding.
      const int64_t bound = ParseTime(Str(pod, "boundAt"));
      h.since_ms = bound >= 0 ? bound : since < 0 ? now_ms : since;
      if (auto n = gpus.find(Str(pod, "node")); n != gpus.end()) {
        if (auto g = n->second.find(Str(d, "uuid")); g != n->second.end()) {
          h.model = g->second.model;
          h.idle =
              g->second.utilization_pct && *g->second.utilization_pct < opts.idle_threshold_pct;
        }
      }
      held.push_back(std::move(h));
    });
  }

  std::lock_guard<std::mutex> lock(mu_);
  core::LedgerUpdate u = core::Reconcile(open_, held, ended, now_ms);
  if (!u.empty()) {
    std::vector<std::pair<int64_t, int64_t>> closed;
    std::vector<uint8_t> gone(open_.size(), 0);
    for (const auto& [i, end] : u.closed) {
      closed.emplace_back(open_[i].id, end);
      gone[i] = 1;
    }
    if (Status s = ledger_->Apply(&u.opened, closed, fence ? &*fence : nullptr); !s.ok()) {
      reload_ = true;  // on etcd, part of it may be written
      return s;
    }
    std::vector<core::UsageSegment> next;
    next.reserve(open_.size() - closed.size() + u.opened.size());
    for (size_t i = 0; i < open_.size(); ++i) {
      if (!gone[i]) next.push_back(std::move(open_[i]));
    }
    for (core::UsageSegment& s : u.opened) next.push_back(std::move(s));
    open_ = std::move(next);
  }
  idle_ = core::IdlePods(open_, now_ms, opts.idle_window_ms);
  return idle_;
}

Result<std::vector<core::UsageRow>> Accountant::Usage(core::UsageGroup by, int64_t since_ms,
                                                      int64_t until_ms,
                                                      std::optional<std::string> ns) {
  const AccountingOptions opts = options();
  std::lock_guard<std::mutex> lock(mu_);
  auto segments = ledger_->Overlapping(since_ms, until_ms, ns);
  if (!segments.ok()) return segments.status();
  return core::SummarizeUsage(*segments, by, since_ms, until_ms, opts.prices);
}

std::vector<core::IdlePod> Accountant::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_;
}

}  // namespace tessera::server
