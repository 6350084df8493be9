#include "store/txn_group.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace tessera::store {

using nlohmann::json;

struct TxnGroup::Queued {
  json compare;
  json ops;
  const Fence* fence;
  std::set<std::string> keys;  // written, base64 as in the request
  size_t bytes = 0;            // of keys and values, decoded
  bool done = false;
  Result<std::optional<int64_t>> result = std::optional<int64_t>();
};

namespace {

// A base64 field's decoded size.
size_t DecodedSize(const json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains(field) || !obj[field].is_string()) return 0;
  return obj[field].get_ref<const std::string&>().size() * 3 / 4;
}

// The key a put or delete operation writes ("" for another kind of operation).
const json& WrittenOf(const json& op) {
  static const json kNone = json::object();
  for (const char* kind : {"request_put", "request_delete_range"}) {
    if (op.is_object() && op.contains(kind)) return op[kind];
  }
  return kNone;
}

bool SameFence(const Fence* a, const Fence* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return a->key == b->key && a->create_revision == b->create_revision;
}

}  // namespace

TxnGroup::TxnGroup(Send send, size_t max_ops, size_t max_bytes)
    : send_(std::move(send)), max_ops_(max_ops), max_bytes_(max_bytes) {}

int64_t TxnGroup::sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

int64_t TxnGroup::run() const {
  std::lock_guard<std::mutex> lock(mu_);
  return run_;
}

Result<std::optional<int64_t>> TxnGroup::Run(json compare, json ops, const Fence* fence) {
  Queued q{std::move(compare), std::move(ops), fence, {}};
  for (const json& op : q.ops) {
    const json& w = WrittenOf(op);
    if (w.contains("key") && w["key"].is_string()) q.keys.insert(w["key"].get<std::string>());
    q.bytes += DecodedSize(w, "key") + DecodedSize(w, "value");
  }
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&q);
  while (!q.done) {
    if (sending_) {
      done_.wait(lock);
      continue;
    }
    // No transaction in flight: this thread sends what is queued, its own or not.
    sending_ = true;
    const std::vector<Queued*> batch = TakeBatch();
    lock.unlock();
    SendBatch(batch);
    lock.lock();
    for (Queued* b : batch) b->done = true;
    run_ += static_cast<int64_t>(batch.size());
    sending_ = false;
    done_.notify_all();
  }
  return std::move(q.result);
}

std::vector<TxnGroup::Queued*> TxnGroup::TakeBatch() {
  std::vector<Queued*> batch;
  std::set<std::string> keys;
  size_t ops = 0, compares = 0, bytes = 0;
  for (auto it = queue_.begin(); it != queue_.end();) {
    Queued* q = *it;
    const size_t fence_compare = q->fence ? 1 : 0;
    const bool fits =
        batch.empty() ||
        (SameFence(q->fence, batch.front()->fence) && ops + q->ops.size() <= max_ops_ &&
         compares + q->compare.size() + fence_compare <= max_ops_ &&
         bytes + q->bytes <= max_bytes_ &&
         std::none_of(q->keys.begin(), q->keys.end(),
                      [&](const std::string& k) { return keys.contains(k); }));
    if (!fits) {
      ++it;
      continue;
    }
    if (batch.empty()) compares += fence_compare;
    batch.push_back(q);
    keys.insert(q->keys.begin(), q->keys.end());
    ops += q->ops.size();
    compares += q->compare.size();
    bytes += q->bytes;
    it = queue_.erase(it);
  }
  return batch;
}

void TxnGroup::SendBatch(const std::vector<Queued*>& batch) {
  auto send_alone = [&](Queued* q) {
    q->result = send_(q->compare, q->ops, q->fence);
    std::lock_guard<std::mutex> lock(mu_);
    ++sent_;
  };
  if (batch.size() == 1) {
    send_alone(batch.front());
    return;
  }
  json compare = json::array(), ops = json::array();
  for (const Queued* q : batch) {
    for (const json& c : q->compare) compare.push_back(c);
    for (const json& o : q->ops) ops.push_back(o);
  }
  Result<std::optional<int64_t>> merged =
      send_(std::move(compare), std::move(ops), batch.front()->fence);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++sent_;
  }
  if (merged.ok() && !merged->has_value()) {
    // Some member's comparison failed: each alone says whose.
    for (Queued* q : batch) send_alone(q);
    return;
  }
  for (Queued* q : batch) q->result = merged;
}

}  // namespace tessera::store
