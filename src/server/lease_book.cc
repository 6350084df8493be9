#include "server/lease_book.h"

#include <algorithm>

#include "api/json_read.h"
#include "api/time.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

// The metadata the store keeps for itself, besides resourceVersion.
constexpr const char* kSystemFields[] = {"creationTimestamp", "uid"};

// `lease` without what a renewal or the store changes: compared to tell a renewal. With
// `system`, the store's fields removed are kept there.
json Comparable(json lease, json* system = nullptr) {
  if (json* spec = lease.contains("spec") ? &lease["spec"] : nullptr; spec && spec->is_object()) {
    spec->erase("renewTime");
  }
  if (lease.contains("metadata") && lease["metadata"].is_object()) {
    json& meta = lease["metadata"];
    meta.erase("resourceVersion");
    for (const char* k : kSystemFields) {
      if (system != nullptr && meta.contains(k)) (*system)[k] = meta[k];
      meta.erase(k);
    }
  }
  return lease;
}

int64_t RenewTimeOf(const json& lease) {
  return api::ParseTime(api::Str(api::Member(lease, "spec"), "renewTime"));
}

}  // namespace

void LeaseBook::Stored(const std::string& name, const std::string* body, int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (body == nullptr) {
    leases_.erase(name);
    return;
  }
  json obj = json::parse(*body, nullptr, false);
  if (!obj.is_object()) {
    leases_.erase(name);
    return;
  }
  Entry& e = leases_[name];
  // Commits run concurrently on a shared store: an older version reported late is no news.
  if (version < e.version) return;
  e.stored_ms = RenewTimeOf(obj);
  e.system = json::object();
  e.comparable = Comparable(std::move(obj), &e.system);
  e.version = version;
  // A renewal held here and later than the one stored stays the last.
  if (e.renewed_ms <= e.stored_ms) e.renewed_ms = -1;
}

std::optional<json> LeaseBook::Renew(const json& lease, int64_t now_ms) {
  const std::string name = api::Str(api::Member(lease, "metadata"), "name");
  const json& version = api::Member(api::Member(lease, "metadata"), "resourceVersion");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(name);
  if (it == leases_.end()) return std::nullopt;
  Entry& e = it->second;
  if (!version.is_null() && version != std::to_string(e.version)) return std::nullopt;
  if (e.stored_ms < 0 || now_ms - e.stored_ms >= persist_ms_) return std::nullopt;
  if (Comparable(lease) != e.comparable) return std::nullopt;
  e.renewed_ms = std::max(e.renewed_ms, now_ms);
  json served = lease;
  json& meta = served["metadata"];
  for (const auto& [k, v] : e.system.items()) meta[k] = v;
  meta["resourceVersion"] = std::to_string(e.version);
  served["spec"]["renewTime"] = api::FormatTime(e.renewed_ms);
  return served;
}

int64_t LeaseBook::LastBeat(const json& node, const json* lease) {
  const int64_t beat = api::ParseTime(api::Str(api::Member(node, "status"), "heartbeat"));
  int64_t stored_ms = lease == nullptr ? -1 : RenewTimeOf(*lease);
  const std::string name = api::Str(api::Member(node, "metadata"), "name");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(name);
  // The caller's copy of the Lease may be older than the last write the book saw: a renewal
  // just persisted clears the renewals held before it, and a reader whose snapshot still has
  // the version before would otherwise read the node as silent since then (a node declared
  // NotReady persist_ms after its last stored renewal, its work moved while it runs).
  if (it != leases_.end()) stored_ms = std::max(stored_ms, it->second.stored_ms);
  int64_t renewed = stored_ms;
  if (it != leases_.end() && it->second.renewed_ms >= 0) {
    renewed = std::max(renewed, it->second.renewed_ms);
  } else if (stored_ms >= 0) {
    // Renewals of before the start may have gone unstored for up to persist_ms.
    renewed = std::max(stored_ms, std::min(stored_ms + persist_ms_, started_ms_));
  }
  return std::max(beat, renewed);
}

void LeaseBook::Overlay(json* lease) {
  const std::string name = api::Str(api::Member(*lease, "metadata"), "name");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(name);
  if (it != leases_.end() && it->second.renewed_ms > RenewTimeOf(*lease)) {
    (*lease)["spec"]["renewTime"] = api::FormatTime(it->second.renewed_ms);
  }
}

}  // namespace tessera::server
