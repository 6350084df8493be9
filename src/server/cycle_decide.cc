#include "server/cycle_decide.h"

#include <cstddef>
#include <exception>

namespace tessera::server {

Status DropInvalid(core::QueueConfig* cfg, std::map<std::string, std::string>* inactive,
                   std::vector<std::string>* problems) {
  for (;;) {
    Status s = core::ValidateQueueConfig(*cfg);
    if (s.ok()) return s;
    const std::string& msg = s.message();
    const size_t open = msg.find('['), close = msg.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return s;
    const std::string list = msg.substr(0, open);
    size_t i = 0;
    try {
      i = std::stoul(msg.substr(open + 1, close - open - 1));
    } catch (const std::exception&) {
      return s;
    }
    auto drop = [&](auto& v) {
      if (i >= v.size()) return false;
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    };
    bool dropped = false;
    if (list == "queues" && i < cfg->queues.size()) {
      (*inactive)[cfg->queues[i].name] = msg;
      dropped = drop(cfg->queues);
    } else if (list == "cohorts") {
      dropped = drop(cfg->cohorts);
    } else if (list == "local_queues") {
      dropped = drop(cfg->local_queues);
    } else if (list == "flavors") {
      dropped = drop(cfg->flavors);
    } else if (list == "priority_classes") {
      dropped = drop(cfg->priority_classes);
    } else if (list == "namespace_quotas") {
      dropped = drop(cfg->namespace_quotas);
    }
    if (!dropped) return s;
    if (list != "queues") problems->push_back("ignored: " + msg);
  }
}

Result<Decision> Decide(CycleSnapshot& snap, core::Scheduler& placer,
                        const core::CycleOptions& options, std::span<const core::Reservation> held,
                        int64_t now_ms) {
  Decision d;
  if (Status valid = DropInvalid(&snap.cfg, &d.inactive, &snap.problems); !valid.ok()) {
    d.config_error = valid.message();
    return d;
  }
  auto cycle = core::AdmissionCycle::Create(snap.cfg, options);
  if (!cycle.ok()) return cycle.status();
  d.result = cycle->Run(placer, snap.state, snap.pending, snap.running, now_ms, held);
  return d;
}

}  // namespace tessera::server
