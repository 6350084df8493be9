#include "core/pod.h"

#include <string_view>
#include <utility>

namespace tessera::core {

Status ValidatePodSpec(const PodSpec& pod) {
  const std::string where = pod.name.empty() ? "pod: " : "pod " + pod.name + ": ";
  if (pod.requests.cpu_milli < 0) return InvalidArgument(where + "cpu request is negative");
  if (pod.requests.memory_mib < 0) return InvalidArgument(where + "memory request is negative");
  const GpuRequest& g = pod.gpu;
  if (g.kind == GpuRequestKind::kNone) {
    if (g.count != 0) return InvalidArgument(where + "GPU count without a GPU request kind");
  } else {
    if (g.count <= 0 || g.count > kMaxGpusPerNode * 64) {
      return InvalidArgument(where + "GPU count must be in [1, " +
                             std::to_string(kMaxGpusPerNode * 64) + "], got " +
                             std::to_string(g.count));
    }
    if ((g.kind == GpuRequestKind::kWhole || g.kind == GpuRequestKind::kShare) &&
        g.count > kMaxGpusPerNode) {
      return InvalidArgument(where + "a pod can hold at most " + std::to_string(kMaxGpusPerNode) +
                             " GPUs, asked for " + std::to_string(g.count));
    }
  }
  if (g.kind == GpuRequestKind::kShare) {
    if (g.milli < 0 || g.milli > kMilliPerGpu) {
      return InvalidArgument(where + "GPU share must be in [1, 1000] milli, got " +
                             std::to_string(g.milli));
    }
    if (g.memory_mib < 0) return InvalidArgument(where + "GPU memory share is negative");
    if (g.milli == 0 && g.memory_mib == 0) {
      return InvalidArgument(where + "a GPU share needs compute (milli) or memory");
    }
  }
  if (g.kind == GpuRequestKind::kMig && g.mig_profile.empty()) {
    return InvalidArgument(where + "MIG request without a profile");
  }
  for (const PreferredTerm& p : pod.preferred_terms) {
    if (p.weight < 1 || p.weight > 100) {
      return InvalidArgument(where + "preferred affinity weight must be in [1, 100], got " +
                             std::to_string(p.weight));
    }
  }
  auto check_terms = [&](const NodeSelectorTerm& t) -> Status {
    for (const LabelRequirement& r : t.requirements) {
      if (r.key.empty()) return InvalidArgument(where + "affinity requirement with empty key");
      bool needs_values = r.op == SelectorOp::kIn || r.op == SelectorOp::kNotIn;
      bool one_value = r.op == SelectorOp::kGt || r.op == SelectorOp::kLt;
      bool no_values = r.op == SelectorOp::kExists || r.op == SelectorOp::kDoesNotExist;
      if ((needs_values && r.values.empty()) || (one_value && r.values.size() != 1) ||
          (no_values && !r.values.empty())) {
        return InvalidArgument(where + "affinity requirement on \"" + r.key +
                               "\" has the wrong number of values for its operator");
      }
      if (one_value) {
        const std::string& v = r.values[0];
        size_t pos = 0;
        try {
          (void)std::stoll(v, &pos);
        } catch (...) {
          pos = 0;
        }
        if (pos == 0 || pos != v.size()) {
          return InvalidArgument(where + "affinity Gt/Lt on \"" + r.key +
                                 "\" needs an integer, got \"" + v + "\"");
        }
      }
    }
    return Status::Ok();
  };
  for (const NodeSelectorTerm& t : pod.required_terms) {
    if (Status s = check_terms(t); !s.ok()) return s;
  }
  for (const PreferredTerm& p : pod.preferred_terms) {
    if (Status s = check_terms(p.term); !s.ok()) return s;
  }
  return Status::Ok();
}

int64_t NominalGpuMilli(const PodSpec& pod) {
  switch (pod.gpu.kind) {
    case GpuRequestKind::kWhole:
      return kMilliPerGpu * pod.gpu.count;
    case GpuRequestKind::kShare:
      return static_cast<int64_t>(pod.gpu.milli) * pod.gpu.count;
    default:
      return 0;
  }
}

namespace {

// Length-prefixed fields, so no two different pods encode alike.
class SignatureWriter {
 public:
  void Int(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void Str(std::string_view s) {
    Int(static_cast<int64_t>(s.size()));
    out_.append(s);
  }
  void Strs(const std::vector<std::string>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (const std::string& s : v) Str(s);
  }
  void Term(const NodeSelectorTerm& t) {
    Int(static_cast<int64_t>(t.requirements.size()));
    for (const LabelRequirement& r : t.requirements) {
      Str(r.key);
      Int(static_cast<int64_t>(r.op));
      Strs(r.values);
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string PlacementSignature(const PodSpec& pod) {
  SignatureWriter w;
  w.Int(pod.requests.cpu_milli);
  w.Int(pod.requests.memory_mib);
  w.Int(static_cast<int64_t>(pod.gpu.kind));
  w.Int(pod.gpu.count);
  w.Int(pod.gpu.milli);
  w.Int(pod.gpu.memory_mib);
  w.Str(pod.gpu.mig_profile);
  w.Strs(pod.gpu_models);
  w.Int(static_cast<int64_t>(pod.node_selector.size()));
  for (const auto& [k, v] : pod.node_selector) {
    w.Str(k);
    w.Str(v);
  }
  w.Int(static_cast<int64_t>(pod.required_terms.size()));
  for (const NodeSelectorTerm& t : pod.required_terms) w.Term(t);
  w.Int(static_cast<int64_t>(pod.preferred_terms.size()));
  for (const PreferredTerm& t : pod.preferred_terms) {
    w.Int(t.weight);
    w.Term(t.term);
  }
  w.Int(static_cast<int64_t>(pod.tolerations.size()));
  for (const Toleration& t : pod.tolerations) {
    w.Str(t.key);
    w.Int(static_cast<int64_t>(t.op));
    w.Str(t.value);
    w.Int(t.any_effect);
    w.Int(static_cast<int64_t>(t.effect));
  }
  return w.Take();
}

}  // namespace tessera::core
