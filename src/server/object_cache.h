// Parsed stored objects, kept current from the store's change log: a listing parses only what
// changed since the previous one (the scheduling loop lists every cycle, /metrics every scrape).
#ifndef TESSERA_SERVER_OBJECT_CACHE_H_
#define TESSERA_SERVER_OBJECT_CACHE_H_

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
  explicit ObjectCache(store::Store& store) : store_(store) {}

  // The stored objects of `kind` in every namespace, ordered by namespace and name, as of the
  // store's latest revision (bodies that are not JSON objects, which the API never writes, are
  // skipped). The first listing of a kind reads it whole; later ones apply the changes since.
  Result<std::vector<StoredJson>> List(std::string_view kind);

 private:
  struct Kind {
    int64_t revision = 0;  // changes up to this one are applied
    std::map<std::pair<std::string, std::string>, StoredJson> objects;  // (ns, name)
  };
  Status Load(std::string_view kind, Kind* k);
  Status CatchUp(int64_t head);

  store::Store& store_;
  std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_OBJECT_CACHE_H_
