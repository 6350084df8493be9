#include "store/etcd_usage_store.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "store/etcd_store.h"  // the fence

namespace tessera::store {

namespace {

using nlohmann::json;

constexpr int kTries = 16;  // reads again after a concurrent writer

// How long to wait before reading again after the `attempt`th write lost to another writer: a
// random time up to 1, 2, 4 ... 64 ms, so that two writers racing for the counter stop colliding
// (without it, two replicas writing at once could each lose every try under load).
std::chrono::milliseconds Backoff(int attempt) {
  thread_local std::minstd_rand random(std::random_device{}());
  std::uniform_int_distribution<int> ms(0, 1 << std::min(attempt, 6));
  return std::chrono::milliseconds(ms(random));
}

std::string Padded(int64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(std::max<int64_t>(n, 0)));
  return buf;
}

std::string Encode(const core::UsageSegment& s) {
  return json{{"id", s.id},
              {"kind", s.kind == core::SegmentKind::kIdle ? 1 : 0},
              {"key", s.key},
              {"ns", s.ns},
              {"queue", s.queue},
              {"job", s.job},
              {"pod", s.pod},
              {"model", s.model},
              {"gpuMilli", s.gpu_milli},
              {"start", s.start_ms},
              {"end", s.end_ms}}
      .dump();
}

std::optional<core::UsageSegment> Decode(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  core::UsageSegment s;
  try {
    s.id = j.at("id").get<int64_t>();
    s.kind = j.at("kind").get<int>() == 1 ? core::SegmentKind::kIdle : core::SegmentKind::kHeld;
    s.key = j.at("key").get<std::string>();
    s.ns = j.at("ns").get<std::string>();
    s.queue = j.at("queue").get<std::string>();
    s.job = j.at("job").get<std::string>();
    s.pod = j.at("pod").get<std::string>();
    s.model = j.at("model").get<std::string>();
    s.gpu_milli = j.at("gpuMilli").get<int64_t>();
    s.start_ms = j.at("start").get<int64_t>();
    s.end_ms = j.at("end").get<int64_t>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return s;
}

bool ById(const core::UsageSegment& a, const core::UsageSegment& b) { return a.id < b.id; }

class EtcdUsageStore : public UsageStore {
 public:
  explicit EtcdUsageStore(const EtcdOptions& etcd)
      : client_(etcd),
        base_(etcd.prefix + "_usage/"),
        ops_per_txn_(std::max<size_t>(etcd.max_txn_ops, 4)) {}

  Result<std::vector<core::UsageSegment>> LoadOpen() override {
    std::vector<core::UsageSegment> out;
    TESSERA_RETURN_IF_ERROR(Read(base_ + "open-", PrefixEnd(base_ + "open-"), &out));
    std::sort(out.begin(), out.end(), ById);
    return out;
  }

  Status Apply(std::vector<core::UsageSegment>* opened,
               std::span<const std::pair<int64_t, int64_t>> closed, const Fence* fence) override {
    // Chunks of at most ops_per_txn_ - 1 operations (the counter takes one): closed segments
    // first, two operations each, then opened ones, one each.
    const size_t budget = ops_per_txn_ - 1;
    size_t oi = 0, ci = 0;
    while (oi < opened->size() || ci < closed.size()) {
      size_t ops = 0, cn = 0, on = 0;
      while (ci + cn < closed.size() && ops + 2 <= budget) ops += 2, ++cn;
      while (oi + on < opened->size() && ops + 1 <= budget) ops += 1, ++on;
      Status s = ApplyChunk(std::span(opened->data() + oi, on), closed.subspan(ci, cn), fence);
      if (!s.ok()) {
        for (size_t i = oi; i < opened->size(); ++i) (*opened)[i].id = 0;
        return s;
      }
      oi += on;
      ci += cn;
    }
    return Status::Ok();
  }

  Result<std::vector<core::UsageSegment>> Overlapping(int64_t since_ms, int64_t until_ms,
                                                      std::optional<std::string_view> ns) override {
    std::vector<core::UsageSegment> all;
    TESSERA_RETURN_IF_ERROR(Read(base_ + "open-", PrefixEnd(base_ + "open-"), &all));
    // Closed segments that ended after since_ms: keys from "closed-<since_ms + 1>".
    const int64_t after = since_ms == std::numeric_limits<int64_t>::max() ? since_ms : since_ms + 1;
    TESSERA_RETURN_IF_ERROR(
        Read(base_ + "closed-" + Padded(after), PrefixEnd(base_ + "closed-"), &all));
    std::vector<core::UsageSegment> out;
    for (core::UsageSegment& s : all) {
      if (s.start_ms >= until_ms) continue;
      if (!s.open() && s.end_ms <= since_ms) continue;
      if (ns && s.ns != *ns) continue;
      out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), ById);
    return out;
  }

 private:
  std::string OpenKey(int64_t id) const { return base_ + "open-" + Padded(id); }
  std::string KeyOf(const core::UsageSegment& s) const {
    return s.open() ? OpenKey(s.id) : base_ + "closed-" + Padded(s.end_ms) + "-" + Padded(s.id);
  }

  // Every segment with a key in [from, end), in pages.
  Status Read(const std::string& from, const std::string& end,
              std::vector<core::UsageSegment>* out) {
    int64_t revision = 0;  // every page at the first one's revision
    return client_.RangeAll(from, end, &revision, [&](const json& kv) {
      auto s = Decode(EtcdText(kv, "value"));
      if (!s) return Internal("usage ledger: undecodable record " + EtcdText(kv, "key"));
      out->push_back(std::move(*s));
      return Status::Ok();
    });
  }

  // One transaction's worth: reads the counter and the open records to close (with the fence's
  // key), then writes comparing what it read.
  Status ApplyChunk(std::span<core::UsageSegment> opened,
                    std::span<const std::pair<int64_t, int64_t>> closed, const Fence* fence) {
    const std::string next_key = base_ + "next";
    for (int attempt = 0; attempt < kTries; ++attempt) {
      json reads = json::array();
      reads.push_back({{"request_range", {{"key", Base64(next_key)}}}});
      for (const auto& [id, end] : closed) {
        reads.push_back({{"request_range", {{"key", Base64(OpenKey(id))}}}});
      }
      if (fence) reads.push_back({{"request_range", {{"key", Base64(fence->key)}}}});
      auto read = client_.Call("kv/txn", {{"success", reads}});
      if (!read.ok()) return read.status();
      const json responses = (*read).value("responses", json::array());
      auto range = [&](size_t i) {
        return i < responses.size() ? responses[i].value("response_range", json::object())
                                    : json::object();
      };
      auto first_kv = [](const json& rr) {
        return rr.contains("kvs") && !rr["kvs"].empty() ? rr["kvs"][0] : json::object();
      };
      if (fence && FenceRevision(range(1 + closed.size())) != fence->create_revision) {
        return NotLeading(*fence);
      }
      const json counter = first_kv(range(0));
      const std::string last_text = EtcdText(counter, "value");
      int64_t last_id = 0;
      if (!last_text.empty() &&
          std::from_chars(last_text.data(), last_text.data() + last_text.size(), last_id).ec !=
              std::errc()) {
        return Internal("usage ledger: undecodable counter " + next_key + ": " + last_text);
      }

      json compare = json::array({EtcdModIs(next_key, EtcdInt(counter, "mod_revision"))});
      json ops = json::array({EtcdPut(next_key, std::to_string(last_id + opened.size()))});
      for (size_t i = 0; i < opened.size(); ++i) {
        core::UsageSegment s = opened[i];
        s.id = last_id + 1 + static_cast<int64_t>(i);
        ops.push_back(EtcdPut(KeyOf(s), Encode(s)));
      }
      for (size_t i = 0; i < closed.size(); ++i) {
        const json kv = first_kv(range(1 + i));
        auto s = Decode(EtcdText(kv, "value"));
        if (!s) continue;  // closed already: nothing to do
        compare.push_back(EtcdModIs(OpenKey(closed[i].first), EtcdInt(kv, "mod_revision")));
        s->end_ms = closed[i].second;
        ops.push_back(EtcdDelete(OpenKey(s->id)));
        ops.push_back(EtcdPut(KeyOf(*s), Encode(*s)));
      }
      if (fence) compare.push_back(FenceHolds(*fence));
      auto txn =
          client_.Call("kv/txn", {{"compare", std::move(compare)}, {"success", std::move(ops)}});
      if (!txn.ok()) return txn.status();
      if ((*txn).value("succeeded", false)) {
        for (size_t i = 0; i < opened.size(); ++i) {
          opened[i].id = last_id + 1 + static_cast<int64_t>(i);
        }
        return Status::Ok();
      }
      std::this_thread::sleep_for(Backoff(attempt));
    }
    return Conflict("usage ledger: concurrent writers kept changing it; not written");
  }

  EtcdClient client_;
  const std::string base_;
  const size_t ops_per_txn_;
};

}  // namespace

Result<std::unique_ptr<UsageStore>> OpenEtcdUsageStore(const EtcdOptions& etcd) {
  auto store = std::make_unique<EtcdUsageStore>(etcd);
  // Reached now, so that a server on an unreachable etcd says so at start.
  auto open = store->LoadOpen();
  if (!open.ok()) return open.status();
  return std::unique_ptr<UsageStore>(std::move(store));
}

}  // namespace tessera::store
