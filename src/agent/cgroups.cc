#include "agent/cgroups.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>
#include <vector>

namespace tessera::agent {

namespace fs = std::filesystem;

std::string CgroupDir(const std::string& root, const std::string& key, const std::string& agent) {
  std::string name = key;
  for (char& c : name) c = c == '/' ? '_' : c;
  return root + "/tessera/" + (agent.empty() ? "" : agent + "/") + name;
}

Result<CgroupLimits> PrepareCgroup(const std::string& root, const std::string& key,
                                   int64_t cpu_milli, int64_t memory_mib,
                                   const std::string& agent) {
  if (!fs::exists(root + "/cgroup.controllers")) {
    return FailedPrecondition("cgroup v2 is not mounted at " + root);
  }
  CgroupLimits out;
  out.dir = CgroupDir(root, key, agent);
  std::error_code ec;
  fs::create_directories(out.dir, ec);
  if (ec) return FailedPrecondition("cannot create " + out.dir + ": " + ec.message());
  // A group has cpu.max and memory.max only where every group above it hands it those
  // controllers (cgroup.subtree_control); the groups above a pod's hold no process, so they may.
  // From the top down: a group hands on only what its parent handed it.
  std::vector<fs::path> above;
  for (fs::path up = fs::path(out.dir).parent_path();; up = up.parent_path()) {
    above.push_back(up);
    if (up == fs::path(root) || up == up.parent_path()) break;
  }
  for (auto it = above.rbegin(); it != above.rend(); ++it) {
    if (!fs::exists(*it / "cgroup.subtree_control")) continue;
    for (const char* controller : {"+cpu", "+memory"}) {
      std::ofstream(*it / "cgroup.subtree_control") << controller << "\n";
    }
  }
  const std::string cpu = cpu_milli > 0 ? std::to_string(cpu_milli * 100) + " 100000" : "max";
  const std::string mem = memory_mib > 0 ? std::to_string(memory_mib * 1024 * 1024) : "max";
  // A group made in a real hierarchy has a file per enabled controller; one standing in for
  // a mount (tests) is written as the controllers file says.
  std::ifstream controllers(root + "/cgroup.controllers");
  std::string listed((std::istreambuf_iterator<char>(controllers)), {});
  const bool real = fs::exists(out.dir + "/cgroup.procs");
  std::vector<std::string> parts;
  for (const auto& [file, value, controller] :
       {std::tuple{"cpu.max", cpu, "cpu"}, std::tuple{"memory.max", mem, "memory"}}) {
    const bool there =
        real ? fs::exists(out.dir + "/" + file) : listed.find(controller) != std::string::npos;
    if (!there) {
      parts.push_back(std::string(file) + " not applied (no " + controller + " controller)");
      continue;
    }
    std::ofstream f(out.dir + "/" + file);
    f << value << "\n";
    f.flush();
    if (!f) return FailedPrecondition("cannot write " + out.dir + "/" + file);
    parts.push_back(std::string(file) + "=" + value);
  }
  out.procs_path = out.dir + "/cgroup.procs";
  for (const std::string& p : parts) out.description += (out.description.empty() ? "" : ", ") + p;
  return out;
}

Result<std::string> FindCgroupRoot(const std::string& wanted) {
  std::vector<std::string> candidates;
  if (wanted == "auto") {
    candidates = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  } else {
    candidates = {wanted};
  }
  std::string why;
  for (const std::string& root : candidates) {
    if (!fs::exists(root + "/cgroup.controllers")) {
      why += (why.empty() ? "" : "; ") + ("no cgroup v2 hierarchy at " + root);
      continue;
    }
    std::error_code ec;
    fs::create_directories(root + "/tessera", ec);
    if (ec) {
      why += (why.empty() ? "" : "; ") + ("cannot create " + root + "/tessera: " + ec.message());
      continue;
    }
    return root;
  }
  return FailedPrecondition(why);
}

void RemoveCgroup(const std::string& dir) {
  std::error_code ec;
  fs::remove(dir, ec);  // a real cgroup directory goes with rmdir once empty
  if (ec) fs::remove_all(dir, ec);
}

}  // namespace tessera::agent
