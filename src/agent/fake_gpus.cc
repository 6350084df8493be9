#include "agent/fake_gpus.h"

#include <charconv>
#include <cstdio>
#include <map>

namespace tessera::agent {

namespace {

struct Model {
  const char* name;  // as NVML reports it
  int64_t memory_mib;
  bool nvlink;
  bool mig;
};

const std::map<std::string, Model, std::less<>>& Catalog() {
  static const std::map<std::string, Model, std::less<>> catalog = {
      {"H100-80GB", {"NVIDIA H100 80GB HBM3", 81559, true, true}},
      {"H200-141GB", {"NVIDIA H200", 143771, true, true}},
      {"A100-80GB", {"NVIDIA A100-SXM4-80GB", 81920, true, true}},
      {"A100-40GB", {"NVIDIA A100-SXM4-40GB", 40960, true, true}},
      {"A10", {"NVIDIA A10", 23028, false, false}},
      {"L4", {"NVIDIA L4", 23034, false, false}},
      {"T4", {"Tesla T4", 15360, false, false}},
      {"V100-32GB", {"Tesla V100-SXM2-32GB", 32768, true, false}},
      {"V100-16GB", {"Tesla V100-SXM2-16GB", 16384, true, false}},
  };
  return catalog;
}

// FNV-1a: stable across builds and platforms.
uint32_t Fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

Result<NodeGpus> FakeGpus(std::string_view spec, std::string_view node) {
  NodeGpus out;
  out.source = "fake";
  out.driver_version = "simulated";
  out.nvml_version = "simulated";
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) of each NVLink group
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view part = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const size_t x = part.find('x');
    int count = 0;
    const std::string_view num = x == std::string_view::npos ? "" : part.substr(0, x);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), count);
    if (x == std::string_view::npos || ec != std::errc() || p != num.data() + num.size() ||
        count < 1 || count > 64) {
      return InvalidArgument("--fake-gpus: \"" + std::string(part) +
                             "\": expected COUNTxPRODUCT with COUNT in 1..64, e.g. 8xH100-80GB");
    }
    const std::string_view product = part.substr(x + 1);
    auto it = Catalog().find(product);
    if (it == Catalog().end()) {
      std::string known;
      for (const auto& [name, m] : Catalog()) known += (known.empty() ? "" : ", ") + name;
      return InvalidArgument("--fake-gpus: unknown product \"" + std::string(product) +
                             "\" (known: " + known + ")");
    }
    const size_t begin = out.gpus.size();
    for (int i = 0; i < count; ++i) {
      GpuInfo g;
      g.index = static_cast<uint32_t>(out.gpus.size());
      char uuid[96];
      std::snprintf(uuid, sizeof uuid, "GPU-%08x-0000-4000-8000-%012x",
                    static_cast<unsigned>(Fnv1a(node)), g.index);
      g.uuid = uuid;
      g.name = it->second.name;
      g.product = std::string(product);
      g.memory_mib = it->second.memory_mib;
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x10 + g.index * 0x10);
      g.pci_bus_id = bus;
      g.mig_capable = it->second.mig;
      g.ecc_enabled = true;
      out.gpus.push_back(std::move(g));
    }
    if (it->second.nvlink) groups.emplace_back(begin, out.gpus.size());
    if (out.gpus.size() > 64) return InvalidArgument("--fake-gpus: at most 64 GPUs per node");
  }
  if (out.gpus.empty()) return InvalidArgument("--fake-gpus: no GPUs given");
  // NUMA: the first half of the node's GPUs on node 0, the rest on node 1.
  for (GpuInfo& g : out.gpus) g.numa_node = g.index < (out.gpus.size() + 1) / 2 ? 0 : 1;
  for (const auto& [b, e] : groups) {
    for (size_t i = b; i < e; ++i) {
      for (size_t j = b; j < e; ++j) {
        if (i != j) out.gpus[i].nvlink_peers.push_back(static_cast<uint32_t>(j));
      }
    }
  }
  return out;
}

}  // namespace tessera::agent
