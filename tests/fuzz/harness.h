// A bounded in-process fuzzer for what reads untrusted text: the API handler (every write
// path, as the admin and as a tenant), the manifest translator, the JSON reader and the status
// decoder, the patch engine, and the scheduling loop over whatever the writes stored. Properties
// checked: nothing escapes as an exception (a crash), no request answers 5xx, a refused write
// leaves the store exactly as it was (no partial write), no patch grows an object past its bound
// (PatchGrowth), and no scheduling cycle fails.
#ifndef TESSERA_TESTS_FUZZ_HARNESS_H_
#define TESSERA_TESTS_FUZZ_HARNESS_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::server {
class ApiServer;
class ControlPlane;
class SchedulingLoop;
}  // namespace tessera::server

namespace tessera::fuzz {

// How much an accepted merge or strategic merge patch may grow its object, per byte of its
// body (the property PatchGrowth checks; a JSON patch's copies are bounded by the object size
// limit instead).
inline constexpr size_t kMergeGrowth = 2;

// Ok when no patch type applied to a small Pod with `input` as its body (when it is JSON) grows
// it past its bound: kMergeGrowth times the body for merges, the object size limit for JSON
// patches.
Status PatchGrowth(std::string_view input);

// Valid inputs to start from: the seed manifests in `seeds_dir` (*.yaml), and Jobs, statuses,
// queues and nodes as JSON.
std::vector<std::string> Corpus(const std::string& seeds_dir);

// Seeded mutations of corpus entries: byte flips, inserted and deleted ranges, duplicated
// ranges, splices of two entries, and tokens known to trouble parsers (huge numbers, invalid
// UTF-8, aliases, deep nesting, duplicate keys).
class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<std::string> corpus);
  std::string Next();

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> corpus_;
};

class Target {
 public:
  // A fresh server state in `data_dir` (created), with a tenant token for namespace team-a.
  explicit Target(const std::string& data_dir);
  ~Target();

  // Feeds `input` to every reader; an error names the property it broke.
  Status Run(std::string_view input);
  // How many of the requests were accepted (2xx) and how many cycles ran: how deep inputs go.
  uint64_t accepted() const { return accepted_; }
  uint64_t cycles() const { return cycles_; }

 private:
  std::unique_ptr<server::ControlPlane> plane_;
  std::unique_ptr<server::ApiServer> api_;
  std::unique_ptr<server::SchedulingLoop> loop_;
  std::string admin_, tenant_;
  int64_t now_ms_ = 1'800'000'000'000;
  uint64_t runs_ = 0;
  uint64_t accepted_ = 0;
  uint64_t cycles_ = 0;
};

}  // namespace tessera::fuzz

#endif  // TESSERA_TESTS_FUZZ_HARNESS_H_
