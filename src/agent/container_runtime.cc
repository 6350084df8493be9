#include "agent/container_runtime.h"

#include <sys/stat.h>
#include <unistd.h>

namespace tessera::agent {

std::string FindContainerRuntime(const std::string& configured, const std::string& path) {
  if (configured == "none") return "";
  if (!configured.empty()) return configured;
  for (const char* name : kRuntimesLookedFor) {
    size_t start = 0;
    while (start <= path.size()) {
      const size_t colon = std::min(path.find(':', start), path.size());
      const std::string dir = path.substr(start, colon - start);
      start = colon + 1;
      if (dir.empty()) continue;
      const std::string candidate = dir + "/" + name;
      struct stat st {};
      if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          access(candidate.c_str(), X_OK) == 0) {
        return candidate;
      }
    }
  }
  return "";
}

std::string RuntimesLookedFor() {
  std::string out;
  for (const char* name : kRuntimesLookedFor) out += std::string(out.empty() ? "" : ", ") + name;
  return out;
}

std::string NoRuntimeMessage(const std::string& image) {
  return "the task has image " + image + " but this node has no container runtime (none of " +
         RuntimesLookedFor() +
         " is on the agent's PATH): install one, or name one with tessera agent "
         "--container-runtime (tessera dev --container-runtime)";
}

}  // namespace tessera::agent
