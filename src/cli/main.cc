// The `tessera` command.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "agent/fence.h"
#include "cli/agent_cmd.h"
#include "cli/demo.h"
#include "cli/dev_cmd.h"
#include "cli/resource_cmds.h"
#include "cli/server_cmd.h"
#include "cli/sim_cmd.h"
#include "cli/store_cmd.h"
#include "core/scheduler.h"

int main(int argc, char** argv) {
  CLI::App app{"Tessera: a GPU cluster scheduler"};
  app.require_subcommand(1);

  std::string policy = "bestfit";
  uint64_t seed = 42;
  CLI::App* demo = app.add_subcommand("demo", "Place the seed examples on a small mixed cluster");
  std::string policies;
  for (const std::string& p : tessera::core::PolicyNames())
    policies += (policies.empty() ? "" : ", ") + p;
  demo->add_option("--policy", policy, "Placement policy: " + policies)->capture_default_str();
  demo->add_option("--seed", seed, "Seed for the random policy")->capture_default_str();

  tessera::cli::SimOptions sim_opts;
  CLI::App* sim = tessera::cli::AddSimCommand(app, sim_opts);

  tessera::cli::ServerOptions server_opts;
  CLI::App* server = tessera::cli::AddServerCommand(app, server_opts);

  tessera::cli::AgentOptions agent_opts;
  CLI::App* agent = tessera::cli::AddAgentCommand(app, agent_opts);

  tessera::cli::FenceKeeperOptions keeper_opts;
  CLI::App* keeper = tessera::cli::AddFenceKeeperCommand(app, keeper_opts);

  tessera::cli::DevOptions dev_opts;
  CLI::App* dev = tessera::cli::AddDevCommand(app, dev_opts);

  tessera::cli::StoreCopyOptions copy_opts;
  tessera::cli::StoreStatusOptions status_opts;
  CLI::App* store_copy = nullptr;
  CLI::App* store_status = nullptr;
  tessera::cli::AddStoreCommand(app, copy_opts, &store_copy, status_opts, &store_status);

  tessera::cli::ResourceOptions resource_opts;
  tessera::cli::AddResourceCommands(app, resource_opts);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; any other parse error is a usage error, exit code 2.
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (demo->parsed()) return tessera::cli::RunDemo(policy, seed, std::cout);
  if (sim->parsed()) return tessera::cli::RunSim(sim_opts, std::cout, std::cerr);
  if (server->parsed()) return tessera::cli::RunServer(server_opts, std::cout, std::cerr);
  if (agent->parsed()) return tessera::cli::RunAgent(agent_opts, std::cout, std::cerr);
  if (keeper->parsed()) {
    return tessera::agent::RunFenceKeeper(keeper_opts.state_dir, keeper_opts.fence_ms,
                                          keeper_opts.stop_grace_ms, keeper_opts.agent_pid);
  }
  if (dev->parsed()) return tessera::cli::RunDev(dev_opts, std::cout, std::cerr);
  if (store_copy->parsed()) return tessera::cli::RunStoreCopy(copy_opts, std::cout, std::cerr);
  if (store_status->parsed()) {
    return tessera::cli::RunStoreStatus(status_opts, std::cout, std::cerr);
  }
  if (int code = tessera::cli::RunResourceCommand(resource_opts, std::cin, std::cout, std::cerr);
      code >= 0) {
    return code;
  }
  return 0;
}
