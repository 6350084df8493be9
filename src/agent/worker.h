// The agent's work loop, one Tick at a time: runs the pods the scheduler bound to this node,
// stops those it no longer should run (deleted, preempted, moved), applies restart policies,
// reports each pod's state and the Job's outcome into the Job's status, and ships the pods'
// output to the server's log store. I/O with the server goes through ApiClient.
#ifndef TESSERA_AGENT_WORKER_H_
#define TESSERA_AGENT_WORKER_H_

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/assignments.h"
#include "agent/exec_targets.h"
#include "agent/gpu_info.h"
#include "agent/mps.h"
#include "agent/runner.h"
#include "core/status.h"

namespace tessera::agent {

class ApiClient {
 public:
  virtual ~ApiClient() = default;
  struct Reply {
    int status = 0;
    std::string body;
  };
  virtual Result<Reply> Call(const std::string& method, const std::string& target,
                             const std::string& body, const std::string& content_type) = 0;
  // A GET whose body goes to `on_data` piece by piece as it comes, until the server ends it;
  // returns the status (a body other than a 200's is not passed on).
  virtual Result<int> Stream(const std::string& target,
                             const std::function<void(std::string_view)>& on_data) {
    (void)target;
    (void)on_data;
    return FailedPrecondition("this client does not stream");
  }
};

// The uids at the top of WorkerOptions' task range kept for MPS servers, one per card index.
inline constexpr int64_t kMpsTaskUids = 64;

struct WorkerOptions {
  std::string node;
  std::string root;  // working directories, logs, and the runner's state (<root>/run)
  std::string container_runtime;
  // libtessera-share.so, preloaded into the tasks of fractional shares (SpecFor); empty: shares
  // are not enforced on the node.
  std::string share_interposer;
  // nvidia-cuda-mps-control, for cards whose shares go through MPS (mps.h); empty: MPS is off
  // and those shares take the interposer too.
  std::string mps_control;
  // Where the worker says what an operator should know (an MPS server that cannot run).
  std::function<void(const std::string&)> notice;
  int64_t stop_grace_ms = 10'000;
  std::string cgroup_root;   // cgroup v2 hierarchy for pods' groups (cgroups.h); empty: none
  std::string cgroup_agent;  // this agent's name among the groups there
  // The uids of tasks without securityContext.runAsUser, when the agent is root: each pod
  // takes one of [task_uid_base, task_uid_base + task_uid_count), its Job's own (its gid the
  // same; the Job's pods share it), kept for as long as it runs; the top kMpsTaskUids are the
  // cards' whose shares go through MPS. task_uid_count 0: such tasks run as the agent's user.
  int64_t task_uid_base = 0;
  int64_t task_uid_count = 0;
  // How an MPI launcher's rsh agent reaches the server (its token is made per launcher).
  LauncherAccess launcher_access;
};

class Worker {
 public:
  // Adopts what an earlier agent on the same root left running (see Runner::Adopt): the first
  // Tick keeps what is still bound here and stops the rest.
  Worker(ApiClient& api, const NodeGpus& gpus, WorkerOptions options);

  // The node lost its heartbeat (see fence.h): stops every pod, as not started by this node's
  // choice (no failure, no restart), and starts none until Unfence.
  void Fence(int64_t now_ms);
  void Unfence() { fenced_ = false; }
  bool fenced() const { return fenced_; }

  // Where Tick learns what is bound here: `source` gives the Jobs bound to this node when it
  // knows them (a watch, see bindings.h) and nullopt when it does not; Tick lists them then,
  // as it does without a source.
  void FollowBindings(std::function<std::optional<nlohmann::json>()> source) {
    bindings_ = std::move(source);
  }

  // One round at wall time `now_ms`; errors talking to the server are returned after the
  // round did what it could.
  Status Tick(int64_t now_ms);

  const Runner& runner() const { return runner_; }
  // The pods running here as they were started, for commands run in them (exec.h).
  const ExecTargets& exec_targets() const { return exec_targets_; }

 private:
  // CrashLoopBackOff's delays (Kubernetes' kubelet): the first, the most, and how long a run
  // lasts to clear them.
  static constexpr int64_t kBackoffFirstMs = 10'000;
  static constexpr int64_t kBackoffMaxMs = 300'000;
  static constexpr int64_t kBackoffResetMs = 600'000;
  struct PodState {
    Assignment assignment;
    nlohmann::json state;     // {phase, exitCode?, signal?, restarts, message?}
    nlohmann::json reported;  // the last state the server accepted
    int restarts = 0;
    // Failed attempts of a restartPolicy Never pod started again (Kubernetes' Job controller
    // makes a new pod for each, counted in status.failed against backoffLimit).
    int failures = 0;
    bool finished = false;
    int64_t log_offset = 0;  // how much of the log was shipped
    std::string log_path;
    // Runs of the container whose start the server has not been told yet: where in the log
    // each begins, and its token (LogStore's `start`).
    std::vector<std::pair<int64_t, std::string>> run_starts;
    std::string cgroup_dir;
    std::string limits;  // what was applied, or why not
    int64_t uid = -1;    // the pod's own uid (UsersFor), -1: none
    // restartPolicy Always, after Kubernetes' CrashLoopBackOff: when its last run began, how
    // many runs in a row ended within kBackoffResetMs of their start, and when the next may
    // start (0: now).
    int64_t run_started_ms = 0;
    int quick_exits = 0;
    int64_t restart_at_ms = 0;
  };
  // Who the tasks of pod `key` run as when their spec names no user (see TaskUsers).
  TaskUsers UsersFor(const std::string& key);
  void StartPod(PodState& p);
  // Starts them together (their starts overlap, see Runner::StartAll).
  void StartPods(const std::vector<PodState*>& pods);
  // What starting `p` runs: its process spec, with the cgroup prepared; nullopt when it cannot
  // start yet (an MPI launcher's exec token), an error when it cannot start at all.
  std::optional<Result<ProcessSpec>> PreparePod(PodState& p);
  // How long pod `key` has between SIGTERM and SIGKILL: its terminationGracePeriodSeconds, else
  // the agent's default.
  int64_t GraceMs(const std::string& key) const;
  // Takes on a pod found running at start (adopted from the previous agent).
  void AdoptPod(PodState& p);
  // Keeps what was shipped of `p`'s log, and the runs not yet told, for a successor agent.
  void SaveShipped(const PodState& p);
  // Writes the states of `group`, pods of one Job whose state changed since reported, into the
  // Job in one write, with the Job's outcome when they decide it.
  Status Report(const std::vector<PodState*>& group);
  // The Job's outcome from the states of its pods here just `written` into `job`'s status: failed
  // as soon as a pod failed for good, succeeded when all did (or the pod it completes with); an
  // array's outcome is the server's.
  static void DecideOutcome(nlohmann::json* job, const std::vector<PodState*>& written);
  Status ShipLogs(PodState& p);
  // The stages of a Tick. Sync: what this round read, as the base of its reports, the pods bound
  // here (`wanted`; those to start), and the stop of what is no longer bound here.
  void Sync(const nlohmann::json& jobs, std::set<std::string>* wanted,
            std::vector<PodState*>* to_start);
  Status Reap(int64_t now_ms);
  // A pod that ended on its own: started again as its restart policy and podFailurePolicy say,
  // or finished, its output shipped.
  Status Ended(PodState& p, const Exit& e, int64_t now_ms);
  Status ReportChanged(const std::set<std::string>& wanted);
  void TendShares(int64_t now_ms);
  Status Forget(bool listed, const std::set<std::string>& wanted);
  // The Jobs bound here (a JSON array): from the source when it knows them, else listed.
  Result<nlohmann::json> BoundJobs();
  // How `a`'s fractional share is held: its card's MPS server when the binding asks for one and
  // it runs (started here), else the interposer; why MPS could not be used is told once per card.
  ShareIsolation IsolationFor(const Assignment& a);

  ApiClient& api_;
  const NodeGpus& gpus_;
  WorkerOptions options_;
  Runner runner_;
  std::map<std::string, PodState> pods_;
  ExecTargets exec_targets_;
  MpsServers mps_;
  std::set<std::string> mps_told_;  // cards whose MPS trouble was told
  int64_t next_share_pids_ms_ = 0;  // when the shares' host pids are next looked for
  std::function<std::optional<nlohmann::json>()> bindings_;
  // API path -> the Job as last read or written, the base of the next report.
  std::map<std::string, nlohmann::json> known_jobs_;
  bool fenced_ = false;
  // For the tokens of container runs (node, time, count: unique to this pod's runs).
  int64_t now_ms_ = 0;
  uint64_t runs_started_ = 0;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_WORKER_H_
