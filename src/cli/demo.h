// `tessera demo`: places the seeds' example workloads on a small mixed GPU cluster through the
// scheduling core and prints where each one lands, down to the device.
#ifndef TESSERA_CLI_DEMO_H_
#define TESSERA_CLI_DEMO_H_

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::cli {

// Runs the demo with the named policy; returns the process exit code.
int RunDemo(const std::string& policy, uint64_t seed, std::ostream& out);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_DEMO_H_
