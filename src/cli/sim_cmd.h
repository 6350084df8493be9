// `tessera sim`: trace-driven simulation on the scheduling core.
#ifndef TESSERA_CLI_SIM_CMD_H_
#define TESSERA_CLI_SIM_CMD_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace tessera::cli {

struct SimOptions {
  std::string mode = "arrival";   // arrival | replay
  double speedup = 1;             // replay: arrivals this many times faster
  std::string trace = "default";  // a bundled trace name, or empty when --pods is given
  std::string nodes;              // node list CSV; default: the bundled GPU node list
  std::string pods;               // pod list CSV
  std::string policy = "all";     // a policy, a comma-separated list, or "all"
  std::string seeds = "42";       // "42", "42-51" or "42,43"
  double inflate = 1.3;
  std::string node_order = "shuffled";  // arrival: shuffled (per seed) | trace
  std::string output = "table";         // table | json
  std::string plot;                     // SVG file to write
  bool bound = true;                    // arrival: report the upper bound (sim/bound.h)
  int jobs = 0;                         // threads; 0: one per core
};

// Registers the `sim` subcommand on `app`, filling `opts`.
CLI::App* AddSimCommand(CLI::App& app, SimOptions& opts);

// Runs it; returns the process exit code. Errors go to `err`.
int RunSim(const SimOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SIM_CMD_H_
