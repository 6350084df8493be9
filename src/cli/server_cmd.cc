#include "cli/server_cmd.h"

#include <signal.h>

#include <boost/asio/ip/address.hpp>

#include "server/api_server.h"
#include "server/http_server.h"
#include "server/scheduling_loop.h"

namespace tessera::cli {

CLI::App* AddServerCommand(CLI::App& app, ServerOptions& opts) {
  CLI::App* cmd = app.add_subcommand("server", "Run the control plane: REST API and durable state");
  cmd->add_option("--data-dir", opts.data_dir, "Directory of the state database and admin token")
      ->capture_default_str();
  cmd->add_option("--listen", opts.listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--tls-cert", opts.tls_cert, "PEM certificate chain: serve HTTPS");
  cmd->add_option("--tls-key", opts.tls_key, "PEM private key of the certificate");
  cmd->add_flag("--insecure", opts.insecure, "Allow plain HTTP on a non-loopback address");
  cmd->add_option("--max-body-bytes", opts.max_body_bytes, "Largest request body accepted")
      ->capture_default_str();
  cmd->add_option("--policy", opts.policy, "Placement policy of the scheduling loop")
      ->capture_default_str();
  cmd->add_option("--node-grace-seconds", opts.node_grace_seconds,
                  "Seconds without a heartbeat before a node is NotReady and its work moves")
      ->capture_default_str();
  return cmd;
}

int RunServer(const ServerOptions& opts, std::ostream& out, std::ostream& err) {
  const size_t colon = opts.listen.rfind(':');
  if (colon == std::string::npos) {
    err << "error: --listen: expected HOST:PORT, got \"" << opts.listen << "\"\n";
    return 2;
  }
  server::HttpServerOptions http;
  http.host = opts.listen.substr(0, colon);
  http.max_body_bytes = opts.max_body_bytes;
  http.tls_cert_file = opts.tls_cert;
  http.tls_key_file = opts.tls_key;
  try {
    const int port = std::stoi(opts.listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    http.port = static_cast<uint16_t>(port);
  } catch (const std::exception&) {
    err << "error: --listen: invalid port in \"" << opts.listen << "\"\n";
    return 2;
  }
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(http.host, ec);
  if (ec) {
    err << "error: --listen: invalid address \"" << http.host << "\"\n";
    return 2;
  }
  const bool tls = !opts.tls_cert.empty() || !opts.tls_key.empty();
  if (!addr.is_loopback() && !tls && !opts.insecure) {
    err << "error: --listen " << opts.listen
        << ": listening beyond loopback needs TLS (--tls-cert and --tls-key), or --insecure to "
           "accept plain HTTP\n";
    return 2;
  }
  // Block the stop signals before any thread starts, then wait for one of them.
  sigset_t stop = BlockStopSignals();
  server::SchedulingLoopOptions loop_options;
  loop_options.policy = opts.policy;
  loop_options.node_grace_ms = int64_t{opts.node_grace_seconds} * 1000;
  ControlPlane cp;
  if (int code = StartControlPlane(opts.data_dir, http, loop_options, &cp, err); code != 0) {
    return code;
  }
  out << "listening on " << (tls ? "https://" : "") << http.host << ":" << cp.http->port()
      << std::endl;
  out << "admin token: " << opts.data_dir << "/admin.token" << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  cp.Stop();
  out << "stopped" << std::endl;
  return 0;
}

sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

void ControlPlane::Stop() {
  if (http) http->Stop();
  if (loop) loop->Stop();
}

int StartControlPlane(const std::string& data_dir, const server::HttpServerOptions& http,
                      const server::SchedulingLoopOptions& loop_options, ControlPlane* cp,
                      std::ostream& err) {
  auto api = server::ApiServer::Open(data_dir);
  if (!api.ok()) {
    err << "error: " << api.status().message() << "\n";
    return 1;
  }
  cp->api = std::move(api).value();
  auto loop = server::SchedulingLoop::Create(*cp->api, loop_options);
  if (!loop.ok()) {
    err << "error: --policy: " << loop.status().message() << "\n";
    return 2;
  }
  cp->loop = std::move(loop).value();
  server::ApiServer* handler = cp->api.get();
  auto srv = server::HttpServer::Start(
      http, [handler](const server::HttpRequest& r) { return handler->Handle(r); });
  if (!srv.ok()) {
    err << "error: " << srv.status().message() << "\n";
    return 1;
  }
  cp->http = std::move(srv).value();
  cp->loop->Start();
  return 0;
}

}  // namespace tessera::cli
