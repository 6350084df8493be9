// tessera_scale: one control plane driven by N simulated nodes and J jobs, measured end to end
// (bench/scale.sh starts the server and runs it; docs/BENCHMARKS.md, "Scale").
//
// Each simulated node speaks the agent's protocol as `tessera agent` does: its own agent token,
// the Node registered with fake GPUs (agent/node_object.h, agent/fake_gpus.h), its Lease renewed
// every 5 s, a watch of the Jobs bound to it, and each pod's state written into its Job (Running
// when it starts, Succeeded with finishedAt when it ends, the Job Succeeded when all its pods
// are; a 409 reads the Job again; a report lost on the way or answered 5xx is written again half a
// second later, as the agent's next tick would), over a kept connection. A task is a timer:
// its command is ["sleep", SECONDS] and nothing runs, so the machine measures the control
// plane, not fork.
//
// Jobs are created at --rate per second (0: as fast as one connection goes) from a mix of one-GPU
// jobs, fractional shares, MIG slices, 2- to 8-GPU jobs, gangs of 2-16 nodes and arrays. An
// admin watch of every Job sees each end. Every second the harness samples the server process
// (CPU, RSS from /proc), the state database's size and the scheduler's cycle histogram
// (/metrics). The results (a timeline per second and a summary) go to --out as JSON, every 10 s
// while the run goes (summary.partial true) and at its end.
#include <sys/types.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "agent/fake_gpus.h"
#include "agent/node_object.h"
#include "api/json_read.h"
#include "api/time.h"
#include "net/http_client.h"

namespace {

using nlohmann::json;
using tessera::api::Member;
using tessera::api::Str;
using tessera::net::Connection;
using tessera::net::Endpoint;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Options {
  std::string server = "127.0.0.1:8443";
  std::string token;
  int nodes = 1000;
  int jobs = 100000;
  double rate = 1000;  // jobs per second; 0: as fast as they go
  double task_min_s = 0.5, task_max_s = 2.0;
  int server_pid = 0;
  std::string data_dir;
  std::string out = "scale.json";
  uint64_t seed = 1;
  int timeout_s = 600;
  int submitters = 1;  // connections creating Jobs side by side
};

// Per-second counts and the samples that go into the timeline.
class Recorder {
 public:
  explicit Recorder(int64_t t0) : t0_(t0) {}
  void Created(const std::string& job, int64_t at) {
    std::lock_guard<std::mutex> l(mu_);
    created_at_[job] = at;
    Bucket(at).created++;
  }
  void Started(const std::string& job, int64_t at) {
    std::lock_guard<std::mutex> l(mu_);
    Bucket(at).started++;
    if (auto it = created_at_.find(job); it != created_at_.end()) {
      latencies_.push_back(at - it->second);
    }
  }
  // Returns how many Jobs have ended.
  int Ended(const std::string& job, int64_t at) {
    std::lock_guard<std::mutex> l(mu_);
    if (!ended_.insert({job, at}).second) return static_cast<int>(ended_.size());
    Bucket(at).completed++;
    return static_cast<int>(ended_.size());
  }
  // A pod's report that did not reach the server (a connection lost, a 5xx): tried again.
  void ReportRetried() { report_retries_++; }
  // One refused for good (a 4xx other than 409): its pod never gets that state.
  void ReportRefused() { report_refused_++; }
  // A lease renewal that failed (tried again a second later).
  void LeaseRetried() { lease_retries_++; }
  void Sample(int64_t at, json s) {
    std::lock_guard<std::mutex> l(mu_);
    samples_.emplace_back(at, std::move(s));
  }
  json Result(const Options& o, int64_t first_create, int64_t last_end) {
    std::lock_guard<std::mutex> l(mu_);
    json timeline = json::array();
    std::map<int64_t, json> by_second;
    for (const auto& [s, b] : buckets_) {
      by_second[s] = {
          {"t", s}, {"created", b.created}, {"started", b.started}, {"completed", b.completed}};
    }
    for (const auto& [at, sample] : samples_) {
      json& row = by_second[(at - t0_) / 1000];
      row["t"] = (at - t0_) / 1000;
      row.update(sample);
    }
    for (auto& [s, row] : by_second) timeline.push_back(row);
    std::vector<int64_t> lat = latencies_;
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) {
      return lat.empty() ? 0 : lat[std::min(lat.size() - 1, static_cast<size_t>(p * lat.size()))];
    };
    int64_t started = 0;
    for (const auto& [s, b] : buckets_) started += b.started;
    const double span_s = std::max<int64_t>(1, last_end - first_create) / 1000.0;
    return {{"options",
             {{"nodes", o.nodes},
              {"jobs", o.jobs},
              {"rate", o.rate},
              {"task_seconds", {o.task_min_s, o.task_max_s}}}},
            {"summary",
             {{"jobs_created", created_at_.size()},
              {"jobs_completed", ended_.size()},
              {"pods_started", started},
              {"seconds_first_create_to_last_end", span_s},
              {"jobs_completed_per_s", static_cast<double>(ended_.size()) / span_s},
              {"pods_started_per_s", static_cast<double>(started) / span_s},
              {"reports_retried", report_retries_.load()},
              {"reports_refused", report_refused_.load()},
              {"lease_retries", lease_retries_.load()},
              {"start_latency_ms", {{"p50", pct(0.5)}, {"p99", pct(0.99)}, {"max", pct(1.0)}}}}},
            {"timeline", timeline}};
  }

 private:
  struct Counts {
    int64_t created = 0, started = 0, completed = 0;
  };
  Counts& Bucket(int64_t at) { return buckets_[(at - t0_) / 1000]; }
  int64_t t0_;
  std::mutex mu_;
  std::unordered_map<std::string, int64_t> created_at_;  // by namespace/name
  std::unordered_map<std::string, int64_t> ended_;
  std::map<int64_t, Counts> buckets_;
  std::vector<int64_t> latencies_;  // creation to start, per pod
  std::vector<std::pair<int64_t, json>> samples_;
  std::atomic<int64_t> report_retries_ = 0, report_refused_ = 0, lease_retries_ = 0;
};

Endpoint EndpointOf(const std::string& server, const std::string& token) {
  Endpoint ep;
  const size_t colon = server.rfind(':');
  ep.host = server.substr(0, colon);
  ep.port = server.substr(colon + 1);
  ep.token = token;
  ep.user_agent = "tessera-scale";
  return ep;
}

// Reads newline-separated watch events from a stream's pieces.
class Lines {
 public:
  template <typename F>
  void Feed(std::string_view data, F&& each) {
    partial_.append(data);
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      each(std::string_view(partial_).substr(start, nl - start));
    }
    partial_.erase(0, start);
  }

 private:
  std::string partial_;
};

std::string JobPath(const json& job) {
  const json& m = Member(job, "metadata");
  return "/apis/tessera.io/v1/namespaces/" + Str(m, "namespace") + "/jobs/" + Str(m, "name");
}

std::string PhaseOf(const json& obj) { return Str(Member(obj, "status"), "phase"); }

// One simulated node: its watch on one thread, its work (lease, reports) on another.
class FakeNode {
 public:
  FakeNode(const Options& o, std::string name, std::string token, Recorder& rec)
      : name_(std::move(name)),
        ep_(EndpointOf(o.server, token)),
        conn_(ep_),
        lease_conn_(ep_),
        rec_(rec) {}

  tessera::Status Register(const std::string& gpus,
                           const std::map<std::string, std::string>& labels) {
    auto fake = tessera::agent::FakeGpus(gpus, name_);
    if (!fake.ok()) return fake.status();
    tessera::agent::NodeIdentity id;
    id.name = name_;
    id.labels = labels;
    id.cpu_milli = 128000;
    id.memory_mib = 1024 * 1024;
    const json node = tessera::agent::NodeObject(id, *fake, tessera::api::FormatTime(WallMs()));
    auto r = conn_.Request("POST", "/apis/tessera.io/v1/nodes", node.dump(), "application/json");
    if (!r.ok()) return r.status();
    if (r->status != 201 && r->status != 200) {
      return tessera::Internal("register " + name_ + ": " + r->body);
    }
    return RenewLease();
  }

  void Start(std::atomic<bool>& stop) {
    stop_ = &stop;
    watcher_ = std::thread([this] { Watch(); });
    worker_ = std::thread([this] { Work(); });
    // The lease on a thread and connection of its own, as the agent's heartbeat: reports that
    // wait on a busy server do not hold it back (a node whose lease lapses is NotReady and its
    // Jobs are scheduled again). A renewal that fails is tried again a second later.
    leaser_ = std::thread([this] {
      int64_t due = NowMs() + 5000;
      while (!stop_->load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (NowMs() < due) continue;
        if (tessera::Status st = RenewLease(); !st.ok()) {
          rec_.LeaseRetried();
          due = NowMs() + 1000;
        } else {
          due = NowMs() + 5000;
        }
      }
    });
  }
  void Detach() {
    watcher_.detach();
    worker_.detach();
    leaser_.detach();
  }

 private:
  struct Due {
    int64_t at;
    std::string path, pod;
    bool end;  // else: start
    double seconds = 0;
  };

  tessera::Status RenewLease() {
    const json lease = {{"apiVersion", "tessera.io/v1"},
                        {"kind", "Lease"},
                        {"metadata", {{"name", name_}}},
                        {"spec", {{"holderIdentity", name_}}}};
    auto r = lease_conn_.Request("PUT", "/apis/tessera.io/v1/leases/" + name_, lease.dump(),
                                 "application/json");
    if (r.ok() && r->status == 404) {
      r = lease_conn_.Request("POST", "/apis/tessera.io/v1/leases", lease.dump(),
                              "application/json");
    }
    if (!r.ok()) return r.status();
    if (r->status != 200 && r->status != 201) {
      return tessera::Internal("lease of " + name_ + ": " + std::to_string(r->status) + " " +
                               r->body);
    }
    return tessera::Status::Ok();
  }

  void Watch() {
    const std::string target =
        "/apis/tessera.io/v1/jobs?watch=true&allowWatchBookmarks=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&timeoutSeconds=3600";
    while (!stop_->load()) {
      Lines lines;
      std::string error;
      (void)tessera::net::RequestStream(
          ep_, "GET", target, "",
          [&](std::string_view data) {
            lines.Feed(data, [&](std::string_view line) { OnEvent(line); });
            return !stop_->load();
          },
          &error);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // A Job's binding to this node seen: each pod newly bound here starts (a pod that left and
  // came back, a gang bound again, starts again), as the agent's work loop does.
  void OnEvent(std::string_view line) {
    json ev = json::parse(line, nullptr, false);
    if (!ev.is_object() || Str(ev, "type") == "BOOKMARK") return;
    const json& job = Member(ev, "object");
    if (!job.is_object() || !Member(job, "metadata").is_object()) return;
    const std::string path = JobPath(job);
    const int64_t now = NowMs();
    std::lock_guard<std::mutex> l(mu_);
    Remember(path, job);
    std::set<std::string> here;
    const json& pods = Member(Member(job, "status"), "pods");
    if (Str(ev, "type") != "DELETED" && PhaseOf(job) == "Admitted" && pods.is_array()) {
      for (const json& pod : pods) {
        if (Str(pod, "node") == name_) here.insert(Str(pod, "name"));
      }
    }
    // Admitted anew (its binding lost, say): each pod bound here starts again, also one bound
    // here before.
    const std::string admitted = Str(Member(job, "status"), "admittedAt");
    if (auto it = admitted_at_.find(path); it != admitted_at_.end() && it->second != admitted) {
      seen_.erase(path);
    }
    std::set<std::string>& seen = seen_[path];
    for (const std::string& pod : here) {
      if (seen.contains(pod)) continue;
      rec_.Started(path, now);
      double seconds = 1;
      const json& tasks = Member(Member(job, "spec"), "tasks");
      const json& cmd = tasks.is_array() && !tasks.empty() ? Member(tasks[0], "command") : json();
      if (cmd.is_array() && cmd.size() == 2 && cmd[1].is_string()) {
        seconds = std::stod(cmd[1].get<std::string>());
      }
      due_.push_back({now, path, pod, false, seconds});
    }
    seen = std::move(here);
    if (seen.empty()) {
      seen_.erase(path);
      admitted_at_.erase(path);
    } else {
      admitted_at_[path] = admitted;
    }
    cv_.notify_one();
  }

  // Keeps the newest copy of a Job this node knows (by resourceVersion).
  void Remember(const std::string& path, const json& job) {
    auto version = [](const json& j) {
      const std::string v = Str(Member(j, "metadata"), "resourceVersion");
      return v.empty() ? 0 : std::stoll(v);
    };
    auto it = known_.find(path);
    if (it == known_.end() || version(it->second) < version(job)) known_[path] = job;
  }

  void Work() {
    while (!stop_->load()) {
      std::vector<Due> ready;
      {
        std::unique_lock<std::mutex> l(mu_);
        int64_t next = NowMs() + 1000;
        for (const Due& d : due_) next = std::min(next, d.at);
        cv_.wait_for(l, std::chrono::milliseconds(std::max<int64_t>(1, next - NowMs())));
        const int64_t now = NowMs();
        std::vector<Due> later;
        for (Due& d : due_) (d.at <= now ? ready : later).push_back(std::move(d));
        due_ = std::move(later);
      }
      for (Due& d : ready) Report(d);
    }
  }

  // Writes the pod's state into its Job as the agent's worker does (agent/worker.cc Report); a
  // Job that kept changing is tried again a little later, as the worker's next tick does.
  void Report(Due& d) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      json job;
      {
        std::lock_guard<std::mutex> l(mu_);
        if (auto it = known_.find(d.path); it != known_.end() && attempt == 0) job = it->second;
      }
      if (job.is_null()) {
        auto got = conn_.Request("GET", d.path);
        if (!got.ok() || got->status >= 500) return Retry(std::move(d));
        if (got->status != 200) return;  // deleted
        job = json::parse(got->body, nullptr, false);
        if (!job.is_object()) return Retry(std::move(d));
      }
      if (PhaseOf(job) != "Admitted" || !Member(Member(job, "status"), "pods").is_array()) return;
      json& status = job["status"];
      bool found = false, all = true;
      for (json& pod : status["pods"]) {
        if (Str(pod, "name") == d.pod && Str(pod, "node") == name_) {
          found = true;
          pod["state"] = d.end ? json{{"phase", "Succeeded"},
                                      {"restarts", 0},
                                      {"finishedAt", tessera::api::FormatTime(WallMs())}}
                               : json{{"phase", "Running"}, {"restarts", 0}};
        }
        all &= Str(Member(pod, "state"), "phase") == "Succeeded";
      }
      if (!found) return;
      if (all && !Member(Member(job, "spec"), "completions").is_number()) {
        status["phase"] = "Succeeded";
        status["finishedAt"] = tessera::api::FormatTime(WallMs());
        status["message"] = "all pods succeeded";
      }
      auto put = conn_.Request("PUT", d.path, job.dump(), "application/json");
      if (!put.ok() || put->status >= 500 || put->status == 429) {
        // Lost on the way, or the server could not take it now: the real agent's next tick
        // writes it again, and so does this one.
        return Retry(std::move(d));
      }
      if (put->status == 200) {
        std::lock_guard<std::mutex> l(mu_);
        if (json stored = json::parse(put->body, nullptr, false); stored.is_object()) {
          Remember(d.path, stored);
        }
        if (!d.end) {
          due_.push_back({NowMs() + static_cast<int64_t>(d.seconds * 1000), d.path, d.pod, true});
        }
        return;
      }
      if (put->status != 409) {
        std::cerr << name_ << ": PUT " << d.path << ": " << put->status << " " << put->body << "\n";
        rec_.ReportRefused();
        return;
      }
      std::lock_guard<std::mutex> l(mu_);
      known_.erase(d.path);
    }
    std::lock_guard<std::mutex> l(mu_);
    d.at = NowMs() + 20 + static_cast<int64_t>(due_.size() % 50);
    due_.push_back(std::move(d));
  }

  // A report tried again half a second later.
  void Retry(Due d) {
    rec_.ReportRetried();
    std::lock_guard<std::mutex> l(mu_);
    known_.erase(d.path);
    d.at = NowMs() + 500;
    due_.push_back(std::move(d));
  }

  std::string name_;
  Endpoint ep_;
  Connection conn_;
  Connection lease_conn_;
  Recorder& rec_;
  std::atomic<bool>* stop_ = nullptr;
  std::thread watcher_, worker_, leaser_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Due> due_;
  std::unordered_map<std::string, std::set<std::string>> seen_;  // per Job: its pods bound here
  std::unordered_map<std::string, std::string> admitted_at_;     // per Job: its admittedAt
  std::unordered_map<std::string, json> known_;
};

// The node pools: whole H100s, A100s with two MIG cards, T4 and A10 shared cards.
struct Pool {
  const char* gpus;
  const char* pool;
};
const Pool kPools[] = {{"8xH100-80GB", "whole"}, {"8xH100-80GB", "whole"}, {"8xH100-80GB", "whole"},
                       {"8xH100-80GB", "whole"}, {"8xH100-80GB", "whole"}, {"8xA100-80GB", "mig"},
                       {"8xA100-80GB", "mig"},   {"8xT4", "shared"},       {"8xT4", "shared"},
                       {"8xA10", "shared"}};

// Job number `i` of the mix.
json MakeJob(int i, std::mt19937_64& rng, const Options& o) {
  // Gangs of 2 to 16 whole 8-GPU nodes, at most half the nodes of the whole pool.
  const int max_members = std::clamp(o.nodes / 4, 2, 16);
  std::uniform_real_distribution<double> secs(o.task_min_s, o.task_max_s);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", secs(rng));
  const json command = {"sleep", buf};
  json task = {{"name", "main"}, {"command", command}};
  json spec = json::object();
  const int r = static_cast<int>(rng() % 100);
  if (r < 45) {
    task["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  } else if (r < 60) {
    task["resources"] = {{"limits", {{"nvidia.com/gpumem", 4096}}}};
  } else if (r < 70) {
    task["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", 1}}}};
  } else if (r < 90) {
    const int gpus[] = {2, 4, 8};
    task["resources"] = {{"limits", {{"nvidia.com/gpu", gpus[rng() % 3]}}}};
  } else if (r < 92) {
    const int members = 2 + static_cast<int>(rng() % (max_members - 1));
    task["name"] = "worker";
    task["replicas"] = members;
    task["resources"] = {{"limits", {{"nvidia.com/gpu", 8}}}};
    spec["minMember"] = members;
  } else {
    task["replicas"] = 4;
    task["restartPolicy"] = "Never";
    task["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
    spec["completions"] = 8;
  }
  spec["tasks"] = json::array({task});
  return {{"apiVersion", "tessera.io/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "j" + std::to_string(i)}, {"namespace", "scale"}}},
          {"spec", spec}};
}

// Server CPU (as a share of one core), RSS and the state database's size, and the scheduler's
// cycles from /metrics, every second.
class Sampler {
 public:
  Sampler(const Options& o, Recorder& rec)
      : o_(o), rec_(rec), conn_(EndpointOf(o.server, o.token)) {}
  void Run(std::atomic<bool>& stop) {
    int64_t last_cpu = Cpu(), last_at = NowMs();
    double last_sum = 0, last_count = 0;
    int64_t last_store = StoreBytes();
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int64_t cpu = Cpu(), at = NowMs(), store = StoreBytes();
      json s = {{"server_cpu_pct", 100.0 * static_cast<double>(cpu - last_cpu) /
                                       static_cast<double>(sysconf(_SC_CLK_TCK)) /
                                       (static_cast<double>(at - last_at) / 1000.0)},
                {"server_rss_mb", RssMb()},
                {"store_mb", static_cast<double>(store) / 1e6},
                {"store_growth_mb_per_s", static_cast<double>(store - last_store) / 1e6 /
                                              (static_cast<double>(at - last_at) / 1000.0)}};
      double sum = 0, count = 0;
      if (Cycles(&sum, &count) && count > last_count) {
        s["cycles"] = count - last_count;
        s["cycle_ms_mean"] = 1000.0 * (sum - last_sum) / (count - last_count);
        last_sum = sum;
        last_count = count;
      }
      rec_.Sample(at, std::move(s));
      last_cpu = cpu;
      last_at = at;
      last_store = store;
    }
  }

 private:
  int64_t Cpu() const {
    std::ifstream f("/proc/" + std::to_string(o_.server_pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (o_.server_pid == 0 || close == std::string::npos) return 0;
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    int64_t utime = 0, stime = 0;
    for (int i = 3; rest >> field; ++i) {
      if (i == 14) utime = std::stoll(field);
      if (i == 15) {
        stime = std::stoll(field);
        break;
      }
    }
    return utime + stime;
  }
  double RssMb() const {
    std::ifstream f("/proc/" + std::to_string(o_.server_pid) + "/status");
    for (std::string line; std::getline(f, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
  }
  int64_t StoreBytes() const {
    int64_t total = 0;
    std::error_code ec;
    if (o_.data_dir.empty()) return 0;
    for (const auto& e : std::filesystem::directory_iterator(o_.data_dir, ec)) {
      if (e.path().filename().string().find(".db") != std::string::npos && e.is_regular_file()) {
        total += static_cast<int64_t>(e.file_size(ec));
      }
    }
    return total;
  }
  bool Cycles(double* sum, double* count) {
    auto r = conn_.Request("GET", "/metrics");
    if (!r.ok() || r->status != 200) return false;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("tessera_scheduling_cycle_duration_seconds_sum", 0) == 0) {
        *sum = std::stod(line.substr(line.rfind(' ') + 1));
      } else if (line.rfind("tessera_scheduling_cycle_duration_seconds_count", 0) == 0) {
        *count = std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return true;
  }
  const Options& o_;
  Recorder& rec_;
  Connection conn_;
};

int Run(const Options& o) {
  const int64_t t0 = NowMs();
  Recorder rec(t0);
  Connection admin(EndpointOf(o.server, o.token));
  auto post = [&](const std::string& path, const json& body) {
    return admin.Request("POST", path, body.dump(), "application/json");
  };
  // Sharing: the "shared" pool's cards fractional, the "mig" pool's first two cards in MIG.
  for (const json& cfg : {json{{"apiVersion", "tessera.io/v1"},
                               {"kind", "GpuSharingConfig"},
                               {"metadata", {{"name", "scale-shared"}}},
                               {"spec",
                                {{"nodeSelector", {{"tessera.io/scale-pool", "shared"}}},
                                 {"shared", json::object()}}}},
                          json{{"apiVersion", "tessera.io/v1"},
                               {"kind", "GpuSharingConfig"},
                               {"metadata", {{"name", "scale-mig"}}},
                               {"spec",
                                {{"nodeSelector", {{"tessera.io/scale-pool", "mig"}}},
                                 {"gpus", {"0", "1"}},
                                 {"mig", {{"layout", {{"1g.10gb", 7}}}}}}}}}) {
    auto r = post("/apis/tessera.io/v1/gpusharingconfigs", cfg);
    if (!r.ok() || (r->status != 201 && r->status != 200 && r->status != 409)) {
      std::cerr << "sharing config: " << (r.ok() ? r->body : r.status().message()) << "\n";
      return 1;
    }
  }
  // The nodes: a token each, registered, watching.
  std::atomic<bool> stop = false;
  std::vector<std::unique_ptr<FakeNode>> nodes;
  for (int i = 0; i < o.nodes; ++i) {
    const std::string name = "sim-" + std::to_string(i);
    auto made = post("/apis/tessera.io/v1/tokens", json{{"role", "agent"}, {"node", name}});
    if (!made.ok() || made->status != 201) {
      std::cerr << "token for " << name << ": "
                << (made.ok() ? made->body : made.status().message()) << "\n";
      return 1;
    }
    auto node = std::make_unique<FakeNode>(o, name, json::parse(made->body)["token"], rec);
    const Pool& pool = kPools[i % 10];
    if (auto s = node->Register(pool.gpus, {{"tessera.io/scale-pool", pool.pool}}); !s.ok()) {
      std::cerr << s.message() << "\n";
      return 1;
    }
    node->Start(stop);
    nodes.push_back(std::move(node));
  }
  std::cerr << o.nodes << " nodes registered in " << (NowMs() - t0) << " ms\n";
  // Every Job's end, from one admin watch.
  std::atomic<int> ended = 0;
  std::atomic<int64_t> last_end = 0;
  std::thread ends([&] {
    Lines lines;
    std::string error;
    (void)tessera::net::RequestStream(
        EndpointOf(o.server, o.token), "GET",
        "/apis/tessera.io/v1/namespaces/scale/jobs?watch=true&timeoutSeconds=36000", "",
        [&](std::string_view data) {
          lines.Feed(data, [&](std::string_view line) {
            json ev = json::parse(line, nullptr, false);
            if (!ev.is_object()) return;
            const json& job = Member(ev, "object");
            const std::string phase = PhaseOf(job);
            if (phase == "Succeeded" || phase == "Failed") {
              last_end = NowMs();
              ended = rec.Ended(JobPath(job), NowMs());
            }
          });
          return !stop.load();
        },
        &error);
  });
  Sampler sampler(o, rec);
  std::thread sampling([&] { sampler.Run(stop); });
  // Submissions at the rate asked, from --submitters connections (job i from connection
  // i mod K), each job drawn from its own seed so that the mix does not depend on K.
  const int64_t first_create = NowMs();
  std::atomic<bool> failed = false;
  std::vector<std::thread> submitters;
  for (int k = 0; k < o.submitters; ++k) {
    submitters.emplace_back([&, k] {
      Connection conn(EndpointOf(o.server, o.token));
      for (int i = k; i < o.jobs && !failed.load(); i += o.submitters) {
        if (o.rate > 0) {
          const int64_t due = first_create + static_cast<int64_t>(i * 1000.0 / o.rate);
          if (const int64_t wait = due - NowMs(); wait > 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(wait));
          }
        }
        std::mt19937_64 rng(o.seed * 1'000'003 + static_cast<uint64_t>(i));
        const json job = MakeJob(i, rng, o);
        rec.Created(JobPath(job), NowMs());
        auto r = conn.Request("POST", "/apis/tessera.io/v1/namespaces/scale/jobs", job.dump(),
                              "application/json");
        if (!r.ok() || r->status != 201) {
          std::cerr << "create " << i << ": " << (r.ok() ? r->body : r.status().message()) << "\n";
          failed = true;
        }
      }
    });
  }
  // The results so far, written every 10 s, so that a run stopped early still leaves them.
  std::thread checkpoints([&] {
    while (!stop.load()) {
      for (int i = 0; i < 100 && !stop.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (stop.load()) break;
      json partial = rec.Result(o, first_create, std::max(last_end.load(), first_create + 1));
      partial["summary"]["partial"] = true;
      const std::string tmp = o.out + ".tmp";
      std::ofstream(tmp) << partial.dump(1) << "\n";
      std::rename(tmp.c_str(), o.out.c_str());
    }
  });
  for (std::thread& t : submitters) t.join();
  if (failed.load()) std::_Exit(1);
  std::cerr << o.jobs << " jobs created in " << (NowMs() - first_create) << " ms\n";
  const int64_t deadline = NowMs() + int64_t{o.timeout_s} * 1000;
  while (ended.load() < o.jobs && NowMs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  checkpoints.join();
  json result = rec.Result(o, first_create, std::max(last_end.load(), first_create + 1));
  result["summary"]["partial"] = false;
  std::ofstream(o.out) << result.dump(1) << "\n";
  std::cerr << result["summary"].dump() << "\n";
  const bool all = ended.load() >= o.jobs;
  if (!all) {
    std::cerr << "only " << ended.load() << " of " << o.jobs
              << " jobs ended in time; some of those "
              << "that did not:\n";
    auto list = admin.Request("GET", "/apis/tessera.io/v1/namespaces/scale/jobs");
    const json items =
        list.ok() ? Member(json::parse(list->body, nullptr, false), "items") : json();
    int shown = 0;
    for (const json& job : items.is_array() ? items : json::array()) {
      const std::string phase = PhaseOf(job);
      if (phase == "Succeeded" || phase == "Failed" || ++shown > 10) continue;
      std::cerr << "  " << JobPath(job) << ": " << phase << " "
                << Str(Member(job, "status"), "message").substr(0, 200);
      const json& pods = Member(Member(job, "status"), "pods");
      for (const json& pod : pods.is_array() ? pods : json::array()) {
        std::cerr << " [" << Str(pod, "name") << " on " << Str(pod, "node") << ": "
                  << Member(pod, "state").dump() << "]";
      }
      std::cerr << "\n";
    }
  }
  // The watches block in reads that end only with the server: leave without joining them.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(all ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Drive one Tessera control plane with simulated nodes and jobs; see bench/scale.sh"};
  app.add_option("--server", o.server, "HOST:PORT of the server (plain HTTP)");
  app.add_option("--token", o.token, "The admin token")->required();
  app.add_option("--nodes", o.nodes, "Simulated nodes of 8 GPUs")->capture_default_str();
  app.add_option("--jobs", o.jobs, "Jobs to create")->capture_default_str();
  app.add_option("--rate", o.rate, "Jobs created per second (0: as fast as they go)")
      ->capture_default_str();
  app.add_option("--task-min-seconds", o.task_min_s, "Shortest task")->capture_default_str();
  app.add_option("--task-max-seconds", o.task_max_s, "Longest task")->capture_default_str();
  app.add_option("--server-pid", o.server_pid, "The server's process, sampled for CPU and RSS");
  app.add_option("--data-dir", o.data_dir, "The server's data directory, sampled for its size");
  app.add_option("--out", o.out, "Where the results go (JSON)")->capture_default_str();
  app.add_option("--submitters", o.submitters, "Connections creating Jobs side by side")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--seed", o.seed, "Seed of the job mix")->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "Seconds to wait for the jobs to end")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return Run(o);
}
