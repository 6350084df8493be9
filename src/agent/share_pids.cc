#include "agent/share_pids.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "interpose/share_region.h"

namespace tessera::agent {

namespace {

uint64_t NamespaceOf(const std::string& proc_entry) {
  struct stat st {};
  return stat((proc_entry + "/ns/pid").c_str(), &st) == 0 ? st.st_ino : 0;
}

// The last pid of the NSpid line of `status_path`: the pid in the process's own namespace.
int32_t InnermostPid(const std::string& status_path) {
  std::ifstream in(status_path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    int32_t pid = 0, last = 0;
    while (fields >> pid) last = pid;
    return last;
  }
  return 0;
}

}  // namespace

int32_t HostPid(uint64_t pid_ns, int32_t pid, const std::string& proc) {
  if (pid_ns == 0 || pid <= 0) return 0;
  if (pid_ns == NamespaceOf(proc + "/self")) return pid;
  DIR* dir = opendir(proc.c_str());
  if (dir == nullptr) return 0;
  int32_t found = 0;
  while (dirent* e = readdir(dir)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    const std::string entry = proc + "/" + e->d_name;
    if (NamespaceOf(entry) != pid_ns || InnermostPid(entry + "/status") != pid) continue;
    found = static_cast<int32_t>(std::atoi(e->d_name));
    break;
  }
  closedir(dir);
  return found;
}

Result<int> MapSharePids(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) return NotFound("no share region at " + path);
  interpose::ShareRegion region;
  char error[320];
  if (!region.Open(path.c_str(), error, sizeof error)) return Internal(error);
  const int unknown = region.MapHostPids(
      [](uint64_t pid_ns, int32_t pid, void*) { return HostPid(pid_ns, pid); }, nullptr);
  region.Close();
  return unknown;
}

}  // namespace tessera::agent
