#include "store/store.h"

#include <algorithm>
#include <tuple>

#include "store/usage_store.h"

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

Status CheckReadAt(int64_t revision, int64_t history_from, int64_t latest) {
  if (revision > latest) {
    return InvalidArgument("resource version " + std::to_string(revision) +
                           " is newer than the store's (" + std::to_string(latest) + ")");
  }
  if (revision < history_from) {
    return FailedPrecondition("resource version " + std::to_string(revision) +
                              " is too old: the history up to " + std::to_string(history_from) +
                              " was compacted");
  }
  return Status::Ok();
}

std::vector<StoredObject> StateAt(std::vector<StoredObject> current,
                                  const std::vector<Change>& before, int64_t revision) {
  // Unchanged since: as they are now.
  std::vector<StoredObject> out;
  out.reserve(current.size());
  for (StoredObject& o : current) {
    if (o.version <= revision) out.push_back(std::move(o));
  }
  // Changed since (or deleted, or made anew): as their last change before left them.
  const size_t unchanged = out.size();
  for (const Change& c : before) {
    if (c.type != ChangeType::kDeleted) out.push_back(c.object);
  }
  auto by_name = [](const StoredObject& a, const StoredObject& b) {
    return std::tie(a.key.ns, a.key.name) < std::tie(b.key.ns, b.key.name);
  };
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(unchanged), out.end(), by_name);
  std::inplace_merge(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(unchanged), out.end(),
                     by_name);
  return out;
}

Result<std::unique_ptr<UsageStore>> Store::OwnLedger() const {
  return std::unique_ptr<UsageStore>();
}

}  // namespace tessera::store
