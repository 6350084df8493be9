// `tessera server`: the control plane (REST API over the durable store) until SIGINT/SIGTERM.
#ifndef TESSERA_CLI_SERVER_CMD_H_
#define TESSERA_CLI_SERVER_CMD_H_

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>
#include <csignal>
#include <memory>

#include <vector>

#include "server/accountant.h"
#include "server/api_server.h"
#include "server/http_server.h"
#include "server/scheduling_loop.h"
#include "store/compactor.h"
#include "store/election.h"
#include "store/etcd_wire.h"

namespace tessera::cli {

// Accounting and idle detection, as flags of `tessera server` and `tessera dev`.
struct AccountingFlags {
  int64_t idle_threshold_pct = 5;
  std::string idle_window = "30m";
  std::vector<std::string> prices;  // MODEL=PER_GPU_HOUR, over the default table
  std::string currency = "CNY";
};
void AddAccountingFlags(CLI::App* cmd, AccountingFlags& flags);
// The options the flags name; InvalidArgument naming the flag.
Result<server::AccountingOptions> ToAccountingOptions(const AccountingFlags& flags);

// Kueue's fairSharing configuration, as flags of `tessera server` and `tessera dev`.
struct QueueingFlags {
  bool fair_sharing = false;
  // LessThanOrEqualToFinalShare, LessThanInitialShare (Kueue's preemptionStrategies).
  std::vector<std::string> fair_strategies;
  // Xid actions carried out (core/quarantine.h): off with --no-gpu-quarantine; the circuit
  // breaker's share of the cluster's GPUs and its window.
  bool no_gpu_quarantine = false;
  int quarantine_breaker_percent = 10;
  int quarantine_window_minutes = 30;
  // Seconds after it ends that a Job setting no ttlSecondsAfterFinished is deleted; -1: kept.
  int64_t ttl_seconds_after_finished = 86'400;
};
void AddQueueingFlags(CLI::App* cmd, QueueingFlags& flags);
// Sets the admission cycle's options the flags name; InvalidArgument naming the flag.
Status ApplyQueueingFlags(const QueueingFlags& flags, server::SchedulingLoopOptions* loop);

struct ServerOptions {
  std::string data_dir = "tessera-data";
  std::string listen = "127.0.0.1:8443";  // host:port; port 0 picks a free one
  bool insecure = false;                  // allow plain HTTP on a non-loopback address
  bool plain_http = false;                // serve HTTP instead of HTTPS with the own CA
  std::string tls_cert;                   // PEM certificate chain; with tls_key: HTTPS only
  std::string tls_key;
  std::vector<std::string> tls_sans;  // more names the generated serving certificate covers
  size_t max_body_bytes = 4 << 20;
  server::ClientLimits limits;               // per token and per namespace (server/fairness.h)
  server::NamespaceLimits namespace_limits;  // pods and objects per namespace
  store::SqliteOptions store;                // --fsync-every-commit
  // --store: empty for SQLite in the data directory, or etcd://h1:2379,...[/prefix] (etcds://
  // for TLS, with the CA and the client certificate below).
  std::string store_url;
  std::string etcd_ca_file, etcd_cert_file, etcd_key_file;
  // On etcd: this replica's name in the scheduler's election (default: host name and port), and
  // the election lease's TTL.
  std::string replica_id;
  int leader_ttl_seconds = 10;
  int compact_interval_seconds = 300;  // etcd's history kept at least this long
  std::string policy = "fragpack";     // placement policy of the scheduling loop
  int node_grace_seconds = 40;         // missed heartbeats before a node is NotReady
  AccountingFlags accounting;
  QueueingFlags queueing;
};

CLI::App* AddServerCommand(CLI::App& app, ServerOptions& opts);

// Serves HTTPS with the server's own CA (made or reused under <data_dir>/tls): a serving
// certificate for loopback, this host's name, `host` (unless a wildcard) and `extra`. Returns
// the CA's path, for clients to trust.
Result<std::string> UseOwnCertificate(const std::string& data_dir, const std::string& host,
                                      const std::vector<std::string>& extra,
                                      server::HttpServerOptions* http);

// Blocks SIGINT and SIGTERM in this thread (and the threads it starts later) and returns them,
// for sigwait / sigtimedwait.
sigset_t BlockStopSignals();

// The control plane's state over `data_dir` (its store built here and handed in), the API
// server and the scheduling loop over it, and the HTTP server, all started.
struct Serving {
  std::unique_ptr<store::Election> election;  // on etcd; outlives the loop that asks it
  std::unique_ptr<server::ControlPlane> plane;
  std::unique_ptr<server::ApiServer> api;
  std::unique_ptr<server::SchedulingLoop> loop;
  std::unique_ptr<store::Compactor> compactor;  // on etcd: the leader compacts its history
  std::unique_ptr<server::HttpServer> http;
  void Stop();
};
// Errors are printed to `err`; returns the exit code (0: running).
int StartControlPlane(
    const std::string& data_dir, const server::HttpServerOptions& http,
    const server::SchedulingLoopOptions& loop, const AccountingFlags& accounting, Serving* out,
    std::ostream& err, const server::NamespaceLimits& namespace_limits = {},
    server::ControlPlane::StoreOpener open_store = server::ControlPlane::Sqlite());

// The etcd `tessera server` is told to use (nullopt: SQLite in its data directory), and the
// store it opens.
Result<std::optional<store::EtcdOptions>> EtcdOf(const ServerOptions& opts);
server::ControlPlane::StoreOpener StoreOf(const ServerOptions& opts,
                                          const std::optional<store::EtcdOptions>& etcd);

// Serves until SIGINT or SIGTERM; returns the exit code. Prints "listening on HOST:PORT".
int RunServer(const ServerOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SERVER_CMD_H_
