// The scheduling loop's quarantine pass (core/quarantine.h): each cycle, before the nodes are
// read for placement, it decides on every Node's reported Xids, GPU resets and boot, writes each
// changed quarantine into its Node's tessera.io/gpu-quarantine annotation with its events (one
// write: if the Node changed meanwhile, the annotation and the events are dropped together and
// the next cycle decides again), and hands the cycle the state in force:
//   - a quarantined GPU takes no work, and a Job with a pod on it is scheduled again, whole;
//   - a node marked for reboot takes no work, and every Job on it is scheduled again.
#ifndef TESSERA_SERVER_QUARANTINE_PASS_H_
#define TESSERA_SERVER_QUARANTINE_PASS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/quarantine.h"
#include "server/cycle_writes.h"
#include "server/object_cache.h"

namespace tessera::server {

struct QuarantineInForce {
  // node -> GPU index -> why it is quarantined (for the Jobs that lose their binding).
  std::map<std::string, std::map<int64_t, std::string>> gpus;
  // node -> why it must be rebooted.
  std::map<std::string, std::string> reboot;
  int64_t gpus_quarantined = 0;
  bool breaker_open = false;
};

QuarantineInForce QuarantinePass(const std::vector<StoredJson>& nodes,
                                 const core::QuarantinePolicy& policy, int64_t now_ms,
                                 CycleWrites& writes);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_QUARANTINE_PASS_H_
