#include "server/quarantine_pass.h"

#include "api/gpu_quarantine.h"
#include "core/xid.h"

namespace tessera::server {

using nlohmann::json;

QuarantineInForce QuarantinePass::Run(const std::vector<StoredJson>& nodes, int64_t now_ms,
                                      CycleWrites& writes) {
  std::vector<core::NodeHealthReport> reports;
  std::map<std::string, const StoredJson*> stored;
  std::map<std::string, std::pair<int64_t, std::optional<core::NodeHealthReport>>> seen;
  for (const StoredJson& s : nodes) {
    const std::string name = NameOf(s.obj());
    auto it = reports_.find(name);
    auto& entry = seen[name];
    if (it != reports_.end() && it->second.first == s.version) {
      entry = std::move(it->second);
    } else {
      entry.first = s.version;
      if (auto r = api::HealthReportOf(s.obj()); r.ok()) entry.second = std::move(r).value();
    }
    if (!entry.second) continue;
    reports.push_back(*entry.second);
    stored[name] = &s;
  }
  reports_ = std::move(seen);  // nodes deleted are forgotten
  const core::QuarantineOutcome out = core::DecideQuarantine(reports, policy_, now_ms);
  std::map<std::string, core::NodeQuarantine> in_force;
  for (const core::NodeHealthReport& r : reports) in_force[r.node] = r.state;
  std::map<std::string, std::vector<CycleWrites::Note>> notes;
  for (const core::QuarantineEvent& e : out.events) {
    notes[e.node].push_back({e.warning ? "Warning" : "Normal", e.reason, e.message});
  }
  for (const auto& [node, state] : out.changed) {
    const StoredJson& s = *stored.at(node);
    writes.Put(api::WithQuarantine(s.obj(), state), s.version, notes[node]);
    notes.erase(node);
    in_force[node] = state;
  }
  // Events of nodes whose state did not change (the breaker refusing): on their own.
  for (const auto& [node, list] : notes) {
    for (const CycleWrites::Note& n : list) writes.Event(stored.at(node)->obj(), n);
  }
  QuarantineInForce q;
  q.breaker_open = out.breaker_open;
  for (const auto& [node, state] : in_force) {
    for (const core::QuarantinedGpu& g : state.gpus) {
      q.gpus[node][g.gpu] = "GPU " + std::to_string(g.gpu) + " of node " + node +
                            " is quarantined: " + core::DescribeXid(g.xid);
      ++q.gpus_quarantined;
    }
    if (state.reboot) {
      q.reboot[node] =
          "node " + node + " must be rebooted: " + core::DescribeXid(state.reboot->xid);
    }
  }
  return q;
}

}  // namespace tessera::server
