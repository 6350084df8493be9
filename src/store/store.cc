#include "store/store.h"

namespace tessera::store {

std::string Describe(const ObjectKey& key) {
  return key.kind + " " + (key.ns.empty() ? "" : key.ns + "/") + key.name;
}

Status CheckWrite(const Write& w, bool exists, int64_t current) {
  if (w.expected_version && *w.expected_version != current) {
    return Conflict(Describe(w.key) + ": version " + std::to_string(*w.expected_version) +
                    " is stale, the object is at " +
                    (exists ? "version " + std::to_string(current) : "no version (deleted)"));
  }
  if (w.op == Write::Op::kCreate && exists) {
    return AlreadyExists(Describe(w.key) + " already exists");
  }
  if (w.op == Write::Op::kDelete && !exists) return NotFound(Describe(w.key) + " not found");
  return Status::Ok();
}

}  // namespace tessera::store
