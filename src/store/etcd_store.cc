#include "store/etcd_store.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "store/etcd_usage_store.h"

namespace tessera::store {

using nlohmann::json;

namespace {

constexpr int kCommitTries = 16;  // reads and checks again after concurrent writes

bool ByNamespaceAndName(const StoredObject& a, const StoredObject& b) {
  return std::tie(a.key.ns, a.key.name) < std::tie(b.key.ns, b.key.name);
}

}  // namespace

Result<std::unique_ptr<Store>> OpenEtcdStore(EtcdStoreOptions options) {
  EtcdClient probe(options.etcd);
  auto r = probe.Call("kv/range", {{"key", Base64(options.etcd.prefix)}, {"count_only", true}});
  if (!r.ok()) return r.status();
  const int64_t revision = EtcdInt((*r)["header"], "revision");
  auto store = std::make_unique<EtcdStore>(std::move(options), revision);
  store->Start();
  return std::unique_ptr<Store>(std::move(store));
}

EtcdStore::EtcdStore(EtcdStoreOptions options, int64_t opened_at)
    : options_(std::move(options)),
      client_(options_.etcd),
      group_(
          [this](json compare, json ops, const Fence* fence) {
            return SendTxn(std::move(compare), std::move(ops), fence);
          },
          options_.etcd.max_txn_ops, options_.etcd.max_request_bytes),
      log_from_(opened_at),
      head_(opened_at),
      committed_(opened_at) {}

void EtcdStore::Start() {
  // The cache first, at the revision opened at; the watch then runs on from there.
  LoadCache();
  watcher_ = std::thread([this] { WatchLoop(); });
  notifier_ = std::thread([this] { NotifyLoop(); });
}

EtcdStore::~EtcdStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cancel_.Cancel();
  arrived_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  if (notifier_.joinable()) notifier_.join();
}

void EtcdStore::OnChange(std::function<void()> listener) {
  std::unique_lock<std::mutex> lock(mu_);
  listener_ = std::move(listener);
  if (std::this_thread::get_id() != notifier_.get_id()) {
    arrived_.wait(lock, [&] { return calling_ == 0; });
  }
}

std::string EtcdStore::KeyOf(const ObjectKey& key) const {
  return options_.etcd.prefix + key.kind + "/" + key.ns + "/" + key.name;
}

std::string EtcdStore::KindPrefix(std::string_view kind, std::optional<std::string_view> ns) const {
  std::string p = options_.etcd.prefix + std::string(kind) + "/";
  if (ns) p += std::string(*ns) + "/";
  return p;
}

namespace {

// A stored object from an etcd KeyValue under `prefix` (<kind>/<ns>/<name> after it).
std::optional<StoredObject> ObjectOf(const json& kv, const std::string& prefix) {
  const std::string key = EtcdText(kv, "key");
  if (!key.starts_with(prefix)) return std::nullopt;
  const std::string rest = key.substr(prefix.size());
  // Keys under "_" are the store's own records (the election, replicas, the usage ledger).
  if (rest.starts_with('_')) return std::nullopt;
  const size_t a = rest.find('/');
  const size_t b = a == std::string::npos ? a : rest.find('/', a + 1);
  if (b == std::string::npos) return std::nullopt;
  StoredObject o;
  o.key = {rest.substr(0, a), rest.substr(a + 1, b - a - 1), rest.substr(b + 1)};
  o.version = EtcdInt(kv, "mod_revision");
  o.body = EtcdText(kv, "value");
  return o;
}

}  // namespace

Result<std::vector<StoredObject>> EtcdStore::Range(const std::string& prefix, int64_t revision,
                                                   int64_t* read_at) {
  std::vector<StoredObject> out;
  // Every page at the first one's revision: one consistent list.
  TESSERA_RETURN_IF_ERROR(
      client_.RangeAll(prefix, PrefixEnd(prefix), &revision, [&](const json& kv) {
        if (auto o = ObjectOf(kv, options_.etcd.prefix)) out.push_back(std::move(*o));
        return Status::Ok();
      }));
  std::sort(out.begin(), out.end(), ByNamespaceAndName);
  if (read_at != nullptr) *read_at = revision;
  return out;
}

Result<std::optional<StoredObject>> EtcdStore::GetKey(const ObjectKey& key, int64_t revision) {
  json req = {{"key", Base64(KeyOf(key))}};
  if (revision > 0) req["revision"] = std::to_string(revision);
  auto r = client_.Call("kv/range", req);
  if (!r.ok()) return r.status();
  if (!(*r).contains("kvs") || (*r)["kvs"].empty()) return std::optional<StoredObject>();
  return ObjectOf((*r)["kvs"][0], options_.etcd.prefix);
}

bool EtcdStore::CacheCurrent(std::unique_lock<std::mutex>& lock) {
  const int64_t target = committed_;
  // Not long: when the watch is down (a member lost), reads go to etcd.
  arrived_.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(options_.wait_ms, 1000)),
                    [&] { return head_ >= target || stopping_ || !cache_valid_; });
  return cache_valid_ && head_ >= target;
}

Result<std::optional<StoredObject>> EtcdStore::Get(const ObjectKey& key) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (CacheCurrent(lock)) {
      auto it = cache_.find(KeyOf(key));
      if (it == cache_.end()) return std::optional<StoredObject>();
      return std::optional<StoredObject>(it->second);
    }
  }
  return GetKey(key, 0);
}

Result<std::vector<StoredObject>> EtcdStore::List(std::string_view kind,
                                                  std::optional<std::string_view> ns) {
  const std::string prefix = KindPrefix(kind, ns);
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (CacheCurrent(lock)) {
      std::vector<StoredObject> out;
      for (auto it = cache_.lower_bound(prefix);
           it != cache_.end() && it->first.starts_with(prefix); ++it) {
        out.push_back(it->second);
      }
      std::sort(out.begin(), out.end(), ByNamespaceAndName);
      return out;
    }
  }
  return Range(prefix, 0);
}

void EtcdStore::Cache(const Change& c) {
  std::string key = KeyOf(c.object.key);
  if (c.type == ChangeType::kDeleted) {
    cache_.erase(key);
  } else {
    cache_[std::move(key)] = c.object;
  }
}

void EtcdStore::LoadCache() {
  int64_t at = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_valid_ || stopping_) return;
    at = cache_loaded_ ? 0 : head_;  // first at the revision opened at, so no change is lost
  }
  int64_t read_at = at;
  auto objects = Range(options_.etcd.prefix, at, &read_at);
  if (!objects.ok() && at > 0) objects = Range(options_.etcd.prefix, 0, &read_at);  // compacted
  if (!objects.ok()) return;  // reads go to etcd until the next try
  std::lock_guard<std::mutex> lock(mu_);
  cache_.clear();
  for (StoredObject& o : *objects) {
    std::string key = KeyOf(o.key);
    cache_.emplace(std::move(key), std::move(o));
  }
  if (read_at > head_) {
    // What came between the watch's end and this read is not in the log: older revisions are
    // refused (list again).
    log_.clear();
    head_ = read_at;
    log_from_ = read_at;
  }
  cache_valid_ = true;
  cache_loaded_ = true;
}

Result<std::vector<std::string>> EtcdStore::ListKinds() {
  // Keys only, one page at a time; a kind's keys are skipped past at once.
  std::vector<std::string> out;
  const std::string& prefix = options_.etcd.prefix;
  std::string from = prefix;
  const std::string end = PrefixEnd(prefix);
  while (true) {
    auto r = client_.Call(
        "kv/range",
        {{"key", Base64(from)}, {"range_end", Base64(end)}, {"limit", 1}, {"keys_only", true}});
    if (!r.ok()) return r.status();
    if (!(*r).contains("kvs") || (*r)["kvs"].empty()) break;
    const std::string key = EtcdText((*r)["kvs"][0], "key");
    const std::string rest = key.substr(prefix.size());
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || rest.starts_with("_")) {
      from = key + std::string(1, '\0');  // not an object's (the election's)
      continue;
    }
    out.push_back(rest.substr(0, slash));
    from = PrefixEnd(prefix + out.back() + "/");
  }
  return out;
}

Result<std::vector<StoredObject>> EtcdStore::ListAt(std::string_view kind,
                                                    std::optional<std::string_view> ns,
                                                    int64_t revision) {
  if (revision < 1) return std::vector<StoredObject>();  // before etcd's first revision
  TESSERA_RETURN_IF_ERROR(Reached(revision));
  return Range(KindPrefix(kind, ns), revision);
}

Result<std::optional<StoredObject>> EtcdStore::GetAt(const ObjectKey& key, int64_t revision) {
  if (revision < 1) return std::optional<StoredObject>();
  TESSERA_RETURN_IF_ERROR(Reached(revision));
  return GetKey(key, revision);
}

Status EtcdStore::Reached(int64_t revision) {
  const int64_t latest = Revision();
  if (revision <= latest) return Status::Ok();
  return InvalidArgument("resource version " + std::to_string(revision) +
                         " is not one this store has reached (latest is " + std::to_string(latest) +
                         ")");
}

Result<std::optional<int64_t>> EtcdStore::Txn(json compare, json ops, const Fence* fence) {
  return group_.Run(std::move(compare), std::move(ops), fence);
}

Result<std::optional<int64_t>> EtcdStore::SendTxn(json compare, json ops, const Fence* fence) {
  if (fence) compare.push_back(FenceHolds(*fence));
  auto txn = client_.Call("kv/txn", {{"compare", std::move(compare)}, {"success", std::move(ops)}});
  if (!txn.ok()) return txn.status();
  if (!(*txn).value("succeeded", false)) return std::optional<int64_t>();
  const int64_t revision = EtcdInt((*txn)["header"], "revision");
  std::lock_guard<std::mutex> lock(mu_);
  committed_ = std::max(committed_, revision);
  return std::optional<int64_t>(revision);
}

Result<std::optional<std::vector<int64_t>>> EtcdStore::BlindCommit(std::span<const Write> writes,
                                                                   const Fence* fence) {
  using Versions = std::optional<std::vector<int64_t>>;
  json compare = json::array(), ops = json::array();
  size_t bytes = 0;
  for (const Write& w : writes) {
    const bool create = w.op == Write::Op::kCreate;
    if (!(create || (w.op == Write::Op::kDelete && w.expected_version))) return Versions();
    if (create && w.expected_version && *w.expected_version != 0) return Versions();
    const std::string key = KeyOf(w.key);
    compare.push_back(EtcdModIs(key, create ? 0 : *w.expected_version));
    ops.push_back(create ? EtcdPut(key, w.body) : EtcdDelete(key));
    bytes += key.size() + w.body.size();
  }
  if (bytes > options_.etcd.max_request_bytes) return Versions();
  auto revision = Txn(std::move(compare), std::move(ops), fence);
  if (!revision.ok()) return revision.status();
  if (!*revision) return Versions();
  return Versions(std::vector<int64_t>(writes.size(), **revision));
}

int64_t EtcdStore::Revision() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::max(head_, committed_);
}

Result<std::vector<int64_t>> EtcdStore::Commit(std::span<const Write> writes) {
  return CommitGuarded(writes, nullptr);
}

Result<std::vector<int64_t>> EtcdStore::CommitIf(std::span<const Write> writes,
                                                 const Fence& fence) {
  return CommitGuarded(writes, &fence);
}

std::optional<std::vector<EtcdStore::KeyState>> EtcdStore::CachedStates(
    const std::vector<std::string>& keys) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!CacheCurrent(lock)) return std::nullopt;
  std::vector<KeyState> was(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = cache_.find(keys[i]);
    if (it == cache_.end()) continue;
    was[i] = {true, it->second.version, it->second.body, false};
  }
  return was;
}

Result<std::vector<EtcdStore::KeyState>> EtcdStore::ReadStates(const std::vector<std::string>& keys,
                                                               const Fence* fence) {
  json reads = json::array();
  for (const std::string& k : keys) reads.push_back({{"request_range", {{"key", Base64(k)}}}});
  if (fence) reads.push_back({{"request_range", {{"key", Base64(fence->key)}}}});
  auto read = client_.Call("kv/txn", {{"success", reads}});
  if (!read.ok()) return read.status();
  const json& responses = (*read).contains("responses") ? (*read)["responses"] : json::array();
  if (fence) {
    const json last = responses.is_array() && !responses.empty()
                          ? responses.back().value("response_range", json::object())
                          : json::object();
    if (FenceRevision(last) != fence->create_revision) return NotLeading(*fence);
  }
  std::vector<KeyState> was(keys.size());
  for (size_t i = 0; i < keys.size() && i < responses.size(); ++i) {
    const json& rr = responses[i].value("response_range", json::object());
    if (rr.contains("kvs") && !rr["kvs"].empty()) {
      was[i] = {true, EtcdInt(rr["kvs"][0], "mod_revision"), EtcdText(rr["kvs"][0], "value"),
                false};
    }
  }
  return was;
}

Result<std::optional<std::vector<int64_t>>> EtcdStore::TryCommit(
    std::span<const Write> writes, const std::vector<std::string>& keys,
    const std::map<std::string, size_t>& index, const std::vector<KeyState>& was,
    const Fence* fence) {
  using Versions = std::optional<std::vector<int64_t>>;
  std::vector<KeyState> now = was;
  std::vector<int64_t> versions(writes.size(), 0);
  std::vector<bool> pending(writes.size(), false);  // gets the commit's revision
  for (size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    KeyState& s = now[index.at(KeyOf(w.key))];
    // Written earlier in this commit: its version is the commit's, not known yet.
    if (s.changed && w.expected_version) {
      return Conflict(Describe(w.key) +
                      ": written twice in one commit, the second time at a version");
    }
    if (Status st = CheckWrite(w, s.exists, s.version); !st.ok()) return st;
    if (w.op == Write::Op::kDelete) {
      s = {false, 0, "", true};
      pending[i] = true;
    } else if (s.exists && s.body == w.body) {
      versions[i] = s.version;  // the same body: nothing changes
      if (s.changed) pending[i] = true;
    } else {
      s = {true, 0, w.body, true};
      pending[i] = true;
    }
  }
  json compare = json::array(), ops = json::array();
  size_t bytes = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    compare.push_back(EtcdModIs(keys[k], was[k].version));
    if (!now[k].changed) continue;
    if (now[k].exists) {
      ops.push_back(EtcdPut(keys[k], now[k].body));
      bytes += keys[k].size() + now[k].body.size();
    } else if (was[k].exists) {
      ops.push_back(EtcdDelete(keys[k]));
      bytes += keys[k].size();
    }
  }
  if (ops.empty()) {
    for (size_t i = 0; i < writes.size(); ++i) {
      if (pending[i]) versions[i] = was[index.at(KeyOf(writes[i].key))].version;
    }
    return Versions(std::move(versions));
  }
  if (bytes > options_.etcd.max_request_bytes) {
    return TooLarge("a write of " + std::to_string(bytes) + " bytes passes etcd's limit of " +
                    std::to_string(options_.etcd.max_request_bytes) + " per request");
  }
  auto revision = Txn(std::move(compare), std::move(ops), fence);
  if (!revision.ok()) return revision.status();
  if (!*revision) return Versions();
  for (size_t i = 0; i < writes.size(); ++i) {
    if (pending[i]) versions[i] = **revision;
  }
  return Versions(std::move(versions));
}

Result<std::vector<int64_t>> EtcdStore::CommitGuarded(std::span<const Write> writes,
                                                      const Fence* fence) {
  if (writes.empty()) return std::vector<int64_t>();
  // The keys touched, each once, in the order first written.
  std::vector<std::string> keys;
  std::map<std::string, size_t> index;
  for (const Write& w : writes) {
    if (index.emplace(KeyOf(w.key), keys.size()).second) keys.push_back(KeyOf(w.key));
  }
  if (keys.size() > options_.etcd.max_txn_ops) {
    return TooLarge("a write of " + std::to_string(keys.size()) +
                    " objects passes etcd's limit of " + std::to_string(options_.etcd.max_txn_ops) +
                    " per transaction");
  }
  // Creates (and deletes at a version) need nothing read first: one txn comparing each key with
  // what the write expects. When a comparison fails, the read below says which and why.
  if (keys.size() == writes.size()) {
    auto blind = BlindCommit(writes, fence);
    if (!blind.ok()) return blind.status();
    if (*blind) return std::move(**blind);
  }
  // First on the cache, with nothing read from etcd. The cache may lag another replica's writes:
  // a check that fails on it, or a comparison that fails in etcd, is tried again on what etcd
  // holds.
  if (std::optional<std::vector<KeyState>> cached = CachedStates(keys)) {
    auto tried = TryCommit(writes, keys, index, *cached, fence);
    if (tried.ok() && *tried) return std::move(**tried);
  }
  for (int attempt = 0; attempt < kCommitTries; ++attempt) {
    auto was = ReadStates(keys, fence);
    if (!was.ok()) return was.status();
    auto tried = TryCommit(writes, keys, index, *was, fence);
    if (!tried.ok()) return tried.status();
    if (*tried) return std::move(**tried);  // else another write came between: again
  }
  return Conflict("the objects kept changing while this write was checked; try again");
}

Result<std::vector<Change>> EtcdStore::ChangesAfter(int64_t after, size_t limit) {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t target = committed_;
  // The listener takes what has arrived (it is called again for what comes later).
  if (std::this_thread::get_id() != notifier_.get_id()) {
    arrived_.wait_for(lock, std::chrono::milliseconds(options_.wait_ms),
                      [&] { return head_ >= target || stopping_; });
  }
  if (after < log_from_) {
    return FailedPrecondition("changes after revision " + std::to_string(after) +
                              " are no longer kept (kept after " + std::to_string(log_from_) +
                              "): list again");
  }
  auto it = std::upper_bound(log_.begin(), log_.end(), after,
                             [](int64_t r, const Change& c) { return r < c.revision; });
  std::vector<Change> out;
  for (; it != log_.end(); ++it) {
    // A revision is never split: all the changes of one commit, or none.
    if (out.size() >= limit && it->revision != out.back().revision) break;
    out.push_back(*it);
  }
  return out;
}

Status EtcdStore::Compact(int64_t revision) {
  const int64_t to = std::min(revision, Revision());
  if (to < 1) return Status::Ok();
  auto r = client_.Call("kv/compaction", {{"revision", std::to_string(to)}, {"physical", true}});
  if (!r.ok() && r.status().code() != StatusCode::kFailedPrecondition) return r.status();
  std::lock_guard<std::mutex> lock(mu_);
  while (!log_.empty() && log_.front().revision <= to) log_.pop_front();
  log_from_ = std::max(log_from_, to);
  return Status::Ok();
}

bool EtcdStore::Take(const json& response) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    if (const int64_t compacted = EtcdInt(response, "compact_revision"); compacted > 0) {
      // The watch's start was compacted away: what came between is lost to this log.
      log_.clear();
      log_from_ = std::max(log_from_, compacted - 1);
      head_ = std::max(head_, compacted - 1);
      cache_valid_ = false;  // loaded again before the watch resumes
      return false;
    }
    const json& events = response.contains("events") ? response["events"] : json::array();
    const std::string& prefix = options_.etcd.prefix;
    for (const json& e : events) {
      const json& kv = e.value("kv", json::object());
      Change c;
      c.revision = EtcdInt(kv, "mod_revision");
      if (e.value("type", "PUT") == "DELETE") {
        auto before = ObjectOf(e.value("prev_kv", json::object()), prefix);
        auto gone = ObjectOf(kv, prefix);
        if (!gone) continue;
        c.type = ChangeType::kDeleted;
        c.object = std::move(*gone);
        if (before) c.object.body = std::move(before->body);
        c.object.version = c.revision;
      } else {
        auto o = ObjectOf(kv, prefix);
        if (!o) continue;
        c.type = EtcdInt(kv, "version") == 1 ? ChangeType::kAdded : ChangeType::kModified;
        c.object = std::move(*o);
      }
      if (c.revision <= head_) continue;  // seen before a reconnect
      if (cache_valid_) Cache(c);
      log_.push_back(std::move(c));
    }
    if (!events.empty()) {
      head_ = std::max(head_, EtcdInt(events.back().value("kv", json::object()), "mod_revision"));
    } else if (!response.value("created", false)) {
      head_ = std::max(head_, EtcdInt(response["header"], "revision"));  // a progress notice
    }
    while (log_.size() > options_.retained_changes) {
      const int64_t dropped = log_.front().revision;
      while (!log_.empty() && log_.front().revision == dropped) log_.pop_front();
      log_from_ = dropped;
    }
    if (!events.empty()) arrived_news_ = true;
  }
  arrived_.notify_all();
  return true;
}

void EtcdStore::NotifyLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    arrived_.wait(lock, [&] { return stopping_ || arrived_news_; });
    if (stopping_) return;
    arrived_news_ = false;
    std::function<void()> listener = listener_;
    if (!listener) continue;
    ++calling_;
    lock.unlock();
    listener();
    lock.lock();
    --calling_;
    arrived_.notify_all();
  }
}

void EtcdStore::WatchLoop() {
  const std::string& prefix = options_.etcd.prefix;
  while (true) {
    LoadCache();
    int64_t from;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      from = head_ + 1;
    }
    json create = {{"key", Base64(prefix)},
                   {"range_end", Base64(PrefixEnd(prefix))},
                   {"start_revision", std::to_string(from)},
                   {"prev_kv", true},
                   {"progress_notify", true}};
    client_.Watch(
        create, [this](const json& r) { return Take(r); }, &cancel_);
    std::unique_lock<std::mutex> lock(mu_);
    // The stream ended or failed (a member went away): again shortly, from where it was.
    arrived_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_; });
    if (stopping_) return;
  }
}

Status NotLeading(const Fence& fence) {
  return FailedPrecondition("not written: this replica no longer leads (" + fence.key +
                            " is not the one created at revision " +
                            std::to_string(fence.create_revision) + ")");
}

json FenceHolds(const Fence& fence) {
  return {{"key", Base64(fence.key)},
          {"target", "CREATE"},
          {"result", "EQUAL"},
          {"create_revision", std::to_string(fence.create_revision)}};
}

int64_t FenceRevision(const json& range_response) {
  return range_response.contains("kvs") && !range_response["kvs"].empty()
             ? EtcdInt(range_response["kvs"][0], "create_revision")
             : 0;
}

Result<std::unique_ptr<UsageStore>> EtcdStore::OwnLedger() const {
  return OpenEtcdUsageStore(options_.etcd);
}

}  // namespace tessera::store
