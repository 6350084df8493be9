#include "cli/dev_cmd.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/process_tree.h"
#include "cli/agent_cmd.h"
#include "cli/server_cmd.h"
#include "server/api_server.h"
#include "server/files.h"
#include "server/http_server.h"
#include "server/scheduling_loop.h"

namespace tessera::cli {

using nlohmann::json;

CLI::App* AddDevCommand(CLI::App& app, DevOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "dev", "Server and node agent in one process on this machine (state in ./.tessera)");
  cmd->add_option("--data-dir", o.data_dir, "Where the state, logs and work go")
      ->capture_default_str();
  cmd->add_option("--listen", o.listen, "Loopback HOST:PORT (port 0: any free one)")
      ->capture_default_str();
  cmd->add_option("--fake-gpus", o.fake_gpus,
                  "Simulated GPUs, e.g. 8xH100-80GB (default: NVML's, else 8xH100-80GB)");
  cmd->add_option("--policy", o.policy, "Placement policy")->capture_default_str();
  cmd->add_flag("--fsync-every-commit", o.store.fsync_every_commit,
                "fsync the state database on every commit (survives power loss; slower)");
  cmd->add_flag("!--no-config", o.write_config,
                "Do not write ~/.tessera/config and ~/.tessera/kubeconfig");
  cmd->add_flag("--plain-http", o.plain_http,
                "Serve plain HTTP instead of HTTPS with the server's own CA (kubectl then sends "
                "no token)");
  cmd->add_option("--nvml-library", o.nvml_library, "Path of libnvidia-ml")->capture_default_str();
  cmd->add_option("--share-isolation", o.share_isolation,
                  "How fractional GPU shares are held to their memory: interposer or none "
                  "(docs/ISOLATION.md)")
      ->check(CLI::IsMember({"interposer", "none"}))
      ->capture_default_str();
  cmd->add_option("--container-runtime", o.container_runtime,
                  "Command that runs tasks with an image (default: podman, docker or nerdctl, "
                  "the first on PATH; none: such tasks fail)");
  AddAccountingFlags(cmd, o.accounting);
  AddQueueingFlags(cmd, o.queueing);
  return cmd;
}

namespace {

// A kubeconfig for the dev cluster: its URL, the CA to trust and the admin token.
std::string Kubeconfig(const std::string& url, const std::string& ca, const std::string& token) {
  const json cfg = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"clusters",
       {{{"name", "tessera-dev"}, {"cluster", {{"server", url}, {"certificate-authority", ca}}}}}},
      {"users", {{{"name", "tessera-admin"}, {"user", {{"token", token}}}}}},
      {"contexts",
       {{{"name", "tessera-dev"},
         {"context", {{"cluster", "tessera-dev"}, {"user", "tessera-admin"}}}}}},
      {"current-context", "tessera-dev"}};
  return cfg.dump(2) + "\n";  // JSON is YAML
}

// The dev node's agent: named dev, labelled, advertised on loopback.
AgentOptions DevAgentOptions(const DevOptions& o) {
  AgentOptions ao;
  ao.name = "dev";
  ao.work_dir = o.data_dir + "/agent";
  ao.heartbeat_seconds = 5;
  ao.labels = "tessera.io/dev=true";
  ao.fake_gpus = o.fake_gpus;
  ao.nvml_library = o.nvml_library;
  ao.container_runtime = o.container_runtime;
  ao.share_isolation = o.share_isolation;
  ao.advertise_address = "127.0.0.1";  // one machine
  return ao;
}

// Prepares the agent on this machine's GPUs, or on simulated ones when NVML finds none (said on
// `out`). Non-zero: the exit code.
int PrepareDevAgent(AgentOptions* ao, AgentSetup* setup, std::ostream& out, std::ostream& err) {
  std::ostringstream agent_err;
  if (ao->fake_gpus.empty() && PrepareAgent(*ao, setup, agent_err) != 0) {
    out << "no GPU found through NVML (" << agent_err.str().substr(0, agent_err.str().size() - 1)
        << "): simulating 8xH100-80GB; the node is labelled tessera.io/simulated=true\n";
    ao->fake_gpus = "8xH100-80GB";
  }
  if (!ao->fake_gpus.empty()) {
    *setup = AgentSetup();
    return PrepareAgent(*ao, setup, err);
  }
  return 0;
}

// The node token of the agent of node `node`, made with the admin's.
Result<std::string> AgentToken(server::ApiServer& api, const std::string& admin,
                               const std::string& node) {
  server::HttpRequest req;
  req.method = "POST";
  req.path = "/apis/tessera.io/v1/tokens";
  req.authorization = "Bearer " + admin;
  req.body = json{{"role", "agent"}, {"node", node}}.dump();
  const server::HttpResponse made = api.Handle(req);
  if (made.status != 201) return Internal(made.body);
  return json::parse(made.body)["token"].get<std::string>();
}

// ~/.tessera/config for the tessera commands, and ~/.tessera/kubeconfig for kubectl (with TLS).
void WriteClientConfigs(const std::string& addr, const std::string& ca, const std::string& admin,
                        std::ostream& out, std::ostream& err) {
  const char* home = std::getenv("HOME");
  const std::string dir = std::string(home ? home : ".") + "/.tessera";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string config = "server: " + addr + "\ntoken: " + admin + "\n";
  if (!ca.empty()) config += "ca: " + ca + "\n";
  if (server::WriteFileDurably(dir + "/config", config, 0600).ok()) {
    out << "wrote " << dir << "/config (server and admin token for the tessera commands)\n";
  } else {
    err << "warning: cannot write " << dir << "/config\n";
  }
  if (!ca.empty()) {
    if (server::WriteFileDurably(dir + "/kubeconfig", Kubeconfig(addr, ca, admin), 0600).ok()) {
      out << "wrote " << dir << "/kubeconfig (for kubectl: KUBECONFIG=" << dir
          << "/kubeconfig kubectl get nodes)\n";
    } else {
      err << "warning: cannot write " << dir << "/kubeconfig\n";
    }
  }
}

}  // namespace

int RunDev(const DevOptions& o, std::ostream& out, std::ostream& err) {
  agent::StandInForInit();  // as a container's PID 1, orphans are reaped by a stand-in
  sigset_t stop = BlockStopSignals();

  const size_t colon = o.listen.rfind(':');
  server::HttpServerOptions http;
  http.host = colon == std::string::npos ? "" : o.listen.substr(0, colon);
  http.port = static_cast<uint16_t>(std::atoi(o.listen.substr(colon + 1).c_str()));
  if (http.host != "127.0.0.1" && http.host != "localhost" && http.host != "::1") {
    err << "error: --listen: tessera dev serves loopback only (use tessera server elsewhere)\n";
    return 2;
  }
  if (http.host == "localhost") http.host = "127.0.0.1";
  server::SchedulingLoopOptions loop_options;
  loop_options.policy = o.policy;
  if (Status st = ApplyQueueingFlags(o.queueing, &loop_options); !st.ok()) {
    err << "error: " << st.message() << "\n";
    return 2;
  }
  std::string ca;
  if (!o.plain_http) {
    auto made = UseOwnCertificate(o.data_dir + "/server", http.host, {}, &http);
    if (!made.ok()) {
      err << "error: " << made.status().message() << "\n";
      return 1;
    }
    ca = std::filesystem::absolute(*made).string();
  }
  Serving cp;
  if (int code = StartControlPlane(o.data_dir + "/server", http, loop_options, o.accounting, &cp,
                                   err, {}, server::ControlPlane::Sqlite(o.store));
      code != 0) {
    return code;
  }
  std::string admin;
  std::getline(std::ifstream(o.data_dir + "/server/admin.token"), admin);
  const std::string addr =
      (ca.empty() ? "" : "https://") + http.host + ":" + std::to_string(cp.http->port());

  // The agent: this machine's GPUs, or simulated ones.
  AgentOptions ao = DevAgentOptions(o);
  AgentSetup setup;
  if (int code = PrepareDevAgent(&ao, &setup, out, err); code != 0) return code;
  auto agent_token = AgentToken(*cp.api, admin, ao.name);
  if (!agent_token.ok()) {
    err << "error: cannot make the agent's token: " << agent_token.status().message() << "\n";
    return 1;
  }
  Endpoint ep;
  ep.host = http.host;
  ep.port = std::to_string(cp.http->port());
  ep.token = *agent_token;
  ep.tls = !ca.empty();
  ep.ca_file = ca;
  // Written once to stop the agent (and then left readable).
  const int stop_fd = eventfd(0, EFD_CLOEXEC);
  if (stop_fd < 0) {
    err << "error: eventfd: " << std::strerror(errno) << "\n";
    return 1;
  }
  // An agent that cannot run (a bad flag, refused by the server) ends dev with its exit code:
  // a dev cluster without its node would take work and never run it.
  std::atomic<int> agent_rc = 0;
  std::thread agent([&] {
    if (const int rc = AgentLoop(ao, ep, setup, stop_fd, out, err); rc != 0) {
      agent_rc = rc;
      kill(getpid(), SIGTERM);
    }
  });

  if (o.write_config) WriteClientConfigs(addr, ca, admin, out, err);
  out << "listening on " << addr << "\n"
      << "state in " << o.data_dir << "; try:\n"
      << "  tessera apply -f tests/data/seeds/01-pod-gpu-training.yaml\n"
      << "  tessera get jobs -A\n"
      << "  tessera top gpus\n"
      << "web console: " << (ca.empty() ? "http://" : "") << addr
      << "/ui/ (sign in with the token in " << o.data_dir << "/server/admin.token"
      << (ca.empty() ? "" : "; the browser must trust " + ca) << ")\n"
      << std::flush;
  int sig = 0;
  sigwait(&stop, &sig);
  const uint64_t one = 1;
  if (write(stop_fd, &one, sizeof one) < 0) err << "warning: cannot stop the agent\n";
  agent.join();
  close(stop_fd);
  cp.Stop();
  if (agent_rc != 0) {
    err << "error: the node's agent stopped; dev stops with it\n";
    return agent_rc;
  }
  out << "stopped" << std::endl;
  return 0;
}

}  // namespace tessera::cli
