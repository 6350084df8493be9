// A strategic merge patch over long lists, for patch_test.cc (right on long lists) and
// bench/api_bench.cc (its cost by length): a target of n containers and n finalizers, and a
// patch that updates every container, reverses their order ($setElementOrder), and deletes and
// re-merges every finalizer ($deleteFromPrimitiveList).
#ifndef TESSERA_TESTS_API_LIST_PATCH_H_
#define TESSERA_TESTS_API_LIST_PATCH_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::api {

inline nlohmann::json ListPatch(size_t n, nlohmann::json* target) {
  using nlohmann::json;
  json containers = json::array(), order = json::array(), finalizers = json::array(),
       patched = json::array();
  for (size_t i = 0; i < n; ++i) {
    const std::string name = "c" + std::to_string(i);
    containers.push_back({{"name", name}, {"image", "i"}});
    order.push_back({{"name", "c" + std::to_string(n - 1 - i)}});
    finalizers.push_back("f" + std::to_string(i));
    patched.push_back({{"name", name}, {"image", "j"}});
  }
  *target = {{"metadata", {{"finalizers", finalizers}}}, {"spec", {{"containers", containers}}}};
  return {{"metadata",
           {{"$deleteFromPrimitiveList/finalizers", finalizers}, {"finalizers", finalizers}}},
          {"spec", {{"$setElementOrder/containers", order}, {"containers", patched}}}};
}

}  // namespace tessera::api

#endif  // TESSERA_TESTS_API_LIST_PATCH_H_
