// Which container runtime runs the tasks that name an image.
#ifndef TESSERA_AGENT_CONTAINER_RUNTIME_H_
#define TESSERA_AGENT_CONTAINER_RUNTIME_H_

#include <string>

namespace tessera::agent {

// The runtimes looked for, in order, when none is named.
inline constexpr const char* kRuntimesLookedFor[] = {"podman", "docker", "nerdctl"};

// The command tasks with an image run through: `configured` when it is set ("none": no
// runtime at all), else the path of the first of kRuntimesLookedFor that is an executable file
// in a directory of `path` (a PATH value); empty when there is none.
std::string FindContainerRuntime(const std::string& configured, const std::string& path);

// "podman, docker, nerdctl".
std::string RuntimesLookedFor();

// What a task with `image` is told when the node has no runtime: what was looked for and how
// to name one.
std::string NoRuntimeMessage(const std::string& image);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_CONTAINER_RUNTIME_H_
