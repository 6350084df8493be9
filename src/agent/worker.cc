#include "agent/worker.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>

#include "agent/cgroups.h"
#include "agent/share_pids.h"
#include "api/job_array.h"
#include "api/json_read.h"
#include "api/pod_failure_policy.h"
#include "api/time.h"

namespace tessera::agent {

using api::Member;
using api::Str;
using nlohmann::json;

namespace {

// The API path of the Job pod `a` belongs to.
std::string JobPath(const std::string& ns, const std::string& name) {
  return "/apis/tessera.io/v1/namespaces/" + ns + "/jobs/" + name;
}
std::string JobPath(const Assignment& a) { return JobPath(a.ns, a.job); }

// An object's metadata.resourceVersion as a number (0 when it has none).
int64_t Version(const json& obj) {
  const std::string rv = Str(Member(obj, "metadata"), "resourceVersion");
  int64_t v = 0;
  std::from_chars(rv.data(), rv.data() + rv.size(), v);
  return v;
}

}  // namespace

Worker::Worker(ApiClient& api, const NodeGpus& gpus, WorkerOptions options)
    : api_(api),
      gpus_(gpus),
      options_(std::move(options)),
      runner_(options_.root + "/run"),
      mps_(options_.mps_control, options_.root) {
  // What tasks may not read: the agent's state, its logs and other pods' work. Tasks reach
  // their own working directory (0700, theirs) through directories they may pass, not list.
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& [dir, mode] :
       {std::pair{options_.root,
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec},
        std::pair{options_.root + "/work",
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec},
        std::pair{options_.root + "/logs", fs::perms::owner_all},
        std::pair{options_.root + "/run", fs::perms::owner_all}}) {
    fs::create_directories(dir, ec);
    // A directory shared by every user (sticky, as /tmp) is not the agent's to close.
    const fs::perms now = fs::status(dir, ec).permissions();
    if (!ec && (now & fs::perms::sticky_bit) == fs::perms::none) fs::permissions(dir, mode, ec);
  }
  runner_.Adopt();
}

TaskUsers Worker::UsersFor(const std::string& key) {
  TaskUsers users;
  const int64_t base = options_.task_uid_base, count = options_.task_uid_count;
  if (count <= kMpsTaskUids || geteuid() != 0) return users;
  for (const GpuInfo& g : gpus_.gpus) {
    users.mps[g.uuid] = base + count - 1 - static_cast<int64_t>(g.index % kMpsTaskUids);
  }
  const int64_t slots = count - kMpsTaskUids;
  // The uid it was given, kept in the run directory while the pod lives (an adopted pod keeps
  // it); else its Job's; else the first free one from a slot the Job's key hashes to.
  const std::string file = runner_.StateFile(key, ".uid");
  int64_t uid = -1;
  if (std::ifstream in(file); in >> uid && uid >= base && uid < base + slots) {
    users.pod = uid;
    return users;
  }
  // The pods of one Job share its uid: they work together (MPI's daemons accept only their
  // launcher's own user). Other Jobs' uids are taken.
  auto job_of = [](const std::string& k) { return k.substr(0, k.rfind('/')); };
  const std::string job = job_of(key);
  std::set<int64_t> used;
  for (const auto& [k, p] : pods_) {
    if (k == key || p.uid < 0) continue;
    if (job_of(k) == job) {
      users.pod = p.uid;
      std::ofstream(file, std::ios::trunc) << users.pod << "\n";
      return users;
    }
    used.insert(p.uid);
  }
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : job) hash = (hash ^ c) * 1099511628211ULL;
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t candidate = base + static_cast<int64_t>((hash + i) % slots);
    if (!used.contains(candidate)) {
      users.pod = candidate;
      break;
    }
  }
  std::ofstream(file, std::ios::trunc) << users.pod << "\n";
  return users;
}

void Worker::Fence(int64_t now_ms) {
  fenced_ = true;
  for (const std::string& key : runner_.Keys()) runner_.Stop(key, now_ms, GraceMs(key));
}

int64_t Worker::GraceMs(const std::string& key) const {
  auto it = pods_.find(key);
  if (it == pods_.end()) return options_.stop_grace_ms;
  const json& task = it->second.assignment.task;
  const json seconds =
      task.is_object() ? task.value("terminationGracePeriodSeconds", json()) : json();
  return seconds.is_number_integer() ? seconds.get<int64_t>() * 1000 : options_.stop_grace_ms;
}

void Worker::AdoptPod(PodState& p) {
  const std::string& key = p.assignment.key;
  p.log_path = PodLogPath(options_.root, key, p.assignment.uid);
  std::ifstream shipped(runner_.StateFile(key, ".shipped"));
  if (!(shipped >> p.log_offset)) p.log_offset = 0;
  int64_t at = 0;
  for (std::string token; shipped >> at >> token;) p.run_starts.emplace_back(at, token);
  const json& stored = p.assignment.state;
  const json restarts = stored.is_object() ? stored.value("restarts", json()) : json();
  p.restarts = restarts.is_number_integer() ? restarts.get<int>() : 0;
  const json failures = stored.is_object() ? stored.value("failures", json()) : json();
  p.failures = failures.is_number_integer() ? failures.get<int>() : 0;
  if (stored.is_object() && stored.value("phase", json()) == "Running") {
    p.state = stored;
    p.reported = p.state;
  } else {
    p.state = {{"phase", "Running"}, {"restarts", p.restarts}};
    if (p.failures > 0) p.state["failures"] = p.failures;
  }
  if (!options_.cgroup_root.empty()) {
    p.cgroup_dir = CgroupDir(options_.cgroup_root, key, options_.cgroup_agent);
  }
  // As it was started, for commands run in it.
  const TaskUsers users = UsersFor(key);
  p.uid = users.pod;
  auto spec = SpecFor(p.assignment, gpus_, options_.node, options_.root, options_.container_runtime,
                      IsolationFor(p.assignment), users);
  if (spec.ok()) {
    if (!p.cgroup_dir.empty()) spec->cgroup_procs = p.cgroup_dir + "/cgroup.procs";
    exec_targets_.Set(key, *std::move(spec));
  }
}

ShareIsolation Worker::IsolationFor(const Assignment& a) {
  ShareIsolation isolation;
  isolation.interposer = options_.share_interposer;
  for (const json& d : a.devices) {
    if (d.value("kind", "") != "share" || d.value("mps", false) != true) continue;
    const std::string uuid = d.value("uuid", "");
    const GpuInfo* gpu = nullptr;
    for (const GpuInfo& g : gpus_.gpus) {
      if (g.uuid == uuid) gpu = &g;
    }
    if (gpu == nullptr) continue;
    auto dir = mps_.Ensure(*gpu);
    if (dir.ok()) {
      isolation.mps[uuid] = *dir;
      mps_told_.erase(uuid);
    } else if (mps_told_.insert(uuid).second && options_.notice) {
      options_.notice("MPS asked for (GpuSharingConfig shared.mps), but " + dir.status().message() +
                      "; its shares are held by " +
                      (options_.share_interposer.empty() ? "nothing" : "the share interposer"));
    }
  }
  return isolation;
}

void Worker::StartPod(PodState& p) { StartPods({&p}); }

void Worker::StartPods(const std::vector<PodState*>& pods) {
  std::vector<PodState*> starting;
  std::vector<ProcessSpec> specs;
  for (PodState* p : pods) {
    std::optional<Result<ProcessSpec>> prepared = PreparePod(*p);
    if (!prepared) continue;  // not started: the next round tries again
    Result<ProcessSpec>& spec = *prepared;
    if (!spec.ok()) {
      p->state = {
          {"phase", "Failed"}, {"restarts", p->restarts}, {"message", spec.status().message()}};
      p->finished = true;
      continue;
    }
    starting.push_back(p);
    specs.push_back(std::move(spec).value());
  }
  std::vector<const ProcessSpec*> each;
  // Where each run's output will begin: the log's end before it starts (it may write at once).
  std::vector<int64_t> log_ends;
  for (const ProcessSpec& spec : specs) {
    each.push_back(&spec);
    std::error_code ec;
    const auto size = std::filesystem::file_size(spec.log_path, ec);
    log_ends.push_back(ec ? 0 : static_cast<int64_t>(size));
  }
  const std::vector<Status> started = runner_.StartAll(each);
  for (size_t i = 0; i < starting.size(); ++i) {
    PodState& p = *starting[i];
    if (started[i].ok()) {
      exec_targets_.Set(p.assignment.key, specs[i]);
      // A new run of its container.
      p.run_starts.emplace_back(log_ends[i], options_.node + "." + std::to_string(now_ms_) + "." +
                                                 std::to_string(++runs_started_));
      SaveShipped(p);
      p.run_started_ms = now_ms_;
      p.restart_at_ms = 0;
      p.state = {{"phase", "Running"}, {"restarts", p.restarts}};
      if (!p.limits.empty()) p.state["limits"] = p.limits;
    } else {
      p.state = {{"phase", "Failed"}, {"restarts", p.restarts}, {"message", started[i].message()}};
      p.finished = true;
    }
  }
}

std::optional<Result<ProcessSpec>> Worker::PreparePod(PodState& p) {
  const TaskUsers users = UsersFor(p.assignment.key);
  p.uid = users.pod;
  auto spec = SpecFor(p.assignment, gpus_, options_.node, options_.root, options_.container_runtime,
                      IsolationFor(p.assignment), users);
  if (!spec.ok()) return Result<ProcessSpec>(spec.status());
  {
    // The directories above the pod's own, <root>/work/<ns>/<job> and <root>/work/<ns>, are
    // passed, not listed.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path job_dir = fs::path(options_.root) / "work" / p.assignment.ns / p.assignment.job;
    fs::create_directories(job_dir, ec);
    for (const fs::path& d : {job_dir, job_dir.parent_path()}) {
      fs::permissions(d, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
    }
  }
  if (p.assignment.mpi_launcher()) {
    // The launcher's rsh agent runs commands in the workers with a token for this Job only.
    const Assignment& a = p.assignment;
    auto made = api_.Call("POST", JobPath(a) + "/exectoken?pod=" + a.pod, "", "");
    const json reply = made.ok() ? json::parse(made->body, nullptr, false) : json();
    if (!made.ok() || made->status != 201 || !reply.contains("token")) return std::nullopt;
    LauncherAccess access = options_.launcher_access;
    access.token = reply["token"];
    if (Status s = SetUpMpiLauncher(a, access, &*spec); !s.ok()) return Result<ProcessSpec>(s);
  }
  p.log_path = spec->log_path;
  if (!options_.cgroup_root.empty()) {
    auto cg = PrepareCgroup(options_.cgroup_root, p.assignment.key, p.assignment.cpu_milli,
                            p.assignment.memory_mib, options_.cgroup_agent);
    if (cg.ok()) {
      spec->cgroup_procs = cg->procs_path;
      p.cgroup_dir = cg->dir;
      p.limits = cg->description;
    } else {
      p.limits = "not applied: " + cg.status().message();
    }
  }
  return std::optional<Result<ProcessSpec>>(std::move(spec));
}

void Worker::DecideOutcome(json* job_ptr, const std::vector<PodState*>& written) {
  json& job = *job_ptr;
  json& status = job["status"];
  const json& pods = status["pods"];
  // The Job's outcome: failed as soon as a pod failed for good, succeeded when all did. An
  // array's outcome is the server's: it counts each task as it ends.
  const bool array = api::IsArrayJob(job);
  const PodState* failed = nullptr;
  const PodState* succeeded = nullptr;
  for (const PodState* p : written) {
    const std::string phase = p->state.value("phase", "");
    if (phase == "Failed" && failed == nullptr) failed = p;
    if (phase == "Succeeded") succeeded = p;
  }
  // When a Job ends it releases its devices: accounting charges up to finishedAt.
  const json finished_at = (failed != nullptr      ? failed
                            : succeeded != nullptr ? succeeded
                                                   : written[0])
                               ->state.value("finishedAt", json());
  // A Job that completes with one task or pod (an MPI launcher, a TensorFlow chief) ends when
  // it has succeeded; the rest (workers, parameter servers) stop then.
  const std::string completes_with = Str(Member(job, "spec"), "completesWith");
  bool completed = !completes_with.empty() && succeeded != nullptr;
  for (const json& pod : pods) {
    const std::string name = pod.is_object() ? Str(pod, "name") : "";
    if (completed &&
        (name == completes_with || name.substr(0, name.rfind('-')) == completes_with)) {
      completed = Str(Member(pod, "state"), "phase") == "Succeeded";
    }
  }
  if (completed && !array) {
    status["phase"] = "Succeeded";
    status["finishedAt"] = finished_at;
    status["message"] = completes_with + " succeeded";
  } else if (failed != nullptr && !array) {
    const json& st = failed->state;
    status["phase"] = "Failed";
    status["finishedAt"] = finished_at;
    // Failed by a podFailurePolicy rule, or retried up to its limit (a batch Job's
    // backoffLimit): Kubernetes' reasons.
    if (Str(st, "reason") == "PodFailurePolicy") {
      status["reason"] = "PodFailurePolicy";
    } else if (failed->assignment.max_retries > 0) {
      status["reason"] = "BackoffLimitExceeded";
    }
    status["message"] =
        Str(st, "reason") == "PodFailurePolicy"
            ? Str(st, "message")
            : "pod " + failed->assignment.pod + " failed: " +
                  (st.contains("message") ? st["message"].get<std::string>()
                   : st.contains("signal")
                       ? "killed by signal " + std::to_string(st["signal"].get<int>())
                       : "exit code " + std::to_string(st.value("exitCode", 0)));
  } else if (!array) {
    bool all = true;
    for (const json& pod : pods) {
      if (pod.is_object() && pod.value("state", json::object()).value("phase", "") != "Succeeded") {
        all = false;
      }
    }
    if (all) {
      status["phase"] = "Succeeded";
      status["finishedAt"] = finished_at;
      status["message"] = "all pods succeeded";
    }
  }
}

Status Worker::Report(const std::vector<PodState*>& group) {
  if (group.empty()) return Status::Ok();
  const std::string path = JobPath(group[0]->assignment);
  auto all_reported = [&] {
    for (PodState* p : group) p->reported = p->state;
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    // The Job as this round read it (or as the last report wrote it) first; a version that
    // is no longer current is refused (409) and the Job read again.
    json job;
    if (auto known = known_jobs_.find(path); known != known_jobs_.end() && attempt == 0) {
      job = known->second;
    } else {
      auto got = api_.Call("GET", path, "", "");
      if (!got.ok()) return got.status();
      if (got->status == 404) {
        all_reported();  // the job is gone; nothing to report to
        return Status::Ok();
      }
      if (got->status != 200) return Internal("GET " + path + ": " + got->body);
      job = json::parse(got->body, nullptr, false);
      if (!job.is_object()) return Internal("GET " + path + ": not a JSON object");
    }
    json& status = job["status"];
    json& pods = status["pods"];
    if (status.value("phase", "") != "Admitted" || !pods.is_array()) {
      all_reported();  // no longer ours to report on
      return Status::Ok();
    }
    // Each pod's entry, by name: an array's slots move as its tasks end.
    std::vector<PodState*> written;
    for (PodState* p : group) {
      const Assignment& a = p->assignment;
      size_t slot = pods.size();
      for (size_t i = 0; i < pods.size(); ++i) {
        const size_t at = (a.pod_index + i) % pods.size();
        if (pods[at].is_object() && Str(pods[at], "name") == a.pod &&
            Str(pods[at], "node") == options_.node) {
          slot = at;
          break;
        }
      }
      if (slot == pods.size()) {
        p->reported = p->state;  // no longer ours to report on
        continue;
      }
      pods[slot]["state"] = p->state;
      written.push_back(p);
    }
    if (written.empty()) return Status::Ok();
    DecideOutcome(&job, written);
    auto put = api_.Call("PUT", path, job.dump(), "application/json");
    if (!put.ok()) return put.status();
    if (put->status == 200) {
      for (PodState* p : written) p->reported = p->state;
      if (json stored = json::parse(put->body, nullptr, false); stored.is_object()) {
        known_jobs_[path] = std::move(stored);
      }
      return Status::Ok();
    }
    known_jobs_.erase(path);
    if (put->status == 404) {
      all_reported();  // deleted meanwhile
      return Status::Ok();
    }
    if (put->status != 409) return Internal("PUT " + path + ": " + put->body);
  }
  return Status::Ok();  // kept changing: next tick tries again
}

Status Worker::ShipLogs(PodState& p) {
  if (p.log_path.empty()) return Status::Ok();
  std::ifstream in(p.log_path, std::ios::binary);
  int64_t size = 0;
  if (in) {
    in.seekg(0, std::ios::end);
    size = static_cast<int64_t>(in.tellg());
  }
  // A run that starts where shipping stands is told with its first output (or alone); the
  // output before the next run's start goes first, on its own.
  auto& starts = p.run_starts;
  const bool starting = !starts.empty() && starts.front().first <= p.log_offset;
  const size_t next = starting ? 1 : 0;
  const int64_t until = next < starts.size() ? std::min(size, starts[next].first) : size;
  const int64_t n = std::clamp<int64_t>(until - p.log_offset, 0, 1 << 20);
  // A run is told with its first output, or alone once another run follows it (a restart):
  // no request for every start, nor for the end of a run that wrote nothing.
  if (n == 0 && (!starting || starts.size() == 1)) return Status::Ok();
  std::string data(static_cast<size_t>(n), '\0');
  if (n > 0) {
    in.seekg(p.log_offset);
    in.read(data.data(), n);
  }
  const Assignment& a = p.assignment;
  auto r = api_.Call("POST",
                     JobPath(a) + "/logs?pod=" + a.pod + "&uid=" + a.uid +
                         (starting ? "&start=" + starts.front().second : std::string()),
                     data, "text/plain");
  if (!r.ok()) return r.status();
  if (r->status == 200 || r->status == 404) {
    p.log_offset += n;
    if (starting) starts.erase(starts.begin());
    SaveShipped(p);
  }
  return Status::Ok();
}

void Worker::SaveShipped(const PodState& p) {
  // What was shipped survives the agent: a successor that adopts the pod goes on from there.
  std::ofstream out(runner_.StateFile(p.assignment.key, ".shipped"), std::ios::trunc);
  out << p.log_offset << "\n";
  for (const auto& [at, token] : p.run_starts) out << at << " " << token << "\n";
}

Result<json> Worker::BoundJobs() {
  if (bindings_) {
    if (std::optional<json> items = bindings_()) return *std::move(items);
  }
  // The server lists an agent the Jobs bound to its node only.
  auto jobs = api_.Call("GET", "/apis/tessera.io/v1/jobs", "", "");
  if (!jobs.ok()) return jobs.status();
  if (jobs->status != 200) return Internal("GET /apis/tessera.io/v1/jobs: " + jobs->body);
  const json list = json::parse(jobs->body, nullptr, false);
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
    return Internal("GET /apis/tessera.io/v1/jobs: not a list");
  }
  return list["items"];
}

Status Worker::Tick(int64_t now_ms) {
  now_ms_ = now_ms;
  const Result<json> jobs = BoundJobs();
  Status result = Status::Ok();
  std::set<std::string> wanted;
  std::vector<PodState*> to_start;  // bound here, not running: started after the ends are told
  if (jobs.ok()) {
    Sync(*jobs, &wanted, &to_start);
  } else {
    result = jobs.status();
  }
  auto keep = [&](Status s) {
    if (!s.ok() && result.ok()) result = std::move(s);
  };
  // What changed is reported a Job at a time: one write for all of its pods here. Ends are
  // reported before new pods start, so that the devices they free are not held up by starts;
  // what started is reported with the ends that came meanwhile (a short task's once).
  keep(Reap(now_ms));
  keep(ReportChanged(wanted));
  if (!to_start.empty()) {
    StartPods(to_start);
    keep(Reap(now_ms));
    keep(ReportChanged(wanted));
  }
  TendShares(now_ms);
  keep(Forget(jobs.ok(), wanted));
  return result;
}

void Worker::Sync(const json& jobs, std::set<std::string>* wanted,
                  std::vector<PodState*>* to_start) {
  // What this round read, as the base of its reports (by version, see Report), unless a
  // report of this agent wrote a later version than the watch has shown yet.
  std::map<std::string, json> known;
  for (const json& job : jobs) {
    const json& meta = Member(job, "metadata");
    const std::string path = JobPath(Str(meta, "namespace"), Str(meta, "name"));
    auto written = known_jobs_.find(path);
    known[path] = written != known_jobs_.end() && Version(written->second) > Version(job)
                      ? std::move(written->second)
                      : job;
  }
  known_jobs_ = std::move(known);
  for (Assignment& a : AssignedTo(jobs, options_.node)) {
    wanted->insert(a.key);
    auto [it, fresh] = pods_.try_emplace(a.key);
    PodState& p = it->second;
    if (fresh) {
      p.assignment = std::move(a);
      if (runner_.Running(p.assignment.key)) AdoptPod(p);
    } else if (a.devices != p.assignment.devices || a.admitted_at != p.assignment.admitted_at) {
      // Bound here again on other devices (its GPU was quarantined, say), or by a new
      // admission (the Job's binding was lost and made again, also where it finished here): the
      // run on the old binding stops, and the pod starts again on the new one once it has.
      if (runner_.Running(p.assignment.key)) {
        runner_.Stop(p.assignment.key, now_ms_, GraceMs(p.assignment.key));
      }
      p.assignment = std::move(a);
      p.finished = false;
      // The new binding carries no state: the run there is told afresh.
      p.state = nlohmann::json();
      p.reported = nlohmann::json();
      continue;
    } else {
      p.assignment.pod_index = a.pod_index;
    }
    if (!p.finished && !fenced_ && !runner_.Running(p.assignment.key) &&
        now_ms_ >= p.restart_at_ms) {
      to_start->push_back(&p);
    }
  }
  // What the server no longer binds here stops (deleted, preempted, moved, failed elsewhere).
  for (const std::string& key : runner_.Keys()) {
    if (!wanted->contains(key)) runner_.Stop(key, now_ms_, GraceMs(key));
  }
}

// The pods that ended: restarted by their policy, or finished with their output shipped.
Status Worker::Reap(int64_t now_ms) {
  Status result = Status::Ok();
  for (const Exit& e : runner_.Poll(now_ms)) {
    auto it = pods_.find(e.key);
    if (it == pods_.end()) continue;
    if (e.stopped) {
      // Stopped here (deleted, moved, fenced): its group goes; a start makes it again.
      if (!it->second.cgroup_dir.empty()) RemoveCgroup(it->second.cgroup_dir);
      continue;
    }
    if (Status s = Ended(it->second, e, now_ms); !s.ok() && result.ok()) result = s;
  }
  return result;
}

Status Worker::Ended(PodState& p, const Exit& e, int64_t now_ms) {
  const std::string& policy = p.assignment.restart_policy;
  const bool failed = e.exit_code != 0 || e.signal != 0;
  if (policy == "Always") {
    ++p.restarts;
    // Kubernetes' CrashLoopBackOff: a container that keeps ending soon after it starts waits
    // 10 s, then 20 s, ... up to 5 minutes before each new run (here the first restart is at
    // once); ten minutes of running clear it. Without it a container that exits at once would
    // run and report its end many times a second, for ever (restartPolicy Always has no retry
    // limit; OnFailure and Never stop at maxRetries).
    if (now_ms - p.run_started_ms >= kBackoffResetMs) p.quick_exits = 0;
    const int64_t delay =
        p.quick_exits == 0
            ? 0
            : std::min(kBackoffMaxMs, kBackoffFirstMs << std::min(p.quick_exits - 1, 5));
    ++p.quick_exits;
    if (delay == 0) {
      StartPod(p);
      return Status::Ok();
    }
    p.restart_at_ms = now_ms + delay;
    p.state = {{"phase", "Running"},
               {"restarts", p.restarts},
               {"reason", "CrashLoopBackOff"},
               {"message", "back-off " + std::to_string(delay / 1000) +
                               "s restarting the container, which ended " +
                               (e.signal != 0 ? "by signal " + std::to_string(e.signal)
                                              : "with exit code " + std::to_string(e.exit_code))}};
    return Status::Ok();
  }
  if (policy == "OnFailure" && failed && p.restarts < p.assignment.max_retries) {
    ++p.restarts;
    StartPod(p);
    return Status::Ok();
  }
  // Never: a failed attempt is another pod to Kubernetes; here the same pod starts again,
  // the attempt counted as a failure, while maxRetries (a batch Job's backoffLimit) allows.
  // Its podFailurePolicy decides first: not counted (Ignore), or the end (FailJob,
  // FailIndex).
  api::FailureVerdict verdict;
  if (policy == "Never" && failed) {
    const Assignment& a = p.assignment;
    verdict = api::JudgeFailure(Member(a.task, "podFailurePolicy"),
                                e.signal != 0 ? 128 + e.signal : e.exit_code,
                                a.ns + "/" + a.job + "-" + a.pod);
  }
  if (verdict.action == "Ignore") {
    p.state = {{"phase", "Running"}, {"restarts", p.restarts}, {"failures", p.failures}};
    StartPod(p);
    return Status::Ok();
  }
  if (policy == "Never" && failed && verdict.action == "Count" &&
      p.failures < p.assignment.max_retries) {
    ++p.failures;
    p.state = {{"phase", "Running"}, {"restarts", p.restarts}, {"failures", p.failures}};
    StartPod(p);
    return Status::Ok();
  }
  p.finished = true;
  if (!p.cgroup_dir.empty()) RemoveCgroup(p.cgroup_dir);
  p.state = {{"phase", failed ? "Failed" : "Succeeded"},
             {"restarts", p.restarts},
             {"finishedAt", api::FormatTime(now_ms)}};
  if (p.failures > 0) p.state["failures"] = p.failures;
  if (!p.limits.empty()) p.state["limits"] = p.limits;
  if (verdict.rule >= 0) {
    p.state["reason"] = "PodFailurePolicy";
    p.state["message"] = verdict.message;
  }
  if (e.signal != 0) {
    p.state["signal"] = e.signal;
  } else {
    p.state["exitCode"] = e.exit_code;
  }
  // Its output is shipped before its end is reported.
  return ShipLogs(p);
}

Status Worker::ReportChanged(const std::set<std::string>& wanted) {
  Status result = Status::Ok();
  std::map<std::string, std::vector<PodState*>> reports;
  for (auto& [key, p] : pods_) {
    if (wanted.contains(key) && p.state != p.reported) {
      reports[JobPath(p.assignment)].push_back(&p);
    }
  }
  for (const auto& [path, group] : reports) {
    if (Status s = Report(group); !s.ok() && result.ok()) result = s;
  }
  return result;
}

// The exec targets of the pods running; an MPS server runs while a pod that uses it does. Once a
// second, the host pids of the shares' processes are looked for, for their compute samplers.
void Worker::TendShares(int64_t now_ms) {
  const std::vector<std::string> running = runner_.Keys();
  exec_targets_.Retain(std::set<std::string>(running.begin(), running.end()));
  const bool map_share_pids = now_ms >= next_share_pids_ms_;
  if (map_share_pids) next_share_pids_ms_ = now_ms + 1000;
  std::set<std::string> mps_in_use;
  for (const std::string& key : running) {
    auto it = pods_.find(key);
    if (it == pods_.end()) continue;
    bool shares = false;
    for (const json& d : it->second.assignment.devices) {
      if (d.value("kind", "") != "share") continue;
      shares = true;
      if (d.value("mps", false) == true) mps_in_use.insert(d.value("uuid", ""));
    }
    if (shares && map_share_pids) {
      MapSharePids(ShareRegionPath(options_.root, key));  // none yet: the next second
    }
  }
  mps_.StopUnused(mps_in_use);
}

// Ships what is left of each pod's output, and forgets the pods that are neither bound here
// (as the last listing, when it succeeded, says) nor running, once their output is out.
Status Worker::Forget(bool listed, const std::set<std::string>& wanted) {
  Status result = Status::Ok();
  for (auto it = pods_.begin(); it != pods_.end();) {
    PodState& p = it->second;
    if (Status s = ShipLogs(p); !s.ok() && result.ok()) result = s;
    std::error_code ec;
    const bool shipped =
        p.log_path.empty() ||
        static_cast<int64_t>(std::filesystem::file_size(p.log_path, ec)) <= p.log_offset || ec;
    if (listed && !wanted.contains(it->first) && !runner_.Running(it->first) && shipped) {
      std::filesystem::remove(runner_.StateFile(it->first, ".shipped"), ec);
      std::filesystem::remove(runner_.StateFile(it->first, ".uid"), ec);
      // Its output is on the server: a pod of the same name (a Job created again) starts with
      // none of it.
      if (!p.log_path.empty()) std::filesystem::remove(p.log_path, ec);
      it = pods_.erase(it);
    } else {
      ++it;
    }
  }
  return result;
}

}  // namespace tessera::agent
