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
  // Effective value per resource: the request, else the limit.
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

  core::Resources res;
  int64_t gpus = -1;  // nvidia.com/gpu, -1: absent
  int64_t replicas = 0;
  int64_t milli = 0;
  int64_t mem_mib = 0;
  int64_t core_pct = 0;
  std::string mig_profile;
  int64_t mig_count = 0;
  std::set<std::string> share_keys;

  for (const auto& [name, vp] : eff) {
    const auto& [value, path] = vp;
    if (name == "cpu") {
      Result<Quantity> q = ParseQuantity(value, path);
      if (!q.ok()) return q.status();
      Result<int64_t> v = ToMilli(*q, path);
      if (!v.ok()) return v.status();
      res.cpu_milli = *v;
    } else if (name == "memory") {
      Result<Quantity> q = ParseQuantity(value, path);
      if (!q.ok()) return q.status();
      Result<int64_t> v = ToMebibytes(*q, path);
      if (!v.ok()) return v.status();
      res.memory_mib = *v;
    } else if (name == "ephemeral-storage") {
      Result<Quantity> q = ParseQuantity(value, path);
      if (!q.ok()) return q.status();
      if (q->negative()) return InvalidArgument(path + ": must not be negative");
    } else if (name == "nvidia.com/gpu") {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      gpus = *v;
    } else if (name == "nvidia.com/gpu.shared") {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      replicas = *v;
    } else if (IsMigResource(name)) {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      if (*v == 0) continue;
      if (!mig_profile.empty()) {
        return InvalidArgument(path + ": a pod may request one MIG profile, already has " +
                               mig_profile);
      }
      mig_profile = name.substr(std::string_view("nvidia.com/mig-").size());
      mig_count = *v;
    } else if (name == "tessera.io/gpu-milli") {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      if (*v < 1 || *v > 1000) {
        return InvalidArgument(path + ": must be in [1, 1000], got \"" + value + "\"");
      }
      milli = *v;
      share_keys.insert(name);
    } else if (name == "aliyun.com/gpu-mem") {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      if (*v < 1 || *v > 4096) {
        return InvalidArgument(path + ": must be in [1, 4096] GiB, got \"" + value + "\"");
      }
      mem_mib = *v * 1024;
      share_keys.insert(name);
    } else if (name == "nvidia.com/gpumem") {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      if (*v < 1 || *v > 4 * 1024 * 1024) {
        return InvalidArgument(path + ": must be in [1, 4194304] MiB, got \"" + value + "\"");
      }
      mem_mib = *v;
      share_keys.insert(name);
    } else if (name == "aliyun.com/gpu-core" || name == "nvidia.com/gpucores") {
      Result<int64_t> v = Integer(value, path);
      if (!v.ok()) return v.status();
      if (*v < 1 || *v > 100) {
        return InvalidArgument(path + ": must be a percent in [1, 100], got \"" + value + "\"");
      }
      core_pct = *v;
      share_keys.insert(name);
    } else {
      return InvalidArgument(path + ": unknown resource \"" + name +
                             "\" (known: cpu, memory, ephemeral-storage, nvidia.com/gpu, "
                             "nvidia.com/gpu.shared, nvidia.com/mig-<profile>, "
                             "tessera.io/gpu-milli, aliyun.com/gpu-mem, aliyun.com/gpu-core, "
                             "nvidia.com/gpumem, nvidia.com/gpucores)");
    }
  }
  if (share_keys.count("aliyun.com/gpu-mem") && share_keys.count("nvidia.com/gpumem")) {
    return InvalidArgument(base + ": aliyun.com/gpu-mem and nvidia.com/gpumem both set");
  }
  if (milli > 0 && core_pct > 0) {
    return InvalidArgument(base + ": tessera.io/gpu-milli and a compute percent both set");
  }

  core::GpuRequest gpu;
  const int kinds =
      (mig_count > 0) + (replicas > 0) + (!share_keys.empty()) + (gpus > 0 && share_keys.empty());
  if (kinds > 1) {
    return InvalidArgument(base +
                           ": a container requests one kind of GPU resource: whole GPUs, a "
                           "share, MIG instances or time-slice replicas");
  }
  if (mig_count > 0) {
    gpu.kind = GpuRequestKind::kMig;
    gpu.count = static_cast<int32_t>(mig_count);
    gpu.mig_profile = mig_profile;
  } else if (replicas > 0) {
    gpu.kind = GpuRequestKind::kReplica;
    gpu.count = static_cast<int32_t>(replicas);
  } else if (!share_keys.empty()) {
    if (gpus == 0) {
      return InvalidArgument(base + ".limits.nvidia.com/gpu: a GPU share needs at least 1 card");
    }
    gpu.kind = GpuRequestKind::kShare;
    gpu.count = static_cast<int32_t>(gpus > 0 ? gpus : 1);
    gpu.milli = static_cast<int32_t>(milli > 0 ? milli : core_pct * 10);
    gpu.memory_mib = mem_mib;
  } else if (gpus > 0) {
    gpu.kind = GpuRequestKind::kWhole;
    gpu.count = static_cast<int32_t>(gpus);
  }
  if (gpu.count > 1024) {
    return InvalidArgument(base + ": GPU count " + std::to_string(gpu.count) + " is absurd");
  }

  if (gpu.kind != GpuRequestKind::kNone && pod->gpu.kind != GpuRequestKind::kNone) {
    return InvalidArgument(base + ": only one container of a pod may request GPUs");
  }
  pod->requests += res;
  if (gpu.kind != GpuRequestKind::kNone) pod->gpu = gpu;
  return Status::Ok();
}

}  // namespace tessera::api
