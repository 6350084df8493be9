#include "server/object_cache.h"

#include <algorithm>

namespace tessera::server {

namespace {

std::shared_ptr<const nlohmann::json> Parse(const std::string& body) {
  auto doc = std::make_shared<nlohmann::json>(nlohmann::json::parse(body, nullptr, false));
  if (!doc->is_object()) return nullptr;
  return doc;
}

}  // namespace

Status ObjectCache::Load(std::string_view kind, Kind* k) {
  // The revision first: a write landing during the listing is applied again later (harmless).
  const int64_t revision = store_.Revision();
  auto list = store_.List(kind, std::nullopt);
  if (!list.ok()) return list.status();
  k->objects.clear();
  k->tallies.clear();
  for (const store::StoredObject& o : *list) {
    if (auto doc = Parse(o.body))
      Put(k, {o.key.ns, o.key.name}, StoredJson{std::move(doc), o.version});
  }
  k->revision = revision;
  return Status::Ok();
}

Status ObjectCache::CatchUp(int64_t head) {
  int64_t from = head;
  for (const auto& [name, k] : kinds_) from = std::min(from, k.revision);
  constexpr size_t kBatch = 4096;
  while (from < head) {
    auto changes = feed_.After(from, kBatch);
    if (!changes.ok()) {
      if (changes.status().code() != StatusCode::kFailedPrecondition) return changes.status();
      // Compacted past what the cache saw: read the kinds again.
      for (auto& [name, k] : kinds_) TESSERA_RETURN_IF_ERROR(Load(name, &k));
      return Status::Ok();
    }
    if (changes->empty()) break;
    // Only the last change of an object in this batch matters.
    std::map<std::tuple<std::string_view, std::string_view, std::string_view>, const store::Change*>
        last;
    for (const store::Change& c : *changes) {
      last[{c.object.key.kind, c.object.key.ns, c.object.key.name}] = &c;
    }
    for (const auto& [key, c] : last) {
      auto it = kinds_.find(c->object.key.kind);
      if (it == kinds_.end() || c->revision <= it->second.revision) continue;
      const std::pair<std::string, std::string> id{c->object.key.ns, c->object.key.name};
      std::shared_ptr<const nlohmann::json> doc;
      if (c->type != store::ChangeType::kDeleted) doc = Parse(c->object.body);
      Put(&it->second, id, StoredJson{std::move(doc), c->object.version});
    }
    from = changes->back().revision;
    for (auto& [name, k] : kinds_) k.revision = std::max(k.revision, from);
    if (changes->size() < kBatch) break;
  }
  return Status::Ok();
}

void ObjectCache::Put(Kind* k, const std::pair<std::string, std::string>& id, StoredJson doc) {
  auto it = k->objects.find(id);
  if (it != k->objects.end()) {
    Tally& t = k->tallies[id.first];
    --t.objects;
    if (k->measure != nullptr) t.measured -= k->measure(it->second.obj());
  }
  if (!doc.doc) {
    if (it != k->objects.end()) k->objects.erase(it);
    return;
  }
  Tally& t = k->tallies[id.first];
  ++t.objects;
  if (k->measure != nullptr) t.measured += k->measure(doc.obj());
  k->objects[id] = std::move(doc);
}

Result<ObjectCache::Kind*> ObjectCache::Current(std::string_view kind) {
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) {
    Kind k;
    TESSERA_RETURN_IF_ERROR(Load(kind, &k));
    it = kinds_.emplace(std::string(kind), std::move(k)).first;
  }
  TESSERA_RETURN_IF_ERROR(CatchUp(feed_.head()));
  return &it->second;
}

Result<std::vector<StoredJson>> ObjectCache::List(std::string_view kind) {
  std::lock_guard<std::mutex> lock(mu_);
  auto k = Current(kind);
  if (!k.ok()) return k.status();
  std::vector<StoredJson> out;
  out.reserve((*k)->objects.size());
  for (const auto& [id, o] : (*k)->objects) out.push_back(o);
  return out;
}

Result<ObjectCache::Tally> ObjectCache::TallyOf(std::string_view kind, std::string_view ns,
                                                Measure measure) {
  std::lock_guard<std::mutex> lock(mu_);
  auto k = Current(kind);
  if (!k.ok()) return k.status();
  Kind& entry = **k;
  if (entry.measure != measure) {
    // A new measure: the tallies are summed anew.
    entry.measure = measure;
    entry.tallies.clear();
    for (const auto& [id, o] : entry.objects) {
      Tally& t = entry.tallies[id.first];
      ++t.objects;
      if (measure != nullptr) t.measured += measure(o.obj());
    }
  }
  auto t = entry.tallies.find(ns);
  return t == entry.tallies.end() ? Tally{} : t->second;
}

std::optional<StoredJson> ObjectCache::Peek(const store::ObjectKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto kind = kinds_.find(key.kind);
  if (kind == kinds_.end()) return std::nullopt;
  auto it = kind->second.objects.find({key.ns, key.name});
  if (it == kind->second.objects.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessera::server
