#include "store/memory_store.h"

#include <set>
#include <utility>

namespace tessera::store {

MemoryStore::MemoryStore(int64_t retained_changes) : retained_(retained_changes) {}

std::optional<Status> MemoryStore::TakeFault(int* left, const Status& why) {
  if (*left <= 0) return std::nullopt;
  --*left;
  return why;
}

Result<std::vector<int64_t>> MemoryStore::Commit(std::span<const Write> writes) {
  std::lock_guard<std::mutex> lock(mu_);
  ++commits_;
  if (auto fault = TakeFault(&failing_commits_, commit_error_)) return *fault;
  // Applied to a copy: on the first error nothing of the transaction remains.
  std::map<ObjectKey, StoredObject> objects = objects_;
  std::vector<Change> log;
  std::vector<int64_t> revisions;
  int64_t revision = revision_;
  for (const Write& w : writes) {
    const auto it = objects.find(w.key);
    const bool exists = it != objects.end();
    const int64_t current = exists ? it->second.version : 0;
    TESSERA_RETURN_IF_ERROR(CheckWrite(w, exists, current));
    if (w.op == Write::Op::kPut && exists && it->second.body == w.body) {
      revisions.push_back(current);
      continue;
    }
    const int64_t rev = ++revision;
    Change c;
    c.revision = rev;
    if (w.op == Write::Op::kDelete) {
      c.type = ChangeType::kDeleted;
      c.object = {w.key, rev, it->second.body};
      objects.erase(it);
    } else {
      c.type = exists ? ChangeType::kModified : ChangeType::kAdded;
      c.object = {w.key, rev, w.body};
      objects[w.key] = c.object;
    }
    log.push_back(std::move(c));
    revisions.push_back(rev);
  }
  objects_ = std::move(objects);
  revision_ = revision;
  for (Change& c : log) changes_.push_back(std::move(c));
  // The SQLite store's window: compacted in steps of 1,000 revisions.
  const int64_t floor = revision_ - retained_;
  if (floor >= compacted_ + 1000) CompactLocked(floor);
  return revisions;
}

void MemoryStore::CompactLocked(int64_t revision) {
  // Kept of the history up to `revision`: each object's last change, when it changed since.
  std::set<ObjectKey> changed_since;
  std::map<ObjectKey, int64_t> last;
  for (const Change& c : changes_) {
    if (c.revision > revision) {
      changed_since.insert(c.object.key);
    } else {
      last[c.object.key] = c.revision;
    }
  }
  std::deque<Change> kept;
  for (Change& c : changes_) {
    if (c.revision > revision ||
        (changed_since.contains(c.object.key) && last[c.object.key] == c.revision)) {
      kept.push_back(std::move(c));
    }
  }
  changes_ = std::move(kept);
  compacted_ = revision;
}

Status MemoryStore::Compact(int64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto fault = TakeFault(&failing_commits_, commit_error_)) return *fault;
  revision = std::min(revision, revision_);
  if (revision > compacted_) CompactLocked(revision);
  return Status::Ok();
}

template <typename Match>
std::vector<Change> MemoryStore::ChangedSince(int64_t revision, Match match) const {
  std::set<ObjectKey> changed_since;
  std::map<ObjectKey, const Change*> last;
  for (const Change& c : changes_) {
    if (!match(c.object.key)) continue;
    if (c.revision > revision) {
      changed_since.insert(c.object.key);
    } else {
      last[c.object.key] = &c;
    }
  }
  std::vector<Change> out;
  for (const auto& [key, c] : last) {
    if (changed_since.contains(key)) out.push_back(*c);
  }
  return out;
}

Result<std::vector<StoredObject>> MemoryStore::ListAt(std::string_view kind,
                                                      std::optional<std::string_view> ns,
                                                      int64_t revision) {
  auto current = List(kind, ns);
  if (!current.ok()) return current.status();
  std::lock_guard<std::mutex> lock(mu_);
  TESSERA_RETURN_IF_ERROR(CheckReadAt(revision, compacted_, revision_));
  auto before = ChangedSince(
      revision, [&](const ObjectKey& k) { return k.kind == kind && (!ns || k.ns == *ns); });
  return StateAt(std::move(current).value(), before, revision);
}

Result<std::optional<StoredObject>> MemoryStore::GetAt(const ObjectKey& key, int64_t revision) {
  auto current = Get(key);
  if (!current.ok()) return current.status();
  std::lock_guard<std::mutex> lock(mu_);
  TESSERA_RETURN_IF_ERROR(CheckReadAt(revision, compacted_, revision_));
  std::vector<StoredObject> now;
  if (*current) now.push_back(**current);
  auto at = StateAt(std::move(now),
                    ChangedSince(revision, [&](const ObjectKey& k) { return k == key; }), revision);
  if (at.empty()) return std::optional<StoredObject>();
  return std::optional<StoredObject>(std::move(at[0]));
}

Result<std::optional<StoredObject>> MemoryStore::Get(const ObjectKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto fault = TakeFault(&failing_reads_, read_error_)) return *fault;
  const auto it = objects_.find(key);
  if (it == objects_.end()) return std::optional<StoredObject>();
  return std::optional<StoredObject>(it->second);
}

Result<std::vector<std::string>> MemoryStore::ListKinds() {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto fault = TakeFault(&failing_reads_, read_error_)) return *fault;
  std::vector<std::string> out;
  for (const auto& [key, o] : objects_) {
    if (out.empty() || out.back() != key.kind) out.push_back(key.kind);
  }
  return out;
}

Result<std::vector<StoredObject>> MemoryStore::List(std::string_view kind,
                                                    std::optional<std::string_view> ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto fault = TakeFault(&failing_reads_, read_error_)) return *fault;
  std::vector<StoredObject> out;
  // Keys order by kind, then namespace and name: one kind's objects are one run.
  for (auto it = objects_.lower_bound(ObjectKey{std::string(kind), "", ""});
       it != objects_.end() && it->first.kind == kind; ++it) {
    if (!ns || it->first.ns == *ns) out.push_back(it->second);
  }
  return out;
}

Result<std::vector<Change>> MemoryStore::ChangesAfter(int64_t after, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto fault = TakeFault(&failing_reads_, read_error_)) return *fault;
  if (after < compacted_) {
    return FailedPrecondition("resource version " + std::to_string(after) +
                              " is too old: changes up to " + std::to_string(compacted_) +
                              " were compacted; list again");
  }
  std::vector<Change> out;
  for (const Change& c : changes_) {
    if (out.size() >= limit) break;
    if (c.revision > after) out.push_back(c);
  }
  return out;
}

int64_t MemoryStore::Revision() {
  std::lock_guard<std::mutex> lock(mu_);
  return revision_;
}

void MemoryStore::FailCommits(int n, Status why) {
  std::lock_guard<std::mutex> lock(mu_);
  failing_commits_ = n;
  commit_error_ = std::move(why);
}

void MemoryStore::FailReads(int n, Status why) {
  std::lock_guard<std::mutex> lock(mu_);
  failing_reads_ = n;
  read_error_ = std::move(why);
}

int MemoryStore::commits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commits_;
}

}  // namespace tessera::store
