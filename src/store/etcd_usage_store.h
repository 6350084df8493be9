// The accounting ledger (store/usage_store.h) in etcd, for replicas on one etcd: any replica
// answers usage queries from it, and a new leader goes on from the segments the last one left
// open. Keys, under <prefix>_usage/:
//   next                           the last segment id given (ids grow; never reused)
//   open-<id, 20 digits>           an open segment, as JSON
//   closed-<end, 20 digits>-<id>   a closed one, by its end time: a window [since, until) reads
//                                  only the segments that ended after `since`, and the open ones
//
// Apply reads the counter and the open records it closes, then writes in one transaction that
// compares their mod_revisions (and the leader's fence): a concurrent writer makes it read again.
// More segments than one transaction takes (etcd's --max-txn-ops: one op per opened segment, two
// per closed one, one for the counter) go in several, each whole; names are bounded (DNS labels
// and names), so 127 ops of segments stay far below --max-request-bytes. A crash between them
// leaves the ledger consistent, one part written: the next Observe reconciles the rest, opening
// what is held and closing what is not at that time.
#ifndef TESSERA_STORE_ETCD_USAGE_STORE_H_
#define TESSERA_STORE_ETCD_USAGE_STORE_H_

#include <memory>
#include <string>

#include "core/status.h"
#include "store/etcd_client.h"
#include "store/store.h"
#include "store/usage_store.h"

namespace tessera::store {

Result<std::unique_ptr<UsageStore>> OpenEtcdUsageStore(const EtcdOptions& etcd);

}  // namespace tessera::store

#endif  // TESSERA_STORE_ETCD_USAGE_STORE_H_
