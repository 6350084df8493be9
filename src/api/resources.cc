#include "api/resources.h"

#include <set>

#include "api/quantity.h"

namespace tessera::api {

namespace {

using core::GpuRequestKind;

// A non-negative whole number ("0" means none of that resource).
Result<int64_t> Integer(const std::string& text, const std::string& field) {
  Result<Quantity> q = ParseQuantity(text, field);
  if (!q.ok()) return q.status();
  Result<int64_t> v = ToInteger(*q, field);
  if (!v.ok()) {
    return InvalidArgument(field + ": must be a positive integer, got \"" + text + "\"");
  }
  return v;
}

bool IsMigResource(std::string_view name) { return name.starts_with("nvidia.com/mig-"); }

// What a container's resources say, read one resource at a time.
struct ContainerAsk {
  core::Resources res;
  int64_t gpus = -1;  // nvidia.com/gpu, -1: absent
  int64_t replicas = 0;
  int64_t milli = 0;
  int64_t mem_mib = 0;
  int64_t core_pct = 0;
  std::string mig_profile;
  int64_t mig_count = 0;
  std::set<std::string> share_keys;
};

// Effective value per resource, with the path it came from: the request, else the limit. A GPU
// resource's request must equal its limit.
Result<std::map<std::string, std::pair<std::string, std::string>>> EffectiveValues(
    const ResourceList& limits, const ResourceList& requests, const std::string& base) {
  std::map<std::string, std::pair<std::string, std::string>> eff;  // name -> (value, path)
  for (const auto& [name, value] : limits) eff[name] = {value, base + ".limits." + name};
  for (const auto& [name, value] : requests) {
    auto it = limits.find(name);
    const bool extended = name != "cpu" && name != "memory" && name != "ephemeral-storage";
    if (extended && it != limits.end() && it->second != value) {
      // Compare numerically: "1" and "1.0" are equal.
      Result<Quantity> a = ParseQuantity(value, base + ".requests." + name);
      Result<Quantity> b = ParseQuantity(it->second, base + ".limits." + name);
      if (!a.ok()) return a.status();
      if (!b.ok()) return b.status();
      if (a->nano != b->nano) {
        return InvalidArgument(base + ".requests." + name + ": must equal the limit (" +
                               it->second + ") for a GPU resource, got \"" + value + "\"");
      }
    }
    eff[name] = {value, base + ".requests." + name};
  }
  return eff;
}

// A share's size in one of the units the sharing device plugins use: a whole number in
// [low, high], `unit` naming it in the error.
Result<int64_t> ShareAmount(const std::string& value, const std::string& path, int64_t low,
                            int64_t high, const std::string& unit) {
  Result<int64_t> v = Integer(value, path);
  if (!v.ok()) return v.status();
  if (*v < low || *v > high) {
    return InvalidArgument(path + ": must be in [" + std::to_string(low) + ", " +
                           std::to_string(high) + "]" + unit + ", got \"" + value + "\"");
  }
  return v;
}

// One GPU resource, whole cards, replicas, MIG instances or a share; false when `name` is none.
Result<bool> ReadGpuResource(const std::string& name, const std::string& value,
                             const std::string& path, ContainerAsk& ask) {
  if (name == "nvidia.com/gpu" || name == "nvidia.com/gpu.shared" || IsMigResource(name)) {
    Result<int64_t> v = Integer(value, path);
    if (!v.ok()) return v.status();
    if (name == "nvidia.com/gpu") {
      ask.gpus = *v;
    } else if (name == "nvidia.com/gpu.shared") {
      ask.replicas = *v;
    } else if (*v > 0) {
      if (!ask.mig_profile.empty()) {
        return InvalidArgument(path + ": a pod may request one MIG profile, already has " +
                               ask.mig_profile);
      }
      ask.mig_profile = name.substr(std::string_view("nvidia.com/mig-").size());
      ask.mig_count = *v;
    }
    return true;
  }
  // A share: compute in thousandths or percent, memory in GiB or MiB.
  struct Unit {
    const char* name;
    int64_t high;
    const char* unit;
    int64_t ContainerAsk::*field;
    int64_t scale;
  };
  static constexpr Unit kUnits[] = {
      {"tessera.io/gpu-milli", 1000, " thousandths of a GPU", &ContainerAsk::milli, 1},
      {"aliyun.com/gpu-mem", 4096, " GiB", &ContainerAsk::mem_mib, 1024},
      {"nvidia.com/gpumem", 4 * 1024 * 1024, " MiB", &ContainerAsk::mem_mib, 1},
      {"aliyun.com/gpu-core", 100, " percent", &ContainerAsk::core_pct, 1},
      {"nvidia.com/gpucores", 100, " percent", &ContainerAsk::core_pct, 1},
  };
  for (const Unit& u : kUnits) {
    if (name != u.name) continue;
    Result<int64_t> v = ShareAmount(value, path, 1, u.high, u.unit);
    if (!v.ok()) return v.status();
    ask.*u.field = *v * u.scale;
    ask.share_keys.insert(name);
    return true;
  }
  return false;
}

// One resource of the container's, into `ask`.
Status ReadResource(const std::string& name, const std::string& value, const std::string& path,
                    ContainerAsk& ask) {
  if (name == "cpu" || name == "memory" || name == "ephemeral-storage") {
    Result<Quantity> q = ParseQuantity(value, path);
    if (!q.ok()) return q.status();
    if (name == "ephemeral-storage") {
      return q->negative() ? InvalidArgument(path + ": must not be negative") : Status::Ok();
    }
    Result<int64_t> v = name == "cpu" ? ToMilli(*q, path) : ToMebibytes(*q, path);
    if (!v.ok()) return v.status();
    (name == "cpu" ? ask.res.cpu_milli : ask.res.memory_mib) = *v;
    return Status::Ok();
  }
  Result<bool> gpu = ReadGpuResource(name, value, path, ask);
  if (!gpu.ok()) return gpu.status();
  if (*gpu) return Status::Ok();
  return InvalidArgument(path + ": unknown resource \"" + name +
                         "\" (known: cpu, memory, ephemeral-storage, nvidia.com/gpu, "
                         "nvidia.com/gpu.shared, nvidia.com/mig-<profile>, "
                         "tessera.io/gpu-milli, aliyun.com/gpu-mem, aliyun.com/gpu-core, "
                         "nvidia.com/gpumem, nvidia.com/gpucores)");
}

// The one kind of GPU request the container's resources make.
Result<core::GpuRequest> GpuRequestOf(const ContainerAsk& ask, const std::string& base) {
  if (ask.share_keys.count("aliyun.com/gpu-mem") && ask.share_keys.count("nvidia.com/gpumem")) {
    return InvalidArgument(base + ": aliyun.com/gpu-mem and nvidia.com/gpumem both set");
  }
  if (ask.milli > 0 && ask.core_pct > 0) {
    return InvalidArgument(base + ": tessera.io/gpu-milli and a compute percent both set");
  }
  core::GpuRequest gpu;
  const int kinds = (ask.mig_count > 0) + (ask.replicas > 0) + (!ask.share_keys.empty()) +
                    (ask.gpus > 0 && ask.share_keys.empty());
  if (kinds > 1) {
    return InvalidArgument(base +
                           ": a container requests one kind of GPU resource: whole GPUs, a "
                           "share, MIG instances or time-slice replicas");
  }
  if (ask.mig_count > 0) {
    gpu.kind = GpuRequestKind::kMig;
    gpu.count = static_cast<int32_t>(ask.mig_count);
    gpu.mig_profile = ask.mig_profile;
  } else if (ask.replicas > 0) {
    gpu.kind = GpuRequestKind::kReplica;
    gpu.count = static_cast<int32_t>(ask.replicas);
  } else if (!ask.share_keys.empty()) {
    if (ask.gpus == 0) {
      return InvalidArgument(base + ".limits.nvidia.com/gpu: a GPU share needs at least 1 card");
    }
    gpu.kind = GpuRequestKind::kShare;
    gpu.count = static_cast<int32_t>(ask.gpus > 0 ? ask.gpus : 1);
    gpu.milli = static_cast<int32_t>(ask.milli > 0 ? ask.milli : ask.core_pct * 10);
    gpu.memory_mib = ask.mem_mib;
  } else if (ask.gpus > 0) {
    gpu.kind = GpuRequestKind::kWhole;
    gpu.count = static_cast<int32_t>(ask.gpus);
  }
  if (gpu.count > 1024) {
    return InvalidArgument(base + ": GPU count " + std::to_string(gpu.count) + " is absurd");
  }
  return gpu;
}

}  // namespace

std::vector<std::string> ParseGpuModels(std::string_view spec) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t bar = spec.find('|', start);
    if (bar == std::string_view::npos) bar = spec.size();
    std::string_view part = spec.substr(start, bar - start);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    start = bar + 1;
  }
  return out;
}

Status ApplyContainerResources(const ResourceList& limits, const ResourceList& requests,
                               std::string_view field, core::PodSpec* pod) {
  const std::string base(field);
  auto eff = EffectiveValues(limits, requests, base);
  if (!eff.ok()) return eff.status();
  ContainerAsk ask;
  for (const auto& [name, vp] : *eff) {
    const auto& [value, path] = vp;
    TESSERA_RETURN_IF_ERROR(ReadResource(name, value, path, ask));
  }
  Result<core::GpuRequest> gpu = GpuRequestOf(ask, base);
  if (!gpu.ok()) return gpu.status();
  if (gpu->kind != GpuRequestKind::kNone && pod->gpu.kind != GpuRequestKind::kNone) {
    return InvalidArgument(base + ": only one container of a pod may request GPUs");
  }
  pod->requests += ask.res;
  if (gpu->kind != GpuRequestKind::kNone) pod->gpu = *gpu;
  return Status::Ok();
}

}  // namespace tessera::api
