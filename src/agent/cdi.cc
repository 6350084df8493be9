#include "agent/cdi.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

extern char** environ;

namespace tessera::agent {

using nlohmann::json;

namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryDirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                        "/usr/lib64", "/usr/lib"};
constexpr const char* kLibraries[] = {"libcuda.so", "libnvidia-ml.so",
                                      "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so"};
constexpr const char* kControlNodes[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                         "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : "";
}

// "Device Minor: 3" of the driver's information about the GPU at `bus_id`; -1 when unknown.
int Minor(const std::string& root, std::string bus_id) {
  for (char& c : bus_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // The driver names GPUs by a 4-digit PCI domain; NVML reports 8.
  if (bus_id.size() == 16 && bus_id.starts_with("0000")) bus_id = bus_id.substr(4);
  std::istringstream info(Read(root + "/proc/driver/nvidia/gpus/" + bus_id + "/information"));
  for (std::string line; std::getline(info, line);) {
    if (!line.starts_with("Device Minor:")) continue;
    try {
      return std::stoi(line.substr(13));
    } catch (...) {
      return -1;
    }
  }
  return -1;
}

// The capability device minors of MIG: "gpu0/gi1/access 12" per line.
std::map<std::string, int> MigMinors(const std::string& root) {
  std::map<std::string, int> out;
  std::istringstream in(Read(root + "/proc/driver/nvidia-caps/mig-minors"));
  std::string name;
  int minor = 0;
  while (in >> name >> minor) out[name] = minor;
  return out;
}

json Node(const std::string& path) { return {{"path", path}}; }

}  // namespace

Result<json> CdiSpec(const NodeGpus& gpus, const std::string& root) {
  const std::map<std::string, int> caps = MigMinors(root);
  json devices = json::array();
  for (const GpuInfo& g : gpus.gpus) {
    const int minor = Minor(root, g.pci_bus_id);
    if (minor < 0) {
      return FailedPrecondition("GPU " + std::to_string(g.index) + " (" + g.uuid +
                                "): no device minor in /proc/driver/nvidia/gpus/" + g.pci_bus_id);
    }
    const json card = {{"deviceNodes", {Node("/dev/nvidia" + std::to_string(minor))}}};
    devices.push_back({{"name", g.uuid}, {"containerEdits", card}});
    devices.push_back({{"name", std::to_string(g.index)}, {"containerEdits", card}});
    // A MIG device: its card's node and the capabilities of its GPU and compute instances.
    for (const MigDeviceInfo& m : g.mig_devices) {
      json nodes = card["deviceNodes"];
      const std::string gi =
          "gpu" + std::to_string(minor) + "/gi" + std::to_string(m.gpu_instance_id);
      for (const std::string& cap :
           {gi + "/access", gi + "/ci" + std::to_string(m.compute_instance_id) + "/access"}) {
        auto it = caps.find(cap);
        if (it != caps.end()) {
          nodes.push_back(Node("/dev/nvidia-caps/nvidia-cap" + std::to_string(it->second)));
        }
      }
      devices.push_back({{"name", m.uuid}, {"containerEdits", {{"deviceNodes", nodes}}}});
    }
  }
  json common_nodes = json::array();
  for (const char* n : kControlNodes) {
    if (fs::exists(root + n)) common_nodes.push_back(Node(n));
  }
  // The driver's libraries under every name they have (libcuda.so.1 and libcuda.so.550.54.15),
  // so that the container's loader finds them without an ldconfig of its own.
  json mounts = json::array();
  const auto mount = [&](const std::string& path) {
    mounts.push_back({{"hostPath", path},
                      {"containerPath", path},
                      {"options", {"ro", "nosuid", "nodev", "bind"}}});
  };
  for (const char* dir : kLibraryDirs) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(root + dir, ec)) {
      const std::string name = e.path().filename().string();
      for (const char* lib : kLibraries) {
        if (name.starts_with(std::string(lib) + "."))
          found.push_back(std::string(dir) + "/" + name);
      }
    }
    std::sort(found.begin(), found.end());
    for (const std::string& f : found) mount(f);
  }
  if (fs::exists(root + "/usr/bin/nvidia-smi")) mount("/usr/bin/nvidia-smi");
  return json{{"cdiVersion", "0.5.0"},
              {"kind", "nvidia.com/gpu"},
              {"devices", devices},
              {"containerEdits",
               {{"deviceNodes", common_nodes},
                {"mounts", mounts},
                {"env", {"NVIDIA_VISIBLE_DEVICES=void"}}}}};
}

Result<std::string> EnsureCdiSpec(const NodeGpus& gpus, const std::string& root,
                                  const std::string& path_env) {
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(root + dir, ec)) {
      const std::string text = Read(e.path().string());
      if (text.find("nvidia.com/gpu") != std::string::npos) {
        return "CDI spec for nvidia.com/gpu found: " + e.path().string().substr(root.size());
      }
    }
  }
  // Created only when a spec is about to be written there.
  const auto spec_dir = [&]() -> Status {
    std::error_code ec;
    fs::create_directories(root + "/var/run/cdi", ec);
    return ec ? Internal(root + "/var/run/cdi: " + ec.message()) : Status::Ok();
  };
  // NVIDIA's own generator, when installed.
  std::istringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string ctk = dir + "/nvidia-ctk";
    if (dir.empty() || access(ctk.c_str(), X_OK) != 0) continue;
    TESSERA_RETURN_IF_ERROR(spec_dir());
    const std::string output = root + "/var/run/cdi/nvidia.yaml";
    std::vector<std::string> args = {ctk, "cdi", "generate", "--output=" + output};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    int status = 0;
    if (posix_spawn(&pid, ctk.c_str(), nullptr, nullptr, argv.data(), environ) != 0 ||
        waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return Internal("nvidia-ctk cdi generate failed (exit " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    }
    return "CDI spec generated by " + ctk + ": /var/run/cdi/nvidia.yaml";
  }
  auto spec = CdiSpec(gpus, root);
  if (!spec.ok()) return spec.status();
  TESSERA_RETURN_IF_ERROR(spec_dir());
  const std::string path = root + "/var/run/cdi/tessera-nvidia.json";
  std::ofstream out(path, std::ios::trunc);
  out << spec->dump(2) << "\n";
  if (!out.flush()) return Internal(path + ": cannot be written");
  return std::string("CDI spec written from NVML's inventory: /var/run/cdi/tessera-nvidia.json");
}

}  // namespace tessera::agent
