// The members of a gang, held as runs of alike members rather than one pod each. Members of a
// run differ only by name, and placement reads every field but the name (PlacementSignature), so
// one pod stands for the whole run: a pending gang of a million members costs what its few runs
// cost, not a million copies of a pod.
#ifndef TESSERA_CORE_GANG_PODS_H_
#define TESSERA_CORE_GANG_PODS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/pod.h"

namespace tessera::core {

class GangPods {
 public:
  struct Run {
    // Every member's spec. Its name is the members' prefix when `numbered` (member k of the run
    // is "<name>-<k>"), else the one member's own name.
    PodSpec pod;
    int32_t count = 0;
    // The first `required` members of the run must be placed for the gang to be (Volcano's
    // task minAvailable).
    int32_t required = 0;
    bool numbered = true;
  };

  GangPods() = default;
  // Members given one by one: a run of one per pod, named as given; `required` per member
  // (empty: none).
  static GangPods Each(std::span<const PodSpec> pods, std::span<const uint8_t> required = {});
  // Appends a run (count <= 0 adds no member, but keeps the run's place).
  void Add(Run run);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t num_runs() const { return runs_.size(); }
  const Run& run(size_t r) const { return runs_[r]; }
  PodSpec& mutable_pod(size_t r) { return runs_[r].pod; }
  // Index of run r's first member.
  size_t start(size_t r) const { return starts_[r]; }
  // The run member i belongs to (0 <= i < size()).
  size_t RunOf(size_t i) const;
  // Member i's spec (the run's pod, whose name is the run's).
  const PodSpec& pod(size_t i) const { return runs_[RunOf(i)].pod; }
  std::string Name(size_t i) const;
  bool Required(size_t i) const;
  // One named pod per member: for callers that need them all.
  std::vector<PodSpec> Expand() const;

 private:
  std::vector<Run> runs_;
  std::vector<size_t> starts_;
  size_t size_ = 0;
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_GANG_PODS_H_
