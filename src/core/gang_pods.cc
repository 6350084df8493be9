#include "core/gang_pods.h"

#include <algorithm>

namespace tessera::core {

GangPods GangPods::Each(std::span<const PodSpec> pods, std::span<const uint8_t> required) {
  GangPods g;
  for (size_t i = 0; i < pods.size(); ++i) {
    g.Add({.pod = pods[i],
           .count = 1,
           .required = i < required.size() && required[i] != 0 ? 1 : 0,
           .numbered = false});
  }
  return g;
}

void GangPods::Add(Run run) {
  run.count = std::max(run.count, 0);
  run.required = std::clamp(run.required, 0, run.count);
  starts_.push_back(size_);
  size_ += static_cast<size_t>(run.count);
  runs_.push_back(std::move(run));
}

size_t GangPods::RunOf(size_t i) const {
  // The last run starting at or before i that has members.
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), i);
  size_t r = static_cast<size_t>(it - starts_.begin()) - 1;
  while (runs_[r].count == 0) --r;
  return r;
}

std::string GangPods::Name(size_t i) const {
  const size_t r = RunOf(i);
  const Run& run = runs_[r];
  if (!run.numbered) return run.pod.name;
  return run.pod.name + "-" + std::to_string(i - starts_[r]);
}

bool GangPods::Required(size_t i) const {
  const size_t r = RunOf(i);
  return i - starts_[r] < static_cast<size_t>(runs_[r].required);
}

std::vector<PodSpec> GangPods::Expand() const {
  std::vector<PodSpec> out;
  out.reserve(size_);
  for (size_t i = 0; i < size_; ++i) {
    PodSpec& p = out.emplace_back(pod(i));
    p.name = Name(i);
  }
  return out;
}

}  // namespace tessera::core
