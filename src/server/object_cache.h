// Parsed stored objects, kept current from the change feed (recent changes in memory, older ones
// from the store's log): a listing parses only what changed since the previous one (the
// scheduling loop lists every cycle, /metrics every scrape).
#ifndef TESSERA_SERVER_OBJECT_CACHE_H_
#define TESSERA_SERVER_OBJECT_CACHE_H_

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/change_feed.h"
#include "store/store.h"

namespace tessera::server {

// A stored object, parsed (shared, immutable), with its version.
struct StoredJson {
  std::shared_ptr<const nlohmann::json> doc;
  int64_t version = 0;
  const nlohmann::json& obj() const { return *doc; }
};

class ObjectCache {
 public:
  ObjectCache(store::Store& store, ChangeFeed& feed) : store_(store), feed_(feed) {}

  // The stored objects of `kind` in every namespace, ordered by namespace and name, as of the
  // feed's latest change (bodies that are not JSON objects, which the API never writes, are
  // skipped). The first listing of a kind reads it whole; later ones apply the changes since.
  Result<std::vector<StoredJson>> List(std::string_view kind);

  // How many objects of `kind` namespace `ns` holds, and the sum of `measure` over them, as of
  // the feed's latest change. Kept per namespace as changes are applied (no listing is copied
  // or walked per call). The first call for a kind sets its measure: later calls for it must
  // pass the same function.
  using Measure = int64_t (*)(const nlohmann::json&);
  struct Tally {
    int64_t objects = 0;
    int64_t measured = 0;
  };
  Result<Tally> TallyOf(std::string_view kind, std::string_view ns, Measure measure);

  // The object at `key` as the cache last caught up with it, when its kind is kept (listed
  // before) and it is there; nullopt otherwise. Reads nothing and parses nothing: a caller that
  // has read the object's version from the store uses the document where the versions agree.
  std::optional<StoredJson> Peek(const store::ObjectKey& key);

 private:
  struct Kind {
    int64_t revision = 0;  // changes up to this one are applied
    std::map<std::pair<std::string, std::string>, StoredJson> objects;  // (ns, name)
    Measure measure = nullptr;                                          // for `tallies`
    std::map<std::string, Tally, std::less<>> tallies;                  // by namespace
  };
  Status Load(std::string_view kind, Kind* k);
  // The kind's entry, loaded on first use and caught up with the feed.
  Result<Kind*> Current(std::string_view kind);
  // Puts `doc` (null: none) as object `id` of `k`, keeping its tallies.
  static void Put(Kind* k, const std::pair<std::string, std::string>& id, StoredJson doc);
  Status CatchUp(int64_t head);

  store::Store& store_;
  ChangeFeed& feed_;
  std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_OBJECT_CACHE_H_
