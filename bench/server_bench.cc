// The control plane under load, in one process: `tessera server`'s API over a real loopback
// socket and the SQLite store on the local disk.
//
//   BM_CreateJobs/<clients>: Job creations (POST, validated, committed) acknowledged per second,
//     <clients> keep-alive connections each sending one request at a time from its own thread.
//     Every acknowledged creation is durable against kill -9 (WAL, synchronous=NORMAL).
//   BM_CreateJobsOnEtcd/<clients>: the same with the state in etcd (one member of Debian's etcd
//     on this machine, started by the benchmark; etcd syncs each commit to its disk).
//   BM_CreateJobsSynced/<clients>: BM_CreateJobs with SQLite syncing every commit to its disk
//     (--fsync-every-commit: durable against power loss, as etcd's commits are).
//   BM_WatchFanout/<watchers>: <watchers> watch streams open on the jobs of one namespace; one
//     iteration creates 100 jobs and waits until every watcher has received all 100 events.
//     Counter events_per_second = watchers x 100 / time.
//   BM_HealthzDuringApply/<docs>: one POST /apis/tessera.io/v1/apply of <docs> Job documents (YAML,
//   all or
//     nothing) while another connection polls /healthz every 5 ms; counters healthz_p50_ms and
//     healthz_max_ms are the probe's latencies while the apply ran, apply_ms the apply's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/api_server.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/scheduling_loop.h"
#include "store/etcd_fixture.h"
#include "store/etcd_store.h"

namespace tessera::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

// CPU time of the calling thread, and of the whole process (ns).
int64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}
int64_t ProcessCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// A server over a fresh data directory, removed at the end.
struct Fixture {
  std::string dir;
  std::unique_ptr<ControlPlane> plane;
  std::unique_ptr<ApiServer> api;
  std::unique_ptr<HttpServer> http;
  std::string token;

  // `synced`: SQLite syncs every commit to disk (--fsync-every-commit), as etcd does.
  explicit Fixture(bool on_etcd = false, int http_threads = 8, bool synced = false) {
    char tmpl[] = "/tmp/tessera-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    ControlPlane::StoreOpener open = ControlPlane::Sqlite({.fsync_every_commit = synced});
    if (on_etcd) {
      auto etcd = store::ParseEtcdUrl(store::TestEtcdUrl());
      open = [options = *etcd](const std::string&) {
        return store::OpenEtcdStore({.etcd = options});
      };
    }
    plane = ControlPlane::Open(dir, std::move(open)).value();
    api = std::make_unique<ApiServer>(*plane);
    HttpServerOptions options;
    options.threads = http_threads;
    http =
        HttpServer::Start(options, [this](const HttpRequest& r) { return api->Handle(r); }).value();
    std::ifstream in(dir + "/admin.token");
    std::getline(in, token);
  }
  ~Fixture() {
    http->Stop();
    http.reset();
    api.reset();
    plane.reset();
    std::filesystem::remove_all(dir);
  }
};

std::string JobBody(const std::string& name) {
  return json{{"apiVersion", "tessera.io/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", name}, {"namespace", "bench"}, {"labels", {{"team", "a"}}}}},
              {"spec",
               {{"queue", "main"},
                {"tasks",
                 {{{"name", "worker"},
                   {"replicas", 2},
                   {"command", {"python", "train.py"}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", 1}, {"cpu", "4"}}}}}}}}}}}
      .dump();
}

// A keep-alive connection that posts job creations.
class Poster {
 public:
  Poster(uint16_t port, std::string token) : stream_(io_), token_(std::move(token)) {
    stream_.connect({asio::ip::make_address("127.0.0.1"), port});
  }
  // One request on the kept connection; its status.
  int Send(const std::string& method, const std::string& target, const std::string& body) {
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::authorization, "Bearer " + token_);
    req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buf_, res);
    return res.result_int();
  }
  bool Create(const std::string& name) {
    http::request<http::string_body> req(http::verb::post,
                                         "/apis/tessera.io/v1/namespaces/bench/jobs", 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::authorization, "Bearer " + token_);
    req.body() = JobBody(name);
    req.prepare_payload();
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buf_, res);
    return res.result_int() == 201;
  }

 private:
  asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::string token_;
};

// <clients> threads create Jobs over kept connections; the server runs <threads> request
// threads (8 when not given).
void CreateJobs(benchmark::State& st, bool on_etcd, bool synced = false) {
  Fixture f(on_etcd, st.range(1) > 0 ? static_cast<int>(st.range(1)) : 8, synced);
  const int clients = static_cast<int>(st.range(0));
  std::vector<std::unique_ptr<Poster>> posters;
  for (int c = 0; c < clients; ++c) {
    posters.push_back(std::make_unique<Poster>(f.http->port(), f.token));
  }
  constexpr int kPerClient = 500;
  int64_t next = 0;
  int64_t created = 0;
  for (auto _ : st) {
    std::atomic<int64_t> ok{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      const int64_t base = next + c * kPerClient;
      threads.emplace_back([&, c, base] {
        for (int i = 0; i < kPerClient; ++i) {
          if (posters[c]->Create("j" + std::to_string(base + i))) ++ok;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    next += clients * kPerClient;
    created += ok.load();
    if (ok.load() != clients * kPerClient) st.SkipWithError("a creation was refused");
  }
  st.SetItemsProcessed(created);
}
void BM_CreateJobs(benchmark::State& st) { CreateJobs(st, false); }
void BM_CreateJobsOnEtcd(benchmark::State& st) { CreateJobs(st, true); }
void BM_CreateJobsSynced(benchmark::State& st) { CreateJobs(st, false, true); }
BENCHMARK(BM_CreateJobs)
    ->Args({1, 8})
    ->Args({4, 8})
    ->Args({16, 8})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CreateJobsOnEtcd)
    ->Args({1, 8})
    ->Args({4, 8})
    ->Args({16, 8})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CreateJobsSynced)
    ->Args({1, 8})
    ->Args({4, 8})
    ->Args({16, 8})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_HealthzDuringApply(benchmark::State& st) {
  const int docs = static_cast<int>(st.range(0));
  std::vector<double> latencies;
  double apply_ms = 0;
  int round = 0;
  for (auto _ : st) {
    st.PauseTiming();
    Fixture f;
    std::string yaml;
    for (int i = 0; i < docs; ++i) {
      yaml += "---\napiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: a" +
              std::to_string(round) + "-" + std::to_string(i) +
              ", namespace: bench}\nspec:\n  tasks: [{name: w, command: [\"true\"], "
              "resources: {limits: {nvidia.com/gpu: 1}}}]\n";
    }
    ++round;
    st.ResumeTiming();
    std::atomic<bool> done{false};
    std::thread applier([&] {
      asio::io_context io;
      beast::tcp_stream s(io);
      s.connect({asio::ip::make_address("127.0.0.1"), f.http->port()});
      http::request<http::string_body> req(http::verb::post, "/apis/tessera.io/v1/apply", 11);
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::authorization, "Bearer " + f.token);
      req.set(http::field::content_type, "application/yaml");
      req.body() = yaml;
      req.prepare_payload();
      const auto start = std::chrono::steady_clock::now();
      http::write(s, req);
      beast::flat_buffer buf;
      http::response<http::string_body> res;
      http::read(s, buf, res);
      apply_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (res.result_int() != 200) st.SkipWithError("the apply was refused");
      done = true;
    });
    asio::io_context io;
    beast::tcp_stream probe(io);
    probe.connect({asio::ip::make_address("127.0.0.1"), f.http->port()});
    beast::flat_buffer buf;
    while (!done) {
      http::request<http::string_body> req(http::verb::get, "/healthz", 11);
      req.set(http::field::host, "127.0.0.1");
      const auto start = std::chrono::steady_clock::now();
      http::write(probe, req);
      http::response<http::string_body> res;
      http::read(probe, buf, res);
      if (!done) {
        latencies.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    applier.join();
  }
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    st.counters["healthz_p50_ms"] = latencies[latencies.size() / 2];
    st.counters["healthz_max_ms"] = latencies.back();
    st.counters["probes"] = static_cast<double>(latencies.size());
  }
  st.counters["apply_ms"] = apply_ms / static_cast<double>(st.iterations());
}
BENCHMARK(BM_HealthzDuringApply)
    ->Arg(20000)
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Watch streams read on one I/O thread, counting the events (lines) each has received.
class Watchers {
 public:
  Watchers(uint16_t port, const std::string& token, int n)
      : Watchers(port, std::vector<std::string>(n, token),
                 "/apis/tessera.io/v1/namespaces/bench/jobs?watch=1&resourceVersion=1") {}
  // One watch of `target` per token.
  Watchers(uint16_t port, const std::vector<std::string>& tokens, const std::string& target)
      : counts_(tokens.size()) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      auto& c = conns_.emplace_back(std::make_unique<Conn>(io_));
      c->socket.connect({asio::ip::make_address("127.0.0.1"), port});
      c->request = "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tokens[i] +
                   "\r\n\r\n";
      asio::write(c->socket, asio::buffer(c->request));
      Read(static_cast<int>(i));
    }
    thread_ = std::thread([this] { io_.run(); });
  }
  void Stop() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  // CPU time of the watchers' thread as of its last read (ns).
  int64_t CpuNs() const { return cpu_ns_.load(); }
  // Events received by all watchers.
  int64_t Total() const {
    int64_t n = 0;
    for (const auto& c : counts_) n += c.load();
    return n;
  }
  ~Watchers() { Stop(); }
  // Waits until every watcher has seen at least `events` events.
  void WaitFor(int64_t events) {
    for (auto& c : counts_) {
      while (c.load() < events) std::this_thread::yield();
    }
  }

 private:
  struct Conn {
    explicit Conn(asio::io_context& io) : socket(io) {}
    asio::ip::tcp::socket socket;
    std::string request;
    std::array<char, 16384> buf;
    char last = 0;  // the byte before buf[0]
  };
  void Read(int i) {
    Conn& c = *conns_[i];
    c.socket.async_read_some(asio::buffer(c.buf), [this, i](beast::error_code ec, size_t n) {
      if (ec) return;
      Conn& conn = *conns_[i];
      // Events are JSON lines ending in '\n'; HTTP framing ends its lines in "\r\n".
      int64_t lines = 0;
      for (size_t k = 0; k < n; ++k) {
        const char prev = k == 0 ? conn.last : conn.buf[k - 1];
        lines += conn.buf[k] == '\n' && prev != '\r';
      }
      conn.last = conn.buf[n - 1];
      counts_[i] += lines;
      cpu_ns_ = ThreadCpuNs();
      Read(i);
    });
  }

  asio::io_context io_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<std::atomic<int64_t>> counts_;
  std::thread thread_;
  std::atomic<int64_t> cpu_ns_ = 0;
};

void BM_WatchFanout(benchmark::State& st) {
  Fixture f;
  const int n = static_cast<int>(st.range(0));
  Poster poster(f.http->port(), f.token);
  poster.Create("seed");  // revision > 1 exists, so watches from 1 start streaming at once
  Watchers watchers(f.http->port(), f.token, n);
  watchers.WaitFor(1);
  int64_t created = 1, job = 0;
  for (auto _ : st) {
    for (int i = 0; i < 100; ++i) poster.Create("w" + std::to_string(job++));
    created += 100;
    watchers.WaitFor(created);
  }
  st.counters["events_per_second"] = benchmark::Counter(
      static_cast<double>(n) * 100 * st.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WatchFanout)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A request to `f`'s handler as the admin: a JSON body as JSON, anything else as YAML.
HttpResponse AdminCall(Fixture& f, const char* method, const std::string& path,
                       const std::string& body) {
  HttpRequest r;
  r.method = method;
  r.path = path;
  r.authorization = "Bearer " + f.token;
  r.content_type = body.starts_with("{") ? "application/json" : "application/yaml";
  r.body = body;
  return f.api->Handle(r);
}

// Node n1 with 8 A100s, applied through `f`.
void ApplyEightGpuNode(Fixture& f, const std::string& name = "n1") {
  std::string node = "apiVersion: tessera.io/v1\nkind: Node\nmetadata: {name: " + name +
                     ", labels: {pool: " + name +
                     "}}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi}\n  gpus:\n";
  for (int i = 0; i < 8; ++i) {
    node += "  - {index: " + std::to_string(i) + ", uuid: GPU-" + std::to_string(i) +
            ", model: A100-80GB, memoryMiB: 81920}\n";
  }
  AdminCall(f, "POST", "/apis/tessera.io/v1/apply", node);
}

// One scheduling cycle of the turnover benchmark (bench/turnover.sh): one node of 8 GPUs, the 8
// Jobs running on it just ended (their Succeeded status written, not timed), <pending> one-GPU
// Jobs waiting; the cycle sees the ends and places the next 8. <etcd> 1: the state is in etcd
// (one member of Debian's etcd, started by the benchmark), 0: in SQLite.
void BM_LoopTurnoverCycle(benchmark::State& st) {
  Fixture f(st.range(1) != 0);
  f.api->set_namespace_limits({.pods = 0, .objects = 0});
  auto call = [&](const char* method, const std::string& path, const std::string& body) {
    return AdminCall(f, method, path, body);
  };
  ApplyEightGpuNode(f);
  const int64_t pending = st.range(0);
  const int64_t total = pending + 8 * 64;
  // Names in creation order, applied in parts of 5,000.
  auto name = [](int64_t i) {
    std::string n = std::to_string(i);
    return "t" + std::string(7 - std::min<size_t>(n.size(), 7), '0') + n;
  };
  for (int64_t from = 0; from < total; from += 5'000) {
    std::string jobs;
    for (int64_t i = from; i < std::min(total, from + 5'000); ++i) {
      jobs += "---\napiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: " + name(i) +
              ", namespace: default}\nspec:\n  tasks:\n  - name: main\n    command: [\"true\"]\n"
              "    resources: {limits: {nvidia.com/gpu: 1}}\n";
    }
    if (call("POST", "/apis/tessera.io/v1/apply", jobs).status != 200) {
      st.SkipWithError("cannot apply the jobs");
      return;
    }
  }
  auto loop = SchedulingLoop::Create(*f.plane).value();
  int64_t now = 1'000'000;
  (void)loop->RunOnce(now);
  int64_t running = 0;  // the first of the 8 Jobs admitted last
  for (auto _ : st) {
    st.PauseTiming();
    // The running Jobs end: the 8 admitted last, the next in creation order.
    for (int k = 0; k < 8; ++k, ++running) {
      const std::string path = "/apis/tessera.io/v1/namespaces/default/jobs/" + name(running);
      json job = json::parse(call("GET", path, "").body);
      if (job["status"].value("phase", "") != "Admitted") {
        st.SkipWithError("the cycle placed Jobs out of their order");
        return;
      }
      job["status"]["phase"] = "Succeeded";
      job["status"]["finishedAt"] = FormatTime(now);
      call("PUT", path, job.dump());
    }
    now += 100;
    st.ResumeTiming();
    auto summary = loop->RunOnce(now);
    if (!summary.ok() || summary->admitted != 8) {
      st.SkipWithError("the cycle did not place the next 8");
      return;
    }
  }
  st.counters["pending"] = static_cast<double>(pending);
}
BENCHMARK(BM_LoopTurnoverCycle)->Args({1000, 0})->Iterations(60)->Unit(benchmark::kMillisecond);
// The admission cycle at 100,000 pending, on SQLite and on etcd.
BENCHMARK(BM_LoopTurnoverCycle)
    ->Args({100'000, 0})
    ->Args({100'000, 1})
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

// One large tenant and another's admission (issue 43): namespace `big` holds <jobs> Jobs of
// <pods> one-GPU pods each, for node `big` (8 GPUs); the other tenant's Jobs go to node `small`.
// With <elastic> 0 the Jobs are gangs, which never fit; with 1 (minMember 1) the first runs
// with 8 pods and its others wait, the rest are pending. Each iteration the other tenant's last
// Job is deleted and a new one arrives (neither timed); the cycle that admits it is timed.
void BM_LargeTenantCycle(benchmark::State& st) {
  Fixture f;
  // The cycle itself is measured: the server's limits per namespace (which refuse 2.56 million
  // pods in one namespace by default) are lifted.
  f.api->set_namespace_limits({.pods = 0, .objects = 0});
  auto call = [&](const char* method, const std::string& path, const std::string& body) {
    return AdminCall(f, method, path, body);
  };
  ApplyEightGpuNode(f, "big");
  ApplyEightGpuNode(f, "small");
  for (int64_t i = 0; i < st.range(0); ++i) {
    std::string big = "apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: big" +
                      std::to_string(i) + ", namespace: big}\nspec:\n" +
                      (st.range(2) ? "  minMember: 1\n" : "") + "  tasks:\n";
    // Tasks of at most 10,000 replicas each (the per-task limit).
    for (int64_t left = st.range(1), t = 0; left > 0; left -= 10'000, ++t) {
      big += "  - name: t" + std::to_string(t) +
             "\n    replicas: " + std::to_string(std::min<int64_t>(left, 10'000)) +
             "\n    command: [\"true\"]\n    nodeSelector: {pool: big}\n"
             "    resources: {limits: {nvidia.com/gpu: 1}}\n";
    }
    if (call("POST", "/apis/tessera.io/v1/apply", big).status != 200) {
      st.SkipWithError("cannot apply the large tenant's jobs");
      return;
    }
  }
  auto loop = SchedulingLoop::Create(*f.plane).value();
  int64_t now = 1'000'000;
  (void)loop->RunOnce(now);
  int64_t n = 0;
  for (auto _ : st) {
    st.PauseTiming();
    if (n > 0) {
      call("DELETE", "/apis/tessera.io/v1/namespaces/small/jobs/small" + std::to_string(n - 1), "");
    }
    const std::string name = "small" + std::to_string(n++);
    call("POST", "/apis/tessera.io/v1/apply",
         "apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: " + name +
             ", namespace: small}\nspec:\n  tasks:\n  - name: main\n    command: [\"true\"]\n"
             "    nodeSelector: {pool: small}\n    resources: {limits: {nvidia.com/gpu: 1}}\n");
    now += 100;
    st.ResumeTiming();
    auto summary = loop->RunOnce(now);
    st.PauseTiming();
    if (!summary.ok() || summary->admitted != 1) {
      st.SkipWithError("the cycle did not admit the small tenant's job");
      return;
    }
    st.ResumeTiming();
  }
  st.counters["pending_pods"] = static_cast<double>(st.range(0) * st.range(1));
}
// 2.56 million pods: 32 Jobs of 80,000 (a Job has at most 100,000).
BENCHMARK(BM_LargeTenantCycle)
    ->Args({4, 250, 0})
    ->Args({32, 80'000, 0})
    ->Args({4, 250, 1})
    ->Args({32, 80'000, 1})
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

// <agents> idle node agents against one server, as `tessera agent` keeps them: each holds its
// watch of the Jobs bound to its node (the watch-list protocol, with bookmarks) and renews its
// Lease every 5 s over a kept connection. 1,000 Jobs are bound to another node, 100 of them
// rewritten over HTTP each second. One iteration is 10 s. Counters: server_cpu_percent (the
// process's CPU less the client threads', as a share of one core), lease_renewals and
// watch_events (received by the agents). /0 is the same cluster without agents: the difference
// is what the agents cost.
void BM_IdleAgents(benchmark::State& st) {
  Fixture f;
  const int agents = static_cast<int>(st.range(0));
  auto call = [&](const char* method, const std::string& path, const std::string& body,
                  const std::string& token) {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.authorization = "Bearer " + token;
    r.content_type = "application/json";
    r.body = body;
    return f.api->Handle(r);
  };
  std::vector<std::string> tokens;
  for (int i = 0; i < agents; ++i) {
    const HttpResponse made =
        call("POST", "/apis/tessera.io/v1/tokens",
             json{{"role", "agent"}, {"node", "n" + std::to_string(i)}}.dump(), f.token);
    tokens.push_back(json::parse(made.body)["token"]);
  }
  // Work elsewhere: 1,000 Jobs bound to node "busy".
  for (int j = 0; j < 1000; ++j) {
    const std::string name = "other-" + std::to_string(j);
    call("POST", "/apis/tessera.io/v1/namespaces/bench/jobs",
         json{{"apiVersion", "tessera.io/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", name}, {"namespace", "bench"}}},
              {"spec", {{"tasks", {{{"name", "main"}, {"command", {"true"}}}}}}}}
             .dump(),
         f.token);
  }
  // Each second, 100 of them change (their pods' ports, say), written over HTTP by the admin.
  Poster admin(f.http->port(), f.token);
  auto churn = [&](int round) {
    for (int j = (round % 10) * 100; j < (round % 10) * 100 + 100 || round == 0; ++j) {
      if (j >= 1000) break;
      const std::string name = "other-" + std::to_string(j);
      admin.Send("PUT", "/apis/tessera.io/v1/namespaces/bench/jobs/" + name,
                 json{{"apiVersion", "tessera.io/v1"},
                      {"kind", "Job"},
                      {"metadata", {{"name", name}, {"namespace", "bench"}}},
                      {"spec", {{"tasks", {{{"name", "main"}, {"command", {"true"}}}}}}},
                      {"status",
                       {{"phase", "Admitted"},
                        {"pods", {{{"name", "main-0"}, {"node", "busy"}, {"port", round}}}}}}}
                     .dump());
    }
  };
  churn(0);
  Watchers watchers(f.http->port(), tokens,
                    "/apis/tessera.io/v1/jobs?watch=1&allowWatchBookmarks=true"
                    "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
  watchers.WaitFor(1);  // each has its initial bookmark
  std::atomic<bool> stop = false;
  std::atomic<int64_t> renewals = 0, renew_cpu_ns = 0;
  std::thread renewer([&] {
    if (agents == 0) return;
    std::vector<std::unique_ptr<Poster>> conns;
    for (int i = 0; i < agents; ++i)
      conns.push_back(std::make_unique<Poster>(f.http->port(), tokens[i]));
    const auto start = std::chrono::steady_clock::now();
    for (int64_t k = 0; !stop; ++k) {
      // Agent k % agents renews at k * 5 s / agents.
      const auto at = start + std::chrono::microseconds(k * 5'000'000 / agents);
      std::this_thread::sleep_until(at);
      const int i = static_cast<int>(k % agents);
      const std::string name = "n" + std::to_string(i);
      if (conns[i]->Send("PUT", "/apis/tessera.io/v1/leases/" + name,
                         json{{"apiVersion", "tessera.io/v1"},
                              {"kind", "Lease"},
                              {"metadata", {{"name", name}}},
                              {"spec", {{"holderIdentity", name}}}}
                             .dump()) == 404) {
        conns[i]->Send("POST", "/apis/tessera.io/v1/leases",
                       json{{"apiVersion", "tessera.io/v1"},
                            {"kind", "Lease"},
                            {"metadata", {{"name", name}}},
                            {"spec", {{"holderIdentity", name}}}}
                           .dump());
      }
      ++renewals;
      renew_cpu_ns = ThreadCpuNs();
    }
  });
  if (agents > 0) std::this_thread::sleep_for(std::chrono::seconds(6));  // every lease exists
  int64_t churn_cpu_ns = 0;
  for (auto _ : st) {
    const int64_t cpu0 = ProcessCpuNs(), renewed0 = renewals, events0 = watchers.Total();
    const int64_t churn0 = ThreadCpuNs(), renew0 = renew_cpu_ns, watch0 = watchers.CpuNs();
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 1; s <= 10; ++s) {
      churn(s);  // other nodes' Jobs change; not these agents'
      std::this_thread::sleep_until(t0 + std::chrono::seconds(s));
    }
    churn_cpu_ns = ThreadCpuNs() - churn0;
    const double wall_ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    const int64_t cpu1 = ProcessCpuNs();
    stop = true;
    renewer.join();
    watchers.Stop();
    const double server_ns = static_cast<double>(cpu1 - cpu0 - (renew_cpu_ns - renew0) -
                                                 (watchers.CpuNs() - watch0) - churn_cpu_ns);
    st.counters["server_cpu_percent"] = 100.0 * server_ns / wall_ns;
    st.counters["lease_renewals"] = static_cast<double>(renewals - renewed0);
    st.counters["watch_events"] = static_cast<double>(watchers.Total() - events0);
  }
}
BENCHMARK(BM_IdleAgents)->Arg(0)->Arg(1000)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// /metrics with <gpus> GPUs (8 per node, telemetry for each) and one single-GPU job bound to
// every other GPU. With <heartbeats> 1, every node reports (a new heartbeat and telemetry)
// between two scrapes, as when scrapes are further apart than heartbeats: what changed is parsed
// again. The writes are not timed.
void BM_RenderMetrics(benchmark::State& st) {
  Fixture f;
  const int gpus = static_cast<int>(st.range(0));
  std::vector<store::Write> writes;
  for (int n = 0; n < gpus / 8; ++n) {
    const std::string name = "node-" + std::to_string(n);
    json list = json::array(), telemetry = json::array();
    for (int g = 0; g < 8; ++g) {
      list.push_back({{"index", g},
                      {"uuid", "GPU-" + std::to_string(n * 8 + g)},
                      {"model", "H100-80GB"},
                      {"memoryMiB", 81920}});
      telemetry.push_back({{"index", g},
                           {"utilizationPct", (n + g) % 100},
                           {"memoryUsedMiB", 1024},
                           {"memoryFreeMiB", 80896},
                           {"temperatureC", 40},
                           {"powerMw", 300000},
                           {"smClockMhz", 1980},
                           {"xidCount", 0}});
    }
    json node = {{"apiVersion", "tessera.io/v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}}},
                 {"status",
                  {{"allocatable", {{"cpu", "96"}, {"memory", "1Ti"}}},
                   {"gpus", list},
                   {"telemetry", telemetry},
                   {"heartbeat", "2026-01-01T00:00:00.000Z"}}}};
    writes.push_back({store::Write::Op::kPut, {"Node", "", name}, node.dump(), {}});
    for (int g = 0; g < 8; g += 2) {
      const std::string job = "j-" + std::to_string(n * 8 + g);
      json pod = {{"name", "main-0"},
                  {"node", name},
                  {"devices",
                   {{{"gpu", g},
                     {"uuid", "GPU-" + std::to_string(n * 8 + g)},
                     {"kind", "whole"},
                     {"gpuMilli", 1000}}}}};
      json j = {
          {"apiVersion", "tessera.io/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", job}, {"namespace", "team-" + std::to_string(n % 20)}}},
          {"spec", {{"tasks", {{{"name", "main"}}}}}},
          {"status",
           {{"phase", "Admitted"}, {"queue", "q" + std::to_string(n % 100)}, {"pods", {pod}}}}};
      writes.push_back(
          {store::Write::Op::kPut, {"Job", j["metadata"]["namespace"], job}, j.dump(), {}});
    }
  }
  if (!f.plane->store().Commit(writes).ok()) st.SkipWithError("setup failed");
  std::vector<store::Write> beats;
  for (const store::Write& w : writes) {
    if (w.key.kind == "Node") beats.push_back(w);
  }
  size_t bytes = 0;
  int64_t beat = 0;
  for (auto _ : st) {
    if (st.range(1) == 1) {
      st.PauseTiming();
      ++beat;
      for (store::Write& w : beats) {
        json node = json::parse(w.body);
        node["status"]["heartbeat"] = FormatTime(1'767'225'600'000 + beat * 1000);
        node["status"]["telemetry"][0]["utilizationPct"] = beat % 100;
        w.body = node.dump();
      }
      if (!f.plane->Commit(beats).ok()) st.SkipWithError("heartbeat failed");
      st.ResumeTiming();
    }
    const std::string text = RenderMetrics(f.plane->objects(), f.plane->leases(),
                                           f.plane->metrics(), {}, 1'767'225'600'000);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  st.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderMetrics)
    ->ArgNames({"gpus", "heartbeats"})
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tessera::server
