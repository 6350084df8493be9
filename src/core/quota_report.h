// What each queue and cohort of the quota tree holds, as KueueViz and Volcano's dashboard show
// it: per flavor and resource its nominal quota and limits, what it uses, borrows and lends,
// and what its fair-sharing weight entitles it to; per node its weight and its weighted share.
// Pure: read from a QuotaTree at its current usage (the cycle's, after its decisions).
#ifndef TESSERA_CORE_QUOTA_REPORT_H_
#define TESSERA_CORE_QUOTA_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/quota.h"

namespace tessera::core {

struct QuotaFigures {
  std::string flavor;
  QuotaResource resource = QuotaResource::kGpu;
  int64_t nominal = 0;
  int64_t borrowing_limit = -1;  // -1: none
  int64_t lending_limit = -1;    // -1: none
  int64_t used = 0;
  int64_t borrowed = 0;  // used above its own quota (its subtree's, for a cohort)
  // Its unused quota the cohort's borrowers hold now. Kueue keeps no such figure: the
  // borrowers' total above the cohort's own quota is attributed to the lenders in tree order,
  // each up to its unused quota within its lending limit.
  int64_t lent = 0;
  // Its weight's part of its cohort's quota: parent quota * weight / the siblings' weights
  // (its own quota at the root).
  int64_t deserved = 0;
};

struct QuotaNodeReport {
  std::string name;
  bool is_queue = true;
  std::string parent;  // "" at a root
  int64_t weight_milli = 1000;
  int64_t share_milli = 0;              // Kueue's weighted dominant-resource share
  StopPolicy stop = StopPolicy::kNone;  // a queue's (Kueue's stopPolicy; a closed Volcano queue)
  std::string stop_reason;
  std::vector<QuotaFigures> figures;  // the flavors and resources it has quota in or uses
};

// Queues first (by index), then cohorts.
std::vector<QuotaNodeReport> ReportQuotas(const QuotaTree& tree);

}  // namespace tessera::core

#endif  // TESSERA_CORE_QUOTA_REPORT_H_
