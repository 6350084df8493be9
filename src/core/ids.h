// Typed identifiers: a NodeId cannot be passed where a GPU index is expected.
#ifndef TESSERA_CORE_IDS_H_
#define TESSERA_CORE_IDS_H_

#include <cstdint>
#include <functional>
#include <limits>

namespace tessera::core {

template <typename Tag, typename Rep = uint32_t>
class StrongId {
 public:
  using rep_type = Rep;
  static constexpr Rep kInvalid = std::numeric_limits<Rep>::max();

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}

  constexpr Rep value() const { return v_; }
  constexpr bool valid() const { return v_ != kInvalid; }

  friend constexpr bool operator==(StrongId a, StrongId b) { return a.v_ == b.v_; }
  friend constexpr auto operator<=>(StrongId a, StrongId b) { return a.v_ <=> b.v_; }

 private:
  Rep v_ = kInvalid;
};

// Dense index of a node inside a ClusterState; stable for the life of that state.
using NodeId = StrongId<struct NodeIdTag>;
// Interned set of a node's labels and taints (nodes of one pool share one).
using NodeClassId = StrongId<struct NodeClassIdTag>;

}  // namespace tessera::core

template <typename Tag, typename Rep>
struct std::hash<tessera::core::StrongId<Tag, Rep>> {
  size_t operator()(tessera::core::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>()(id.value());
  }
};

#endif  // TESSERA_CORE_IDS_H_
