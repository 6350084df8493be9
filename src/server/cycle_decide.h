// The decide stage of a scheduling cycle: the core's admission, placement and preemption over a
// snapshot. A queue configuration that does not validate is repaired first, one object at a time
// as the error names it: a broken Queue stops only its own work (it is inactive, and says why),
// another broken object is ignored and named in the snapshot's problems.
#ifndef TESSERA_SERVER_CYCLE_DECIDE_H_
#define TESSERA_SERVER_CYCLE_DECIDE_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/admission.h"
#include "core/scheduler.h"
#include "server/cycle_read.h"

namespace tessera::server {

struct Decision {
  core::CycleResult result;
  std::map<std::string, std::string> inactive;  // Queue -> why it was left out
  // Set when the configuration could not be repaired: nothing was decided.
  std::string config_error;
};

// Drops what makes `cfg` invalid, one object at a time, as the error names it
// ("queues[2] (team-a).resource_groups...": queue 2). Dropped queues and why are added to
// `inactive`, other dropped objects to `problems`. An error naming no list entry is returned.
Status DropInvalid(core::QueueConfig* cfg, std::map<std::string, std::string>* inactive,
                   std::vector<std::string>* problems);

// One admission cycle over `snap` at `now_ms` (its configuration repaired in place); `held`:
// the reservations of the last cycle. An error is a defect of the options, not of the state.
Result<Decision> Decide(CycleSnapshot& snap, core::Scheduler& placer,
                        const core::CycleOptions& options, std::span<const core::Reservation> held,
                        int64_t now_ms);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CYCLE_DECIDE_H_
