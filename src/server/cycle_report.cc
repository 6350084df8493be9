#include "server/cycle_report.h"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "api/json_read.h"
#include "api/quantity.h"
#include "api/time.h"
#include "server/json_names.h"

namespace tessera::server {

CycleGauges GaugesAfter(core::ClusterState state, const core::CycleResult& result,
                        const std::vector<core::AdmittedWorkload>& running,
                        const core::QueueConfig& cfg) {
  CycleGauges gauges;
  // Fragmentation after this cycle's decisions.
  for (const core::Preemption& p : result.preemptions) {
    for (const std::optional<core::Placement>& pl : running[p.running_index].placements) {
      if (pl) (void)state.Release(*pl);
    }
  }
  for (const core::Admission& a : result.admissions) {
    for (const std::optional<core::Placement>& pl : a.admitted.placements) {
      if (pl) (void)state.Allocate(*pl);
    }
  }
  for (const core::Growth& g : result.growths) (void)state.Allocate(g.placement);
  gauges.fragmentation = core::FragmentationOf(state);
  for (const core::QueueSpec& q : cfg.queues) {
    for (const core::ResourceGroup& g : q.resource_groups) {
      for (const core::FlavorQuotas& f : g.flavors) {
        for (const core::ResourceQuota& r : f.resources) {
          const double amount = r.resource == core::QuotaResource::kMemory ? r.nominal * 1048576.0
                                                                           : r.nominal / 1000.0;
          gauges.quotas.push_back(
              {q.name, f.flavor, std::string(core::QuotaResourceName(r.resource)), amount});
        }
      }
    }
  }
  return gauges;
}

bool MarkIdle(int64_t now_ms, const std::vector<core::IdlePod>& idle, const AccountingOptions& opts,
              const CycleSnapshot& snap, const std::set<std::string, std::less<>>& released,
              CycleWrites& writes) {
  bool reclaimed = false;
  std::map<std::string, std::vector<const core::IdlePod*>, std::less<>> by_job;
  for (const core::IdlePod& p : idle) by_job[p.ns + "/" + p.job].push_back(&p);
  std::map<std::string_view, const core::IdleReclaimPolicy*> reclaim;
  for (const core::QueueSpec& q : snap.cfg.queues) reclaim[q.name] = &q.idle_reclaim;
  const std::string below = "below " + std::to_string(opts.idle_threshold_pct) + "% utilisation";

  for (size_t i = 0; i < snap.running.size(); ++i) {
    const StoredJson& s = snap.jobs[snap.running_jobs[i]];
    const std::string key = Str(Member(s.obj(), "metadata"), "namespace") + "/" +
                            Str(Member(s.obj(), "metadata"), "name");
    if (released.contains(key)) continue;
    const json& status = Member(s.obj(), "status");
    auto it = by_job.find(key);
    if (it == by_job.end()) {
      if (!status.contains("idle")) continue;
      json obj = s.obj();
      obj["status"].erase("idle");
      writes.Put(obj, s.version, CycleWrites::Note{"Normal", "Busy", "its GPUs are in use again"});
      continue;
    }
    // Pods holding GPUs; since when the first idle pod, and all of them, have been idle.
    int gpu_pods = 0;
    for (const json& pod : ListOf(Member(status, "pods"))) {
      if (!ListOf(Member(pod, "devices")).empty()) ++gpu_pods;
    }
    int64_t all_since = 0;
    int64_t first_since = std::numeric_limits<int64_t>::max();
    json names = json::array();
    std::string list;
    for (const core::IdlePod* p : it->second) {
      all_since = std::max(all_since, p->idle_since_ms);
      first_since = std::min(first_since, p->idle_since_ms);
      names.push_back(p->pod);
      list += (list.empty() ? "" : ", ") + p->pod;
    }
    const std::string message = "pod" + std::string(names.size() == 1 ? " " : "s ") + list +
                                " held GPUs " + below + " since " + FormatTime(first_since);
    const core::AdmittedWorkload& a = snap.running[i];
    auto policy = reclaim.find(a.queue);
    if (policy != reclaim.end() && policy->second->after_ms > 0 &&
        gpu_pods == static_cast<int>(it->second.size()) &&
        now_ms - all_since >= policy->second->after_ms &&
        (!policy->second->max_priority || a.priority <= *policy->second->max_priority)) {
      const std::string why = "reclaimed by queue " + a.queue + ": its GPUs stayed " + below +
                              " since " + FormatTime(all_since) + " (idleReclaim.after " +
                              api::FormatDurationMs(policy->second->after_ms) + ")";
      json obj = s.obj();
      obj["status"]["phase"] = "Failed";
      obj["status"]["message"] = why;
      obj["status"]["finishedAt"] = FormatTime(now_ms);
      obj["status"].erase("idle");
      writes.Put(obj, s.version, CycleWrites::Note{"Warning", "IdleReclaimed", why});
      reclaimed = true;
      continue;
    }
    json mark = {{"since", FormatTime(first_since)}, {"pods", names}, {"message", message}};
    if (Member(status, "idle") == mark) continue;
    json obj = s.obj();
    obj["status"]["idle"] = mark;
    writes.Put(obj, s.version,
               status.contains("idle")
                   ? std::nullopt
                   : std::optional(CycleWrites::Note{"Warning", "Idle", message}));
  }
  return reclaimed;
}

Result<bool> CycleReporter::Report(int64_t now_ms, CycleSnapshot& snap, const Decision& decision,
                                   const Recorded& recorded, CycleWrites& writes) {
  for (const auto& [queue, seconds] : recorded.waits) {
    plane_.metrics().ObserveAdmission(queue, seconds);
  }
  CycleGauges gauges = GaugesAfter(std::move(snap.state), decision.result, snap.running, snap.cfg);
  gauges.undecodable = std::move(snap.undecodable);
  gauges.gpus_quarantined = snap.quarantine.gpus_quarantined;
  gauges.nodes_to_reboot = static_cast<int64_t>(snap.quarantine.reboot.size());
  gauges.quarantine_breaker_open = snap.quarantine.breaker_open;
  plane_.metrics().SetCycleGauges(std::move(gauges));

  // The accountant reads the Jobs that hold devices, and each ended Job once (the first cycle
  // that sees its end closes its segments at the time it ended); all ended Jobs again after the
  // accountant failed.
  std::vector<StoredJson> accounted;
  std::vector<ObjectView*> ends;
  for (size_t i = 0; i < snap.jobs.size(); ++i) {
    ObjectView& fields = *snap.views[i];
    if (fields.phase == "Admitted") {
      accounted.push_back(snap.jobs[i]);
    } else if (fields.ended && (!fields.accounted || !ends_accounted_)) {
      accounted.push_back(snap.jobs[i]);
      ends.push_back(&fields);
    }
  }
  auto idle =
      plane_.accounting().Observe(now_ms, accounted, snap.nodes, recorded.released, writes.fence());
  ends_accounted_ = idle.ok();
  if (!idle.ok()) return idle.status();
  for (ObjectView* v : ends) v->accounted = true;
  return MarkIdle(now_ms, *idle, plane_.accounting().options(), snap, recorded.released, writes);
}

}  // namespace tessera::server
