// The control plane's accounting: keeps the usage ledger (core/accounting.h, stored by
// store::UsageStore: <data-dir>/usage.db, or etcd beside the replicas' state) current with what
// admitted Jobs hold, finds pods that hold GPUs idle, and answers usage queries.
//
// What a device is charged is the binding's gpuMilli (a whole GPU 1000, a share its milli-GPU,
// a MIG slice its fraction, a time-slice replica 1000/replicas). A holding starts at the Job's
// admittedAt and ends at its finishedAt (written by the agent) or when the binding is gone. A
// held GPU is idle while its agent's last sample shows utilisation below the threshold; the
// same utilisation counts for every holder of a shared GPU.
#ifndef TESSERA_SERVER_ACCOUNTANT_H_
#define TESSERA_SERVER_ACCOUNTANT_H_

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/accounting.h"
#include "server/object_cache.h"
#include "store/usage_store.h"

namespace tessera::server {

struct AccountingOptions {
  int64_t idle_threshold_pct = 5;        // below this utilisation a GPU is idle
  int64_t idle_window_ms = 30 * 60'000;  // idle this long: an idle pod
  // Per GPU-hour in hundredths of `currency`: the seeds' example prices.
  core::PriceTable prices = {{"T4", 850}, {"V100", 2600}, {"A10", 1800}, {"A100", 6500}};
  std::string currency = "CNY";
};

class Accountant {
 public:
  // Over `ledger`, going on from the segments it holds open.
  static Result<std::unique_ptr<Accountant>> Open(std::unique_ptr<store::UsageStore> ledger);

  void Configure(AccountingOptions options);
  AccountingOptions options() const;

  // Brings the ledger up to date at `now_ms` with what `jobs` hold on `nodes`. Jobs named in
  // `released` ("ns/name": preempted or stopped at now_ms) hold nothing any more. Returns the
  // pods idle for the window. With `fence` (the scheduler's leadership, on etcd), the ledger is
  // written only while it holds; in a new term (another replica led meanwhile) the open
  // segments are read again from the ledger first, as they are after a failed write.
  Result<std::vector<core::IdlePod>> Observe(int64_t now_ms, std::span<const StoredJson> jobs,
                                             std::span<const StoredJson> nodes,
                                             const std::set<std::string, std::less<>>& released,
                                             const std::optional<store::Fence>& fence = {});

  // Usage within [since_ms, until_ms) grouped by `by`; namespace `ns` only when given.
  Result<std::vector<core::UsageRow>> Usage(core::UsageGroup by, int64_t since_ms, int64_t until_ms,
                                            std::optional<std::string> ns);

  // The idle pods found by the last Observe.
  std::vector<core::IdlePod> idle() const;

 private:
  explicit Accountant(std::unique_ptr<store::UsageStore> ledger,
                      std::vector<core::UsageSegment> open);

  mutable std::mutex mu_;
  std::unique_ptr<store::UsageStore> ledger_;
  std::vector<core::UsageSegment> open_;
  bool reload_ = false;  // open_ may differ from the ledger's: read it again
  int64_t term_ = 0;     // the fence's create_revision at the last Observe
  std::vector<core::IdlePod> idle_;
  AccountingOptions options_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_ACCOUNTANT_H_
