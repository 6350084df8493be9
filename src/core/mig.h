// MIG (Multi-Instance GPU) geometry: the profiles each MIG-capable GPU model offers, where an
// instance of each profile may start, and the legality of a layout. Data from NVIDIA's MIG user
// guide ("Supported MIG Profiles"): memory is divided into slices (8 on A100/H100/H200, 4 on A30)
// and an instance of a profile occupies `memory_slices` consecutive slices beginning at one of its
// allowed start slices. Compute slices (7, or 4 on A30) are consumed by `compute_slices`.
#ifndef TESSERA_CORE_MIG_H_
#define TESSERA_CORE_MIG_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/resources.h"
#include "core/status.h"

namespace tessera::core {

struct MigProfile {
  std::string_view name;   // e.g. "1g.10gb", "1g.10gb+me"
  uint8_t compute_slices;  // GPCs used
  uint8_t memory_slices;   // memory slices used (consecutive)
  uint8_t start_mask;      // bit i set: an instance may start at memory slice i
  uint8_t max_instances;   // most instances of this profile on one GPU
};

struct MigGeometry {
  std::string_view model;  // GPU model name, e.g. "A100-40GB"
  uint8_t compute_slices;  // total compute slices (7 or 4)
  uint8_t memory_slices;   // total memory slices (8 or 4)
  std::span<const MigProfile> profiles;

  // Index of the profile named `name` (with or without a "mig-" prefix), or -1.
  int FindProfile(std::string_view name) const;
};

// One instance of a layout: a profile (index into the geometry's profiles) at a start slice.
struct MigInstance {
  uint8_t profile = 0;
  uint8_t start = 0;
  friend bool operator==(const MigInstance&, const MigInstance&) = default;
};

// The geometry for a GPU model, or nullptr when the model is not MIG-capable. Model names are
// matched case-insensitively; "H100" alone means H100-80GB, "A100" alone A100-40GB.
const MigGeometry* FindMigGeometry(std::string_view model);

// Every MIG-capable model in the catalog.
std::span<const MigGeometry> MigCatalog();

// Checks that `layout` can coexist on one GPU: valid starts, no overlapping memory slices, compute
// slices within the total, per-profile instance limits. The error names the offending instance.
Status CheckMigLayout(const MigGeometry& geo, std::span<const MigInstance> layout);

// Assigns start slices to a layout given as profile counts (mig-parted's `mig-devices` form, e.g.
// {"3g.40gb":1, "2g.20gb":1, "1g.10gb":2}), largest profiles first, each at the lowest free valid
// start; searches all assignments before reporting the layout illegal.
Result<std::vector<MigInstance>> PlaceMigLayout(
    const MigGeometry& geo, std::span<const std::pair<std::string, int>> profile_counts);

// Memory (MiB) of an instance of `profile` on a card with `card_memory_mib`.
int64_t MigInstanceMemoryMib(const MigGeometry& geo, const MigProfile& profile,
                             int64_t card_memory_mib);

// Share of the whole GPU an instance represents, in milli-GPUs: the larger of its compute and
// memory fractions (so 1g.10gb on an H100 is 1/7 of the compute = 143 milli).
int64_t MigInstanceMilli(const MigGeometry& geo, const MigProfile& profile);

}  // namespace tessera::core

#endif  // TESSERA_CORE_MIG_H_
