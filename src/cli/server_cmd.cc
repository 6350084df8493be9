#include "cli/server_cmd.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "api/quantity.h"
#include "api/time.h"
#include "server/api_server.h"
#include "server/http_server.h"
#include "server/scheduling_loop.h"
#include "server/serving_cert.h"
#include "store/etcd_module.h"

namespace tessera::cli {

CLI::App* AddServerCommand(CLI::App& app, ServerOptions& opts) {
  CLI::App* cmd = app.add_subcommand("server", "Run the control plane: REST API and durable state");
  cmd->add_option("--data-dir", opts.data_dir, "Directory of the state database and admin token")
      ->capture_default_str();
  cmd->add_option("--listen", opts.listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--tls-cert", opts.tls_cert, "PEM certificate chain: serve HTTPS");
  cmd->add_option("--tls-key", opts.tls_key, "PEM private key of the certificate");
  cmd->add_option("--tls-san", opts.tls_sans,
                  "More host names or addresses the server's own serving certificate names");
  cmd->add_flag("--plain-http", opts.plain_http,
                "Serve plain HTTP instead of HTTPS (loopback only, unless --insecure)");
  cmd->add_flag("--insecure", opts.insecure,
                "With --plain-http: allow plain HTTP on a non-loopback address");
  cmd->add_option("--max-body-bytes", opts.max_body_bytes, "Largest request body accepted")
      ->capture_default_str();
  server::ClientLimits& l = opts.limits;
  cmd->add_option("--max-connections-per-token", l.connections_per_client,
                  "Connections one tenant token may hold open")
      ->capture_default_str();
  cmd->add_option("--max-watches-per-token", l.watches_per_client,
                  "Watches one tenant token may hold open")
      ->capture_default_str();
  cmd->add_option("--max-watches-per-namespace", l.watches_per_namespace,
                  "Watches one namespace's tokens may hold open together")
      ->capture_default_str();
  cmd->add_option("--max-requests-per-token", l.requests_per_client,
                  "Requests one tenant token may have in flight")
      ->capture_default_str();
  cmd->add_option("--max-requests-per-namespace", l.requests_per_namespace,
                  "Requests one namespace's tokens may have in flight together")
      ->capture_default_str();
  cmd->add_option("--max-tenant-requests", l.tenant_requests,
                  "Requests all tenants may have in flight together (0: the server's threads "
                  "less two, kept for the admin and the agents)")
      ->capture_default_str();
  cmd->add_option("--max-pods-per-namespace", opts.namespace_limits.pods,
                  "Pods of a namespace's unfinished Jobs, all together (a ResourceQuota's pods "
                  "may set less; 0: no limit of the server's)")
      ->capture_default_str();
  cmd->add_option("--max-objects-per-namespace", opts.namespace_limits.objects,
                  "Jobs, PodGroups, LocalQueues and NamespaceQuotas in a namespace (0: no limit)")
      ->capture_default_str();
  cmd->add_flag("--fsync-every-commit", opts.store.fsync_every_commit,
                "fsync the state database on every commit: acknowledged writes survive power "
                "loss, not only a killed server (slower writes)");
  cmd->add_option("--store", opts.store_url,
                  "Where the state lives: etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for "
                  "TLS) for several replicas on one etcd; default: SQLite in the data directory");
  cmd->add_option("--etcd-ca-file", opts.etcd_ca_file,
                  "PEM CA bundle that verifies etcd's members");
  cmd->add_option("--etcd-cert-file", opts.etcd_cert_file,
                  "PEM client certificate for etcd's --client-cert-auth");
  cmd->add_option("--etcd-key-file", opts.etcd_key_file, "The client certificate's key (PEM)");
  cmd->add_option("--replica-id", opts.replica_id,
                  "On etcd: this replica's name in the scheduler's election (default: HOST:PORT)");
  cmd->add_option("--compact-interval-seconds", opts.compact_interval_seconds,
                  "On etcd: the leader compacts its history this often, to where it was one "
                  "interval before (watches and lists at a revision reach back that far)")
      ->capture_default_str();
  cmd->add_option("--leader-ttl-seconds", opts.leader_ttl_seconds,
                  "On etcd: the election lease; a dead leader is replaced within about this long")
      ->capture_default_str();
  cmd->add_option("--policy", opts.policy, "Placement policy of the scheduling loop")
      ->capture_default_str();
  cmd->add_option("--node-grace-seconds", opts.node_grace_seconds,
                  "Seconds without a heartbeat before a node is NotReady and its work moves")
      ->capture_default_str();
  AddAccountingFlags(cmd, opts.accounting);
  AddQueueingFlags(cmd, opts.queueing);
  return cmd;
}

void AddQueueingFlags(CLI::App* cmd, QueueingFlags& f) {
  cmd->add_flag("--fair-sharing", f.fair_sharing,
                "Kueue's fairSharing.enable: order queues by weighted share and preempt in a "
                "cohort by fair sharing (default: classic preemption, as Kueue's default)");
  cmd->add_option("--fair-sharing-strategies", f.fair_strategies,
                  "Kueue's fairSharing.preemptionStrategies, in order "
                  "(LessThanOrEqualToFinalShare, LessThanInitialShare; default both)")
      ->delimiter(',');
  cmd->add_flag("--no-gpu-quarantine", f.no_gpu_quarantine,
                "Carry out no Xid action: a GPU with a critical Xid is only marked unhealthy by "
                "its agent (default: RESET_GPU and workflow Xids quarantine the GPU and move its "
                "jobs, RESTART_BM drains the node for a reboot)");
  cmd->add_option("--quarantine-breaker-percent", f.quarantine_breaker_percent,
                  "Circuit breaker: automatic quarantines within the window cover at most this "
                  "share of the cluster's GPUs (always one node's worth)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--quarantine-window-minutes", f.quarantine_window_minutes,
                  "The circuit breaker's window")
      ->check(CLI::Range(1, 7 * 24 * 60))
      ->capture_default_str();
  cmd->add_option("--ttl-seconds-after-finished", f.ttl_seconds_after_finished,
                  "For Jobs that set no ttlSecondsAfterFinished: seconds after a Job ends that it "
                  "is deleted (-1: kept); what it used stays in the accounting")
      ->check(CLI::Range(int64_t{-1}, int64_t{10} * 365 * 86400))
      ->capture_default_str();
}

Status ApplyQueueingFlags(const QueueingFlags& f, server::SchedulingLoopOptions* loop) {
  loop->finished_ttl_ms =
      f.ttl_seconds_after_finished < 0 ? -1 : f.ttl_seconds_after_finished * 1000;
  loop->quarantine.enabled = !f.no_gpu_quarantine;
  loop->quarantine.breaker_percent = f.quarantine_breaker_percent;
  loop->quarantine.window_ms = int64_t{f.quarantine_window_minutes} * 60'000;
  loop->cycle.fair_sharing = f.fair_sharing;
  if (f.fair_strategies.empty()) return Status::Ok();
  if (!f.fair_sharing) {
    return InvalidArgument("--fair-sharing-strategies: needs --fair-sharing");
  }
  // As Kueue's configuration validation: one or both, LessThanInitialShare last.
  loop->cycle.fair_strategies.clear();
  for (const std::string& s : f.fair_strategies) {
    if (s == "LessThanOrEqualToFinalShare" && loop->cycle.fair_strategies.empty()) {
      loop->cycle.fair_strategies.push_back(core::FairStrategy::kLessThanOrEqualToFinalShare);
    } else if (s == "LessThanInitialShare" &&
               (loop->cycle.fair_strategies.empty() ||
                loop->cycle.fair_strategies.back() != core::FairStrategy::kLessThanInitialShare)) {
      loop->cycle.fair_strategies.push_back(core::FairStrategy::kLessThanInitialShare);
    } else {
      return InvalidArgument(
          "--fair-sharing-strategies: \"" + s +
          "\" not allowed here; valid: LessThanOrEqualToFinalShare, then optionally "
          "LessThanInitialShare, or LessThanInitialShare alone");
    }
  }
  return Status::Ok();
}

void AddAccountingFlags(CLI::App* cmd, AccountingFlags& f) {
  cmd->add_option("--idle-threshold", f.idle_threshold_pct,
                  "GPU utilisation (%) below which an allocated GPU counts as idle")
      ->capture_default_str();
  cmd->add_option("--idle-window", f.idle_window,
                  "How long a pod's GPUs stay idle before it is an idle pod (event, metric)")
      ->capture_default_str();
  cmd->add_option("--price", f.prices,
                  "MODEL=AMOUNT per GPU-hour, e.g. H100=98 (adds to or replaces the defaults "
                  "T4=8.5, V100=26, A10=18, A100=65; a model matches its longest prefix)");
  cmd->add_option("--currency", f.currency, "Currency of the prices")->capture_default_str();
}

Result<server::AccountingOptions> ToAccountingOptions(const AccountingFlags& f) {
  server::AccountingOptions o;
  if (f.idle_threshold_pct < 0 || f.idle_threshold_pct > 100) {
    return InvalidArgument("--idle-threshold: must be a percentage from 0 to 100");
  }
  o.idle_threshold_pct = f.idle_threshold_pct;
  auto window = api::ParseDurationMs(f.idle_window, "--idle-window", false);
  if (!window.ok()) return window.status();
  o.idle_window_ms = *window;
  for (const std::string& p : f.prices) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--price: expected MODEL=AMOUNT, got \"" + p + "\"");
    }
    auto q = api::ParseQuantity(p.substr(eq + 1), "--price " + p.substr(0, eq));
    if (!q.ok()) return q.status();
    auto milli = api::ToMilli(*q, "--price " + p.substr(0, eq));
    if (!milli.ok()) return milli.status();
    o.prices[p.substr(0, eq)] = (*milli + 5) / 10;  // hundredths, rounded
  }
  if (f.currency.empty()) return InvalidArgument("--currency: must not be empty");
  o.currency = f.currency;
  return o;
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
  http.limits = opts.limits;
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
  const bool own_cert = opts.tls_cert.empty() && opts.tls_key.empty() && !opts.plain_http;
  const bool tls = !opts.plain_http;
  if (opts.plain_http && (!opts.tls_cert.empty() || !opts.tls_key.empty())) {
    err << "error: --plain-http: not with --tls-cert/--tls-key\n";
    return 2;
  }
  if (!addr.is_loopback() && !tls && !opts.insecure) {
    err << "error: --listen " << opts.listen
        << ": plain HTTP beyond loopback needs --insecure (HTTPS is the default)\n";
    return 2;
  }
  std::string ca;
  if (own_cert) {
    auto made = UseOwnCertificate(opts.data_dir, http.host, opts.tls_sans, &http);
    if (!made.ok()) {
      err << "error: " << made.status().message() << "\n";
      return 1;
    }
    ca = std::move(made).value();
  }
  // Block the stop signals before any thread starts, then wait for one of them.
  sigset_t stop = BlockStopSignals();
  server::SchedulingLoopOptions loop_options;
  loop_options.policy = opts.policy;
  loop_options.node_grace_ms = int64_t{opts.node_grace_seconds} * 1000;
  if (Status st = ApplyQueueingFlags(opts.queueing, &loop_options); !st.ok()) {
    err << "error: " << st.message() << "\n";
    return 2;
  }
  auto etcd = EtcdOf(opts);
  if (!etcd.ok()) {
    err << "error: " << etcd.status().message() << "\n";
    return 2;
  }
  Serving cp;
  if (*etcd) {
    // One replica of several runs the scheduling loop: the one etcd elects.
    std::string id = opts.replica_id;
    if (id.empty()) {
      char name[256] = {};
      gethostname(name, sizeof name - 1);
      id = std::string(name) + ":" + std::to_string(http.port);
      if (http.port == 0) id += "-" + std::to_string(getpid());  // a port picked at start
    }
    auto module = store::LoadEtcdModule();
    if (!module.ok()) {
      err << "error: " << module.status().message() << "\n";
      return 1;
    }
    cp.election = (*module)->open_election(**etcd, "scheduler", id, opts.leader_ttl_seconds);
    store::Election* election = cp.election.get();
    loop_options.leadership = [election] { return election->Leading(); };
    loop_options.transitions = [election] { return election->transitions(); };
  }
  if (int code = StartControlPlane(opts.data_dir, http, loop_options, opts.accounting, &cp, err,
                                   opts.namespace_limits, StoreOf(opts, *etcd));
      code != 0) {
    return code;
  }
  if (cp.election) {
    store::Election* election = cp.election.get();
    server::ControlPlane* plane = cp.plane.get();
    const std::string address = http.host + ":" + std::to_string(cp.http->port());
    election->SetReport([plane, election, address] {
      return nlohmann::json{
          {"address", address},
          {"leader", election->Leading().has_value()},
          {"revision", plane->feed().head()},
          {"at", api::FormatTime(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count())}}
          .dump();
    });
    cp.compactor = std::make_unique<store::Compactor>(
        cp.plane->store(), [election] { return election->Leading().has_value(); },
        std::chrono::seconds(opts.compact_interval_seconds));
  }
  if (!ca.empty()) out << "CA: " << ca << std::endl;
  out << "listening on " << (tls ? "https://" : "") << http.host << ":" << cp.http->port()
      << std::endl;
  out << "admin token: " << opts.data_dir << "/admin.token" << std::endl;
  out << "web console: " << (tls ? "https://" : "http://") << http.host << ":" << cp.http->port()
      << "/ui/" << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  cp.Stop();
  out << "stopped" << std::endl;
  return 0;
}

Result<std::string> UseOwnCertificate(const std::string& data_dir, const std::string& host,
                                      const std::vector<std::string>& extra,
                                      server::HttpServerOptions* http) {
  std::vector<std::string> hosts = {"127.0.0.1", "::1", "localhost"};
  if (host != "0.0.0.0" && host != "::" && host != "127.0.0.1" && host != "::1") {
    hosts.push_back(host);
  }
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') hosts.emplace_back(name);
  hosts.insert(hosts.end(), extra.begin(), extra.end());
  auto cert = server::EnsureServingCert(data_dir + "/tls", hosts);
  if (!cert.ok()) return cert.status();
  http->tls_cert_file = cert->cert_file;
  http->tls_key_file = cert->key_file;
  return cert->ca_file;
}

Result<std::optional<store::EtcdOptions>> EtcdOf(const ServerOptions& opts) {
  if (opts.store_url.empty() || opts.store_url == "sqlite") {
    if (!(opts.etcd_ca_file + opts.etcd_cert_file + opts.etcd_key_file).empty()) {
      return InvalidArgument("--etcd-ca-file, --etcd-cert-file, --etcd-key-file: need --store");
    }
    return std::optional<store::EtcdOptions>();
  }
  if (opts.leader_ttl_seconds < 3 || opts.leader_ttl_seconds > 60) {
    return InvalidArgument("--leader-ttl-seconds: between 3 and 60");
  }
  if (opts.compact_interval_seconds < 1) {
    return InvalidArgument("--compact-interval-seconds: at least 1");
  }
  auto etcd = store::ParseEtcdUrl(opts.store_url);
  if (!etcd.ok()) return etcd.status();
  if (opts.store.fsync_every_commit) {
    return InvalidArgument(
        "--fsync-every-commit: etcd syncs every commit itself; it is for SQLite");
  }
  etcd->ca_file = opts.etcd_ca_file;
  etcd->cert_file = opts.etcd_cert_file;
  etcd->key_file = opts.etcd_key_file;
  if (!etcd->tls && !(opts.etcd_ca_file + opts.etcd_cert_file + opts.etcd_key_file).empty()) {
    return InvalidArgument("--etcd-ca-file, --etcd-cert-file, --etcd-key-file: for etcds:// only");
  }
  if (opts.etcd_cert_file.empty() != opts.etcd_key_file.empty()) {
    return InvalidArgument("--etcd-cert-file and --etcd-key-file: give both or neither");
  }
  return std::optional<store::EtcdOptions>(*etcd);
}

server::ControlPlane::StoreOpener StoreOf(const ServerOptions& opts,
                                          const std::optional<store::EtcdOptions>& etcd) {
  if (!etcd) return server::ControlPlane::Sqlite(opts.store);
  return [options = *etcd](const std::string&) -> Result<std::unique_ptr<store::Store>> {
    auto module = store::LoadEtcdModule();
    if (!module.ok()) return module.status();
    return (*module)->open_store({.etcd = options});
  };
}

sigset_t BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

void Serving::Stop() {
  if (http) http->Stop();
  if (loop) loop->Stop();
  compactor.reset();
}

int StartControlPlane(const std::string& data_dir, const server::HttpServerOptions& http,
                      const server::SchedulingLoopOptions& loop_options,
                      const AccountingFlags& accounting, Serving* cp, std::ostream& err,
                      const server::NamespaceLimits& namespace_limits,
                      server::ControlPlane::StoreOpener open_store) {
  auto accounting_options = ToAccountingOptions(accounting);
  if (!accounting_options.ok()) {
    err << "error: " << accounting_options.status().message() << "\n";
    return 2;
  }
  auto plane = server::ControlPlane::Open(data_dir, std::move(open_store));
  if (!plane.ok()) {
    err << "error: " << plane.status().message() << "\n";
    return 1;
  }
  cp->plane = std::move(plane).value();
  cp->plane->accounting().Configure(std::move(accounting_options).value());
  cp->api = std::make_unique<server::ApiServer>(*cp->plane);
  cp->api->set_node_grace_ms(loop_options.node_grace_ms);
  cp->api->set_namespace_limits(namespace_limits);
  auto loop = server::SchedulingLoop::Create(*cp->plane, loop_options);
  if (!loop.ok()) {
    err << "error: --policy: " << loop.status().message() << "\n";
    return 2;
  }
  cp->loop = std::move(loop).value();
  server::ApiServer* handler = cp->api.get();
  server::HttpServerOptions limited = http;
  limited.identify = [handler](const server::HttpRequest& r) { return handler->Identify(r); };
  auto srv = server::HttpServer::Start(
      limited, [handler](const server::HttpRequest& r) { return handler->Handle(r); });
  if (!srv.ok()) {
    err << "error: " << srv.status().message() << "\n";
    return 1;
  }
  cp->http = std::move(srv).value();
  cp->loop->Start();
  return 0;
}

}  // namespace tessera::cli
