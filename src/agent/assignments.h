// What a node agent must run, from the Jobs the scheduler bound to its node, and how: the
// process spec of each pod with its devices in the environment.
#ifndef TESSERA_AGENT_ASSIGNMENTS_H_
#define TESSERA_AGENT_ASSIGNMENTS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "agent/runner.h"
#include "core/status.h"

namespace tessera::agent {

struct Assignment {
  std::string key;  // "<ns>/<job>/<pod>"
  std::string ns, job, pod;
  std::string uid;         // the Job's: its output goes to that Job alone
  size_t pod_index = 0;    // into the Job's status.pods
  nlohmann::json task;     // the Job's spec.tasks entry of this pod
  nlohmann::json devices;  // status.pods[i].devices
  // The Job's status.admittedAt: each admission is a run of its own (a Job whose binding was
  // lost and made again runs again, also a pod bound here again on the same devices).
  std::string admitted_at;
  std::string restart_policy = "Never";
  int max_retries = 0;
  int64_t cpu_milli = 0;  // from the binding
  int64_t memory_mib = 0;
  nlohmann::json state;  // status.pods[i].state as the server has it (null: none yet)
  // A job of several pods: where they meet (status.rendezvous; null for one pod), and every
  // pod's task name and node address ("" while unplaced), by pod index.
  nlohmann::json rendezvous;
  std::vector<std::pair<std::string, std::string>> members;
  size_t task_index = 0;                 // this pod's index among its task's pods
  std::vector<std::string> member_pods;  // every pod's name, by pod index (with `members`)
  std::vector<int64_t> member_ports;     // every pod's own port (0: none), by pod index
  int64_t port = 0;                      // this pod's own port (status.pods[i].port; 0: none)
  int64_t completion_index = -1;         // an Indexed array's task (status.pods[i].index); -1: none
  bool tf_config = false;                // the Job's spec.tfConfig: TensorFlow's TF_CONFIG
  nlohmann::json mpi;  // the Job's spec.mpi {launcher, slotsPerWorker} (null: not MPI)
  // Whether this pod is its MPI job's launcher.
  bool mpi_launcher() const;
};

// Where the output of pod `key` of the Job of `uid` is kept under the agent's root (a Job created
// again under the same name writes another file).
std::string PodLogPath(const std::string& root, const std::string& key, const std::string& uid);

// The pods of Admitted Jobs bound to `node`.
std::vector<Assignment> AssignedTo(const nlohmann::json& jobs, const std::string& node);

// The environment a pod's devices give it:
//   CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES  the assigned GPU or MIG UUIDs (empty / "void"
//                                                 for a pod without GPUs)
//   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,            for a fractional share: its compute percent
//   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT              and memory ("0=4096M")
//   TESSERA_SHARE_MEMORY_MIB                      for a pod with a fractional share: each
//                                                 device's share in MiB by CUDA ordinal ("0"
//                                                 for a device that is not a share), which the
//                                                 share interposer holds the pod's processes to
//   TESSERA_SHARE_COMPUTE_PERCENT                 the same of compute ("0": not limited)
//   TESSERA_GPU_UUIDS, TESSERA_GPU_KIND, TESSERA_GPU_MILLI, TESSERA_GPU_MEMORY_MIB,
//   TESSERA_GPU_REPLICAS
// MIG instances take the UUID of a discovered MIG device of that GPU and size when there is
// one, else "MIG-<GPU UUID>/<instance>".
std::map<std::string, std::string> DeviceEnv(const nlohmann::json& devices, const NodeGpus& gpus);

// The node's first non-loopback IPv4 address (a pod's hostIP and podIP: tasks use the node's
// network); 127.0.0.1 when it has none.
std::string NodeAddress();

// The environment a member of a distributed job (a.rendezvous set) is given, as Kubeflow's
// training operator and Volcano's svc plugin give it: TESSERA_PORT (its own port), MASTER_ADDR,
// MASTER_PORT, WORLD_SIZE,
// RANK (the pod's index), torchrun's PET_MASTER_ADDR, PET_MASTER_PORT, PET_NNODES,
// PET_NODE_RANK, Volcano's VC_TASK_INDEX and VC_<TASK>_HOSTS / VC_<TASK>_NUM (hosts are the
// pods' node addresses), and TESSERA_HOSTFILE naming `hostfile`, whose content (one
// "<address> slots=<pods there>" line per node, in pod order) is returned in `*content`.
// With a.tf_config, TF_CONFIG as Kubeflow's TFJob gives it: {"cluster": {<task>: ["addr:port",
// ...]} of every task but "evaluator", "task": {"type": <task>, "index": <index in its task>},
// "environment": "cloud"}.
std::map<std::string, std::string> RendezvousEnv(const Assignment& a, const std::string& hostfile,
                                                 std::string* content);

// How to run `a`: its command and args (through `container_runtime` when the task has an
// image: "<runtime> run --rm --device nvidia.com/gpu=<uuid>... -e K=V... <image> <command>"),
// its env plus DeviceEnv plus TESSERA_NODE/TESSERA_JOB/TESSERA_POD, a working directory and a
// log file under `root`, its runAsUser/runAsGroup (the process's uid and gid, or the runtime's
// --user for an image). $(VAR) references in env values, command and args are expanded as
// Kubernetes does. FailedPrecondition when the task cannot run here (an image with no runtime
// configured, no command).
//
// A pod with a fractional share is held to it as `isolation` says (TESSERA_SHARE_ISOLATION tells
// the task which): through the MPS server of its card when `isolation.mps` has one for it (the
// server's directories in CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, mounted at the same
// paths in a container, which shares the host's IPC namespace), else with the interposer
// preloaded (LD_PRELOAD, before any of the task's own) and TESSERA_SHARE_REGION naming
// <workdir>/.tessera-share/region; a container gets the library mounted read-only at
// kInterposerInContainer and that directory at kShareDirInContainer.
struct ShareIsolation {
  std::string interposer;  // libtessera-share.so; empty: none
  // GPU UUID -> the directory of its MPS server (agent/mps.h), for cards whose shares go
  // through MPS. Used for a pod with one share; a pod with shares of several cards takes the
  // interposer.
  std::map<std::string, std::string> mps;
};
// Who a task without securityContext.runAsUser runs as (the agent being root): a uid of its
// Job's own (its group the same), so that no task reads another Job's files; or, for a pod whose
// share goes through an MPS server (which serves one user at a time), the card's uid. -1: the
// agent's user.
struct TaskUsers {
  int64_t pod = -1;
  std::map<std::string, int64_t> mps;  // GPU UUID -> the uid of the pods sharing it via MPS
};
Result<ProcessSpec> SpecFor(const Assignment& a, const NodeGpus& gpus, const std::string& node,
                            const std::string& root, const std::string& container_runtime,
                            const ShareIsolation& isolation = {}, const TaskUsers& users = {});

// The share region of pod `key` on the node (its processes' memory and compute count).
std::string ShareRegionPath(const std::string& root, const std::string& key);

inline constexpr const char* kInterposerInContainer = "/usr/lib/tessera/libtessera-share.so";
inline constexpr const char* kShareDirInContainer = "/run/tessera-share";

// Where the launcher of an MPI job finds the control plane, for its rsh agent.
struct LauncherAccess {
  std::string tessera;  // the tessera binary
  std::string server;   // the server's URL
  std::string ca_file;  // for https://; empty: the system's trust store
  std::string token;    // an exec token for the launcher's Job (the server makes it)
};

// Makes `spec` (the launcher of an MPI job, a.mpi_launcher()) able to run mpirun over its
// workers, as Kubeflow's MPI operator does: a hostfile of the workers' pods ("<pod>
// slots=<slotsPerWorker>"), an rsh agent that starts each remote command in the pod named as
// its host through `tessera exec`, with a token for this Job only (a file readable by the
// task's user only). Open MPI finds them through OMPI_MCA_orte_default_hostfile and
// OMPI_MCA_plm_rsh_agent (tree spawn off: only the launcher holds the token); Intel MPI and
// MPICH through I_MPI_HYDRA_* and HYDRA_*. Writes the token file; the rest goes in `spec`.
Status SetUpMpiLauncher(const Assignment& a, const LauncherAccess& access, ProcessSpec* spec);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_ASSIGNMENTS_H_
