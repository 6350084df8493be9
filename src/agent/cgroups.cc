#include "agent/cgroups.h"

#include <filesystem>
#include <fstream>

namespace tessera::agent {

namespace fs = std::filesystem;

std::string CgroupDir(const std::string& root, const std::string& key) {
  std::string name = key;
  for (char& c : name) c = c == '/' ? '_' : c;
  return root + "/tessera/" + name;
}

Result<CgroupLimits> PrepareCgroup(const std::string& root, const std::string& key,
                                   int64_t cpu_milli, int64_t memory_mib) {
  if (!fs::exists(root + "/cgroup.controllers")) {
    return FailedPrecondition("cgroup v2 is not mounted at " + root);
  }
  CgroupLimits out;
  out.dir = CgroupDir(root, key);
  std::error_code ec;
  fs::create_directories(out.dir, ec);
  if (ec) return FailedPrecondition("cannot create " + out.dir + ": " + ec.message());
  const std::string cpu = cpu_milli > 0 ? std::to_string(cpu_milli * 100) + " 100000" : "max";
  const std::string mem = memory_mib > 0 ? std::to_string(memory_mib * 1024 * 1024) : "max";
  for (const auto& [file, value] : {std::pair{"cpu.max", cpu}, std::pair{"memory.max", mem}}) {
    std::ofstream f(out.dir + "/" + file);
    f << value << "\n";
    f.flush();
    if (!f) return FailedPrecondition("cannot write " + out.dir + "/" + file);
  }
  out.procs_path = out.dir + "/cgroup.procs";
  out.description = "cpu.max=" + cpu + ", memory.max=" + mem;
  return out;
}

void RemoveCgroup(const std::string& dir) {
  std::error_code ec;
  fs::remove(dir, ec);  // a real cgroup directory goes with rmdir once empty
  if (ec) fs::remove_all(dir, ec);
}

}  // namespace tessera::agent
