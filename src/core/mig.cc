#include "core/mig.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tessera::core {
namespace {

constexpr uint8_t Starts(std::initializer_list<int> s) {
  uint8_t m = 0;
  for (int i : s) m |= static_cast<uint8_t>(1u << i);
  return m;
}

constexpr uint8_t kAll7 = Starts({0, 1, 2, 3, 4, 5, 6});
constexpr uint8_t kEven4 = Starts({0, 2, 4, 6});
constexpr uint8_t kEven3 = Starts({0, 2, 4});
constexpr uint8_t kHalves = Starts({0, 4});
constexpr uint8_t kZero = Starts({0});

// The seven-slice family (A100, H100, H200) differs only in profile names.
// clang-format off
#define TESSERA_SEVEN_SLICE(p1, p1me, p1x2, p2, p3, p4, p7)                   \
  {p1, 1, 1, kAll7, 7},  {p1me, 1, 1, kAll7, 1}, {p1x2, 1, 2, kEven4, 4},     \
  {p2, 2, 2, kEven3, 3}, {p3, 3, 4, kHalves, 2}, {p4, 4, 4, kZero, 1},        \
  {p7, 7, 8, kZero, 1}
// clang-format on

constexpr std::array<MigProfile, 7> kA100_40 = {{TESSERA_SEVEN_SLICE(
    "1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")}};
constexpr std::array<MigProfile, 7> kA100_80 = {{TESSERA_SEVEN_SLICE(
    "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")}};
constexpr std::array<MigProfile, 7> kH100_80 = kA100_80;
constexpr std::array<MigProfile, 7> kH100_94 = {{TESSERA_SEVEN_SLICE(
    "1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb")}};
constexpr std::array<MigProfile, 7> kH200_141 = {{TESSERA_SEVEN_SLICE(
    "1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")}};
#undef TESSERA_SEVEN_SLICE

constexpr std::array<MigProfile, 5> kA30_24 = {{
    {"1g.6gb", 1, 1, Starts({0, 1, 2, 3}), 4},
    {"1g.6gb+me", 1, 1, Starts({0, 1, 2, 3}), 1},
    {"2g.12gb", 2, 2, Starts({0, 2}), 2},
    {"2g.12gb+me", 2, 2, Starts({0, 2}), 1},
    {"4g.24gb", 4, 4, kZero, 1},
}};

const std::array<MigGeometry, 6> kCatalog = {{
    {"A100-40GB", 7, 8, kA100_40},
    {"A100-80GB", 7, 8, kA100_80},
    {"A30-24GB", 4, 4, kA30_24},
    {"H100-80GB", 7, 8, kH100_80},
    {"H100-94GB", 7, 8, kH100_94},
    {"H200-141GB", 7, 8, kH200_141},
}};

// ASCII only, without the C library's locale-aware call per character (placement compares a
// pod's MIG profile with each MIG card's profiles).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

uint8_t SliceMask(const MigProfile& p, int start) {
  return static_cast<uint8_t>(((1u << p.memory_slices) - 1u) << start);
}

std::string Describe(const MigGeometry& geo, const MigInstance& in) {
  return std::string(geo.profiles[in.profile].name) + "@" + std::to_string(in.start);
}

// Depth-first search over start positions for the remaining profiles (largest first).
bool Search(const MigGeometry& geo, const std::vector<uint8_t>& todo, size_t i, uint8_t used_mem,
            int used_compute, std::vector<MigInstance>& out) {
  if (i == todo.size()) return true;
  const MigProfile& p = geo.profiles[todo[i]];
  if (used_compute + p.compute_slices > geo.compute_slices) return false;
  for (int s = 0; s < geo.memory_slices; ++s) {
    if (!(p.start_mask & (1u << s))) continue;
    if (s + p.memory_slices > geo.memory_slices) continue;
    uint8_t m = SliceMask(p, s);
    if (used_mem & m) continue;
    out.push_back({todo[i], static_cast<uint8_t>(s)});
    if (Search(geo, todo, i + 1, used_mem | m, used_compute + p.compute_slices, out)) return true;
    out.pop_back();
  }
  return false;
}

}  // namespace

int MigGeometry::FindProfile(std::string_view name) const {
  if (name.starts_with("mig-")) name.remove_prefix(4);
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (EqualsIgnoreCase(profiles[i].name, name)) return static_cast<int>(i);
  }
  return -1;
}

const MigGeometry* FindMigGeometry(std::string_view model) {
  for (const MigGeometry& g : kCatalog) {  // fast path: the exact catalog spelling
    if (g.model == model) return &g;
  }
  if (EqualsIgnoreCase(model, "A100")) model = "A100-40GB";
  if (EqualsIgnoreCase(model, "H100")) model = "H100-80GB";
  if (EqualsIgnoreCase(model, "H200")) model = "H200-141GB";
  if (EqualsIgnoreCase(model, "A30")) model = "A30-24GB";
  for (const MigGeometry& g : kCatalog) {
    if (EqualsIgnoreCase(g.model, model)) return &g;
  }
  return nullptr;
}

std::span<const MigGeometry> MigCatalog() { return kCatalog; }

Status CheckMigLayout(const MigGeometry& geo, std::span<const MigInstance> layout) {
  uint8_t used_mem = 0;
  int used_compute = 0;
  std::vector<int> per_profile(geo.profiles.size(), 0);
  for (const MigInstance& in : layout) {
    if (in.profile >= geo.profiles.size()) {
      return InvalidArgument("MIG instance names profile #" + std::to_string(in.profile) +
                             ", which " + std::string(geo.model) + " does not have");
    }
    const MigProfile& p = geo.profiles[in.profile];
    if (in.start >= geo.memory_slices || !(p.start_mask & (1u << in.start)) ||
        in.start + p.memory_slices > geo.memory_slices) {
      return InvalidArgument("MIG instance " + Describe(geo, in) + ": " + std::string(p.name) +
                             " cannot start at memory slice " + std::to_string(in.start) + " on " +
                             std::string(geo.model));
    }
    uint8_t m = SliceMask(p, in.start);
    if (used_mem & m) {
      return InvalidArgument("MIG instance " + Describe(geo, in) +
                             " overlaps the memory slices of another instance");
    }
    used_mem |= m;
    used_compute += p.compute_slices;
    if (used_compute > geo.compute_slices) {
      return InvalidArgument("MIG layout needs more than the " +
                             std::to_string(geo.compute_slices) + " compute slices of " +
                             std::string(geo.model));
    }
    if (++per_profile[in.profile] > p.max_instances) {
      return InvalidArgument("MIG layout has more than " + std::to_string(p.max_instances) + " " +
                             std::string(p.name) + " instances");
    }
  }
  return Status::Ok();
}

Result<std::vector<MigInstance>> PlaceMigLayout(
    const MigGeometry& geo, std::span<const std::pair<std::string, int>> profile_counts) {
  std::vector<uint8_t> todo;
  std::vector<int> per_profile(geo.profiles.size(), 0);
  for (const auto& [name, count] : profile_counts) {
    int idx = geo.FindProfile(name);
    if (idx < 0) {
      return InvalidArgument("MIG profile \"" + name + "\" does not exist on " +
                             std::string(geo.model));
    }
    if (count < 0) return InvalidArgument("MIG profile \"" + name + "\": negative count");
    per_profile[idx] += count;
    if (per_profile[idx] > geo.profiles[idx].max_instances) {
      return InvalidArgument("MIG profile \"" + name + "\": at most " +
                             std::to_string(geo.profiles[idx].max_instances) + " instances on " +
                             std::string(geo.model) + ", asked for " +
                             std::to_string(per_profile[idx]));
    }
    for (int i = 0; i < count; ++i) todo.push_back(static_cast<uint8_t>(idx));
  }
  std::stable_sort(todo.begin(), todo.end(), [&](uint8_t a, uint8_t b) {
    return geo.profiles[a].memory_slices > geo.profiles[b].memory_slices;
  });
  std::vector<MigInstance> out;
  if (!Search(geo, todo, 0, 0, 0, out)) {
    return InvalidArgument("MIG layout does not fit on one " + std::string(geo.model) +
                           " (memory slices or compute slices exhausted)");
  }
  std::sort(out.begin(), out.end(),
            [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  return out;
}

int64_t MigInstanceMemoryMib(const MigGeometry& geo, const MigProfile& profile,
                             int64_t card_memory_mib) {
  return card_memory_mib * profile.memory_slices / geo.memory_slices;
}

int64_t MigInstanceMilli(const MigGeometry& geo, const MigProfile& profile) {
  int64_t compute =
      (kMilliPerGpu * profile.compute_slices + geo.compute_slices - 1) / geo.compute_slices;
  int64_t memory = kMilliPerGpu * profile.memory_slices / geo.memory_slices;
  return std::max(compute, memory);
}

}  // namespace tessera::core
