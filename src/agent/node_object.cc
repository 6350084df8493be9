#include "agent/node_object.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace tessera::agent {

using nlohmann::json;

std::map<std::string, std::string> DiscoveredLabels(const NodeGpus& gpus) {
  std::map<std::string, std::string> l;
  l["nvidia.com/gpu.present"] = gpus.gpus.empty() ? "false" : "true";
  l["nvidia.com/gpu.count"] = std::to_string(gpus.gpus.size());
  if (!gpus.gpus.empty()) {
    l["nvidia.com/gpu.product"] = gpus.gpus[0].product;
    l["nvidia.com/gpu.memory"] = std::to_string(gpus.gpus[0].memory_mib);
    l["nvidia.com/mig.capable"] = gpus.gpus[0].mig_capable ? "true" : "false";
  }
  std::string driver;
  for (char c : gpus.driver_version) {
    driver += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '-';
  }
  if (!driver.empty()) l["nvidia.com/gpu.driver"] = driver.substr(0, 63);
  l["tessera.io/gpu.source"] = gpus.source;
  if (gpus.source == "fake") l["tessera.io/simulated"] = "true";
  return l;
}

json NodeObject(const NodeIdentity& id, const NodeGpus& gpus, const std::string& heartbeat_time) {
  json labels = json::object();
  for (const auto& [k, v] : DiscoveredLabels(gpus)) labels[k] = v;
  for (const auto& [k, v] : id.labels) labels[k] = v;
  json list = json::array();
  for (const GpuInfo& g : gpus.gpus) {
    // The scheduler places by model name: the normalized product, which the MIG catalog knows.
    json gpu = {{"index", g.index},
                {"uuid", g.uuid},
                {"model", g.product},
                {"memoryMiB", g.memory_mib},
                {"numaNode", g.numa_node}};
    // GPUs that are NVLink peers of each other share a domain: the lowest index among them.
    if (!g.nvlink_peers.empty()) {
      gpu["nvlinkDomain"] = std::min<uint32_t>(g.index, g.nvlink_peers.front());
    }
    list.push_back(std::move(gpu));
  }
  json spec = json::object();
  if (!id.taints.empty()) spec["taints"] = id.taints;
  json out = {{"apiVersion", "tessera.io/v1"},
              {"kind", "Node"},
              {"metadata", {{"name", id.name}, {"labels", labels}}},
              {"spec", spec},
              {"status",
               {{"allocatable",
                 {{"cpu", std::to_string(id.cpu_milli) + "m"},
                  {"memory", std::to_string(id.memory_mib) + "Mi"}}},
                {"gpus", list},
                {"driverVersion", gpus.driver_version},
                {"heartbeat", heartbeat_time}}}};
  if (!id.address.empty()) out["status"]["address"] = id.address;
  if (!id.boot_id.empty()) out["status"]["bootId"] = id.boot_id;
  return out;
}

Result<std::map<std::string, std::string>> ParseLabels(const std::string& spec) {
  std::map<std::string, std::string> out;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--labels: \"" + item + "\": expected KEY=VALUE");
    }
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

Result<json> ParseTaints(const std::string& spec) {
  json out = json::array();
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) {
      return InvalidArgument("--taints: \"" + item + "\": expected KEY[=VALUE]:EFFECT");
    }
    const std::string kv = item.substr(0, colon), effect = item.substr(colon + 1);
    if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
      return InvalidArgument("--taints: \"" + item +
                             "\": effect must be NoSchedule, PreferNoSchedule or NoExecute");
    }
    const size_t eq = kv.find('=');
    json t = {{"key", kv.substr(0, eq)}, {"effect", effect}};
    if (eq != std::string::npos) t["value"] = kv.substr(eq + 1);
    if (t["key"].get<std::string>().empty()) {
      return InvalidArgument("--taints: \"" + item + "\": the key is empty");
    }
    out.push_back(std::move(t));
  }
  return out;
}

void MachineCapacity(int64_t reserved_cpu_milli, int64_t reserved_memory_mib, NodeIdentity* id) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
  int64_t mem_kib = 0;
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    if (key == "MemTotal:") {
      in >> mem_kib;
      break;
    }
    std::string rest;
    std::getline(in, rest);
  }
  id->cpu_milli = std::max<int64_t>(0, cpus * 1000 - reserved_cpu_milli);
  id->memory_mib = std::max<int64_t>(0, mem_kib / 1024 - reserved_memory_mib);
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace tessera::agent
