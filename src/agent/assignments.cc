#include "agent/assignments.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "agent/container_runtime.h"
#include "agent/mps.h"
#include "api/json_read.h"
#include "api/kinds.h"

namespace tessera::agent {

using nlohmann::json;

namespace {

std::string Str(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

int64_t Int(const json& o, const char* key, int64_t def = 0) {
  return o.is_object() && o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>()
                                                                        : def;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

std::vector<Assignment> AssignedTo(const json& jobs, const std::string& node) {
  std::vector<Assignment> out;
  for (const json& job : jobs) {
    const json& status = api::Member(job, "status");
    if (Str(status, "phase") != "Admitted") continue;
    const json& meta = api::Member(job, "metadata");
    const json& spec = api::Member(job, "spec");
    const json& tasks = api::ListOf(api::Member(spec, "tasks"));
    const json& pods = api::ListOf(api::Member(status, "pods"));
    // Pods are bound in task order, `replicas` of each.
    std::vector<const json*> task_of;
    for (const json& t : tasks) {
      for (int64_t r = 0; r < Int(t, "replicas", 1); ++r) task_of.push_back(&t);
    }
    for (size_t i = 0; i < pods.size() && i < task_of.size(); ++i) {
      if (!pods[i].is_object() || Str(pods[i], "node") != node) continue;
      Assignment a;
      a.ns = Str(meta, "namespace");
      a.job = Str(meta, "name");
      a.pod = Str(pods[i], "name");
      a.key = a.ns + "/" + a.job + "/" + a.pod;
      a.uid = Str(meta, "uid");
      a.pod_index = i;
      a.task = *task_of[i];
      a.devices = pods[i].value("devices", json::array());
      a.admitted_at = Str(status, "admittedAt");
      a.restart_policy =
          Str(a.task, "restartPolicy").empty() ? "Never" : Str(a.task, "restartPolicy");
      a.max_retries = static_cast<int>(Int(a.task, "maxRetries"));
      a.cpu_milli = Int(pods[i], "cpuMilli");
      a.memory_mib = Int(pods[i], "memoryMiB");
      a.state = pods[i].value("state", json());
      a.rendezvous = status.value("rendezvous", json());
      a.mpi = api::Member(spec, "mpi");
      a.tf_config = api::Member(spec, "tfConfig") == true;
      a.port = Int(pods[i], "port");
      if (Str(spec, "completionMode") == "Indexed") {
        a.completion_index = Int(pods[i], "index", -1);
      }
      if (a.rendezvous.is_object()) {
        for (size_t j = 0; j < task_of.size(); ++j) {
          const json& p = j < pods.size() ? pods[j] : json();
          a.members.emplace_back(
              Str(*task_of[j], "name"),
              p.is_object() ? Str(p, "address").empty() ? Str(p, "node") : Str(p, "address") : "");
          if (j < i && task_of[j] == task_of[i]) ++a.task_index;
          a.member_pods.push_back(p.is_object() ? Str(p, "name") : "");
          a.member_ports.push_back(Int(p, "port"));
        }
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

std::map<std::string, std::string> DeviceEnv(const json& devices, const NodeGpus& gpus) {
  std::map<std::string, std::string> env;
  std::vector<std::string> uuids;
  std::vector<std::string> share_mib;      // by CUDA ordinal; "0" for a device that is not a share
  std::vector<std::string> share_percent;  // the same, of compute
  bool any_share = false;
  std::set<std::string> used_mig;
  std::string kind;
  for (const json& d : devices) {
    kind = Str(d, "kind");
    const std::string uuid = Str(d, "uuid");
    const bool share = kind == "share";
    const int64_t memory_mib = Int(d, "memoryMiB");
    const int64_t milli = share ? Int(d, "milli") : 0;
    if (kind == "mig") {
      std::string mig = "MIG-" + uuid + "/" + std::to_string(Int(d, "migInstance"));
      for (const GpuInfo& g : gpus.gpus) {
        if (g.uuid != uuid) continue;
        for (const MigDeviceInfo& m : g.mig_devices) {
          if (!used_mig.contains(m.uuid) &&
              std::llabs(m.memory_mib - memory_mib) * 10 <= memory_mib) {
            mig = m.uuid;
            used_mig.insert(m.uuid);
            break;
          }
        }
      }
      uuids.push_back(mig);
    } else {
      uuids.push_back(uuid);
    }
    if (share) {
      if (milli > 0) env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string((milli + 9) / 10);
      env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = "0=" + std::to_string(memory_mib) + "M";
      env["TESSERA_GPU_MILLI"] = std::to_string(milli);
      env["TESSERA_GPU_MEMORY_MIB"] = std::to_string(memory_mib);
      any_share = true;
    }
    share_mib.push_back(share ? std::to_string(memory_mib) : "0");
    share_percent.push_back(milli > 0 && milli < 1000 ? std::to_string((milli + 9) / 10) : "0");
    if (kind == "replica") env["TESSERA_GPU_REPLICAS"] = std::to_string(Int(d, "replicas"));
  }
  if (any_share) {
    env["TESSERA_SHARE_MEMORY_MIB"] = Join(share_mib);
    env["TESSERA_SHARE_COMPUTE_PERCENT"] = Join(share_percent);
  }
  env["CUDA_VISIBLE_DEVICES"] = Join(uuids);
  env["NVIDIA_VISIBLE_DEVICES"] = uuids.empty() ? "void" : Join(uuids);
  env["TESSERA_GPU_UUIDS"] = Join(uuids);
  env["TESSERA_GPU_KIND"] = uuids.empty() ? "none" : kind;
  return env;
}

std::string ShareRegionPath(const std::string& root, const std::string& key) {
  return std::filesystem::absolute(root + "/work/" + key + "/.tessera-share/region").string();
}

std::string PodLogPath(const std::string& root, const std::string& key, const std::string& uid) {
  return root + "/logs/" + key + (uid.empty() ? "" : "." + uid) + ".log";
}

namespace {

// Kubernetes' variable expansion: $(NAME) becomes NAME's value when `env` has it (and it is not
// `self`), and stays as written otherwise; $$ is a literal $.
std::string ExpandRefs(std::string_view in, const std::map<std::string, std::string>& env,
                       const std::string& self) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$' || i + 1 == in.size()) {
      out += in[i];
      continue;
    }
    if (in[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    const size_t close = in[i + 1] == '(' ? in.find(')', i + 2) : std::string_view::npos;
    if (close == std::string_view::npos) {
      out += in[i];
      continue;
    }
    const std::string name(in.substr(i + 2, close - i - 2));
    auto it = env.find(name);
    out +=
        (it != env.end() && name != self) ? it->second : std::string(in.substr(i, close - i + 1));
    i = close;
  }
  return out;
}

}  // namespace

std::string NodeAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "127.0.0.1";
  std::string out = "127.0.0.1";
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_LOOPBACK) != 0 || (i->ifa_flags & IFF_UP) == 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) {
      out = text;
      break;
    }
  }
  freeifaddrs(list);
  return out;
}

std::map<std::string, std::string> RendezvousEnv(const Assignment& a, const std::string& hostfile,
                                                 std::string* content) {
  std::map<std::string, std::string> env;
  const json& r = a.rendezvous;
  const std::string addr = Str(r, "masterAddr"), port = std::to_string(Int(r, "masterPort"));
  const std::string world = std::to_string(Int(r, "worldSize", 1));
  const std::string rank = std::to_string(a.pod_index);
  env["MASTER_ADDR"] = env["PET_MASTER_ADDR"] = addr;
  env["MASTER_PORT"] = env["PET_MASTER_PORT"] = port;
  env["WORLD_SIZE"] = env["PET_NNODES"] = world;
  env["RANK"] = env["PET_NODE_RANK"] = rank;
  env["VC_TASK_INDEX"] = std::to_string(a.task_index);
  // Hosts by task, in pod order; the hostfile's slots count the pods on each node.
  std::map<std::string, std::vector<std::string>> hosts;
  std::vector<std::pair<std::string, int>> slots;
  for (const auto& [task, address] : a.members) {
    std::vector<std::string>& h = hosts[task];
    if (address.empty()) continue;
    h.push_back(address);
    auto it =
        std::find_if(slots.begin(), slots.end(), [&](const auto& s) { return s.first == address; });
    if (it == slots.end()) {
      slots.emplace_back(address, 1);
    } else {
      ++it->second;
    }
  }
  for (const auto& [task, h] : hosts) {
    std::string list;
    for (const std::string& x : h) list += (list.empty() ? "" : ",") + x;
    const std::string suffix = api::EnvVarSuffix(task);
    env["VC_" + suffix + "_HOSTS"] = list;
    env["VC_" + suffix + "_NUM"] = std::to_string(std::count_if(
        a.members.begin(), a.members.end(), [&](const auto& m) { return m.first == task; }));
  }
  content->clear();
  for (const auto& [address, n] : slots) *content += address + " slots=" + std::to_string(n) + "\n";
  env["TESSERA_HOSTFILE"] = hostfile;
  if (a.port > 0) env["TESSERA_PORT"] = std::to_string(a.port);
  if (a.tf_config) {
    json cluster = json::object();
    for (size_t i = 0; i < a.members.size(); ++i) {
      const auto& [task, address] = a.members[i];
      if (task == "evaluator") continue;  // not part of the training cluster (as the operator)
      if (!cluster.contains(task)) cluster[task] = json::array();
      const int64_t port = i < a.member_ports.size() ? a.member_ports[i] : 0;
      cluster[task].push_back(address.empty() || port == 0 ? std::string()
                                                           : address + ":" + std::to_string(port));
    }
    env["TF_CONFIG"] = json{
        {"cluster", cluster},
        {"task", {{"type", Str(a.task, "name")}, {"index", a.task_index}}},
        {"environment",
         "cloud"}}.dump();
  }
  return env;
}

namespace {

// The pod's environment before share isolation: its own variables, the devices', the gang's
// rendezvous (whose hostfile goes in `spec`), and the downward API fields known only here.
std::map<std::string, std::string> TaskEnv(const Assignment& a, const NodeGpus& gpus,
                                           const std::string& node, ProcessSpec& spec) {
  std::map<std::string, std::string> env;
  if (a.task.contains("env") && a.task["env"].is_object()) {
    for (const auto& [k, v] : a.task["env"].items()) {
      if (v.is_string()) env[k] = v.get<std::string>();
    }
  }
  for (const auto& [k, v] : DeviceEnv(a.devices, gpus)) env[k] = v;
  if (a.rendezvous.is_object()) {
    // Absolute: the task runs in its working directory (or a container).
    const std::string hostfile = std::filesystem::absolute(spec.workdir + "/hostfile").string();
    for (const auto& [k, v] : RendezvousEnv(a, hostfile, &spec.files[hostfile])) env[k] = v;
  }
  env["TESSERA_NODE"] = node;
  env["TESSERA_JOB"] = a.ns + "/" + a.job;
  env["TESSERA_POD"] = a.pod;
  // An Indexed Job's task, as Kubernetes gives it.
  if (a.completion_index >= 0) env["JOB_COMPLETION_INDEX"] = std::to_string(a.completion_index);
  const json field_env = a.task.value("fieldEnv", json::object());
  for (const auto& [var, field] : field_env.items()) {
    if (field == "metadata.name") env[var] = a.job + "-" + a.pod;
    if (field == "spec.nodeName") env[var] = node;
    if (field == "completionIndex" && a.completion_index >= 0) {
      env[var] = std::to_string(a.completion_index);
    }
    if (field == "status.hostIP" || field == "status.hostIPs" || field == "status.podIP" ||
        field == "status.podIPs") {
      env[var] = NodeAddress();
    }
  }
  return env;
}

// Volumes: a hostPath as it is, an emptyDir as a fresh directory of the pod's; each path in
// TESSERA_VOLUME_<NAME>, and returned as a mount at its mountPath for a container.
std::vector<std::string> AddVolumes(const Assignment& a, ProcessSpec& spec,
                                    std::map<std::string, std::string>& env) {
  std::vector<std::string> mounts;
  for (const json& v : a.task.value("volumes", json::array())) {
    if (!v.is_object()) continue;
    std::string source = Str(v, "hostPath");
    if (source.empty()) {
      source = spec.workdir + "/volumes/" + Str(v, "name");
      spec.dirs.push_back(source);
    }
    env["TESSERA_VOLUME_" + api::EnvVarSuffix(Str(v, "name"))] = source;
    mounts.push_back(source + ":" + Str(v, "mountPath") +
                     (v.value("readOnly", false) ? ":ro" : ""));
  }
  return mounts;
}

// A fractional share: through its card's MPS server, or the interposer, preloaded, counting in a
// region of the pod's (interpose/share_region.h). Sets the pod's user when the task names none.
void IsolateShare(const Assignment& a, const std::string& root, const ShareIsolation& isolation,
                  const TaskUsers& users, bool contained, ProcessSpec& spec,
                  std::map<std::string, std::string>& env, std::vector<std::string>& mounts,
                  int64_t& uid, int64_t& gid) {
  std::vector<std::string> share_gpus;
  for (const json& d : a.devices) {
    if (Str(d, "kind") == "share") share_gpus.push_back(Str(d, "uuid"));
  }
  const auto mps = share_gpus.size() == 1 ? isolation.mps.find(share_gpus[0]) : isolation.mps.end();
  if (uid < 0) {
    // Not the agent's user: the pod's own, or its MPS server's.
    const auto mps_user = mps != isolation.mps.end() ? users.mps.find(mps->first) : users.mps.end();
    uid = mps_user != users.mps.end() ? mps_user->second : users.pod;
    if (gid < 0) gid = uid;
  }
  if (mps != isolation.mps.end()) {
    for (const auto& [k, v] : MpsClientEnv(mps->second)) env[k] = v;
    env["TESSERA_SHARE_ISOLATION"] = "mps";
    if (contained) mounts.push_back(mps->second + ":" + mps->second);
  } else if (!share_gpus.empty() && !isolation.interposer.empty()) {
    const std::string region = ShareRegionPath(root, a.key);
    const std::string dir = region.substr(0, region.rfind('/'));
    spec.open_dirs.push_back(dir);
    const std::string lib = contained ? kInterposerInContainer : isolation.interposer;
    if (contained) {
      mounts.push_back(dir + ":" + kShareDirInContainer);
      mounts.push_back(isolation.interposer + ":" + kInterposerInContainer + ":ro");
    }
    env["TESSERA_SHARE_REGION"] = (contained ? kShareDirInContainer : dir) + "/region";
    env["LD_PRELOAD"] = env["LD_PRELOAD"].empty() ? lib : lib + ":" + env["LD_PRELOAD"];
    env["TESSERA_SHARE_ISOLATION"] = "interposer";
  } else if (!share_gpus.empty()) {
    env["TESSERA_SHARE_ISOLATION"] = "none";
  }
}

// The container runtime's command line for the pod's image: its name, limits, mounts, devices
// (CDI names of the same UUIDs the environment names), user and environment.
std::vector<std::string> ContainerArgv(const Assignment& a, const ProcessSpec& spec,
                                       const std::string& runtime, const std::string& image,
                                       const std::map<std::string, std::string>& env,
                                       const std::vector<std::string>& mounts, int64_t uid,
                                       int64_t gid) {
  std::vector<std::string> argv = {runtime, "run", "--rm", "--name", spec.container};
  // MPS clients reach their server through the host's IPC namespace.
  const auto isolation = env.find("TESSERA_SHARE_ISOLATION");
  if (isolation != env.end() && isolation->second == "mps") argv.push_back("--ipc=host");
  // The pod's CPU and memory, as the runtime's own limits.
  if (a.cpu_milli > 0) {
    char cpus[48];
    std::snprintf(cpus, sizeof cpus, "--cpus=%lld.%03lld",
                  static_cast<long long>(a.cpu_milli / 1000),
                  static_cast<long long>(a.cpu_milli % 1000));
    argv.push_back(cpus);
  }
  if (a.memory_mib > 0) argv.push_back("--memory=" + std::to_string(a.memory_mib) + "m");
  if (const std::string pull = Str(a.task, "imagePullPolicy"); !pull.empty()) {
    argv.push_back(pull == "Always"  ? "--pull=always"
                   : pull == "Never" ? "--pull=never"
                                     : "--pull=missing");
  }
  for (const std::string& m : mounts) {
    argv.push_back("-v");
    argv.push_back(m);
  }
  for (const auto& [path, content] : spec.files) {
    argv.push_back("-v");
    argv.push_back(path + ":" + path + ":ro");
  }
  if (const std::string dir = Str(a.task, "workingDir"); !dir.empty()) {
    argv.push_back("-w");
    argv.push_back(dir);
  }
  const auto found = env.find("TESSERA_GPU_UUIDS");
  const std::string uuids = found == env.end() ? "" : found->second;
  size_t start = 0;
  while (start < uuids.size()) {
    const size_t comma = std::min(uuids.find(',', start), uuids.size());
    argv.push_back("--device");
    argv.push_back("nvidia.com/gpu=" + uuids.substr(start, comma - start));
    start = comma + 1;
  }
  // The container's user is the runtime's business; the runtime itself runs as the agent.
  if (uid >= 0 || gid >= 0) {
    argv.push_back("--user");
    argv.push_back(std::to_string(uid >= 0 ? uid : 0) +
                   (gid >= 0 ? ":" + std::to_string(gid) : ""));
  }
  for (const auto& [k, v] : env) {
    argv.push_back("-e");
    argv.push_back(k + "=" + v);
  }
  return argv;
}

}  // namespace

Result<ProcessSpec> SpecFor(const Assignment& a, const NodeGpus& gpus, const std::string& node,
                            const std::string& root, const std::string& container_runtime,
                            const ShareIsolation& isolation, const TaskUsers& users) {
  ProcessSpec spec;
  spec.key = a.key;
  spec.workdir = root + "/work/" + a.key;
  spec.log_path = PodLogPath(root, a.key, a.uid);
  int64_t uid = Int(a.task, "runAsUser", -1), gid = Int(a.task, "runAsGroup", -1);
  std::vector<std::string> command;
  for (const char* part : {"command", "args"}) {
    for (const json& c : a.task.value(part, json::array())) {
      if (c.is_string()) command.push_back(c.get<std::string>());
    }
  }
  std::map<std::string, std::string> env = TaskEnv(a, gpus, node, spec);
  const std::string image = Str(a.task, "image");
  std::vector<std::string> mounts = AddVolumes(a, spec, env);
  IsolateShare(a, root, isolation, users, !image.empty(), spec, env, mounts, uid, gid);
  // Kubernetes' $(VAR) references in env values, command and args, against the pod's
  // environment (a task's env is a map: every other variable, not only those listed before).
  const std::map<std::string, std::string> unexpanded = env;
  for (auto& [k, v] : env) v = ExpandRefs(v, unexpanded, k);
  for (std::string& c : command) c = ExpandRefs(c, env, "");
  if (!image.empty()) {
    if (container_runtime.empty()) return FailedPrecondition(NoRuntimeMessage(image));
    // Named after the pod ("/" is not allowed in names), so that it can be found and stopped.
    std::string name = "tessera-" + a.key;
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
        c = '_';
      }
    }
    spec.container = name;
    spec.argv = ContainerArgv(a, spec, container_runtime, image, env, mounts, uid, gid);
    spec.argv.push_back(image);
    spec.argv.insert(spec.argv.end(), command.begin(), command.end());
  } else {
    if (command.empty()) {
      return FailedPrecondition("the task has neither a command nor an image to run");
    }
    spec.argv = command;
    spec.uid = uid;
    spec.gid = gid;
    spec.cwd = Str(a.task, "workingDir");
  }
  spec.env = std::move(env);
  return spec;
}

bool Assignment::mpi_launcher() const {
  return mpi.is_object() && !Str(mpi, "launcher").empty() &&
         Str(task, "name") == Str(mpi, "launcher");
}

namespace {

// `s` quoted for sh.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Status SetUpMpiLauncher(const Assignment& a, const LauncherAccess& access, ProcessSpec* spec) {
  namespace fs = std::filesystem;
  const std::string dir = fs::absolute(spec->workdir + "/mpi").string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("directory " + dir + ": " + ec.message());
  fs::permissions(dir, fs::perms::owner_all, ec);
  const std::string token = dir + "/token";
  {
    const int fd = open(token.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return Internal("file " + token + ": " + std::strerror(errno));
    const bool ok = write(fd, access.token.data(), access.token.size()) ==
                    static_cast<ssize_t>(access.token.size());
    close(fd);
    if (!ok) return Internal("file " + token + ": cannot be written");
  }
  if (spec->uid >= 0 || spec->gid >= 0) {
    for (const std::string& path : {dir, token}) {
      if (chown(path.c_str(), static_cast<uid_t>(spec->uid), static_cast<gid_t>(spec->gid)) != 0) {
        return Internal("file " + path + ": " + std::strerror(errno));
      }
    }
  }
  const int64_t slots = Int(a.mpi, "slotsPerWorker", 1);
  std::string hosts;
  for (size_t i = 0; i < a.member_pods.size() && i < a.members.size(); ++i) {
    if (i == a.pod_index || a.member_pods[i].empty()) continue;
    hosts += a.member_pods[i] + " slots=" + std::to_string(slots) + "\n";
  }
  const std::string hostfile = dir + "/hostfile", rsh = dir + "/rsh";
  spec->files[hostfile] = hosts;
  std::string script =
      "#!/bin/sh\n"
      "# mpirun's rsh agent: runs the command in the pod named as the host, via tessera exec.\n"
      "pod=$1\nshift\n"
      "TESSERA_TOKEN=$(cat " +
      ShellQuote(token) + ") exec " + ShellQuote(access.tessera) + " exec --server " +
      ShellQuote(access.server) +
      (access.ca_file.empty() ? "" : " --ca-file " + ShellQuote(access.ca_file)) + " -n " +
      ShellQuote(a.ns) + " " + ShellQuote(a.job) + " -p \"$pod\" --wait 120 -- sh -c \"$*\"\n";
  spec->files[rsh] = script;
  spec->executables.insert(rsh);
  for (const char* k :
       {"OMPI_MCA_plm_rsh_agent", "I_MPI_HYDRA_BOOTSTRAP_EXEC", "HYDRA_LAUNCHER_EXEC"}) {
    spec->env[k] = rsh;
  }
  for (const char* k :
       {"OMPI_MCA_orte_default_hostfile", "I_MPI_HYDRA_HOST_FILE", "HYDRA_HOST_FILE"}) {
    spec->env[k] = hostfile;
  }
  spec->env["OMPI_MCA_plm_rsh_no_tree_spawn"] = "1";
  spec->env["I_MPI_HYDRA_BOOTSTRAP"] = "rsh";
  spec->env["HYDRA_LAUNCHER"] = "rsh";
  return Status::Ok();
}

}  // namespace tessera::agent
