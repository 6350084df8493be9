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
#include <optional>
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

class QuarantinePass {
 public:
  explicit QuarantinePass(core::QuarantinePolicy policy) : policy_(policy) {}

  QuarantineInForce Run(const std::vector<StoredJson>& nodes, int64_t now_ms, CycleWrites& writes);

 private:
  const core::QuarantinePolicy policy_;
  // What each Node says for the quarantine, read once per stored version (nullopt: its
  // annotation is malformed, and DecodeNode skips it with the reason).
  std::map<std::string, std::pair<int64_t, std::optional<core::NodeHealthReport>>> reports_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_QUARANTINE_PASS_H_
