// Where each waiting Job stands in its queue, as the scheduling loop's last cycle ordered them
// (core::QueuePlace), with the reason it gave, and each queue's and cohort's quota and usage
// after the cycle (core::QuotaNodeReport): kept in memory by the replica that runs the loop and
// served by GET /apis/tessera.io/v1/pendingworkloads and /quotas (server/pending_workloads.cc),
// as Kueue's visibility API serves its queues' order. Writing the positions to the Jobs would
// rewrite every waiting Job whenever the head of its queue moves.
#ifndef TESSERA_SERVER_QUEUE_ORDER_BOOK_H_
#define TESSERA_SERVER_QUEUE_ORDER_BOOK_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/admission.h"

namespace tessera::server {

struct QueueOrderEntry {
  std::string ns;
  std::string name;
  std::string queue;     // the ClusterQueue ("" when outside any queue's order)
  int64_t position = 0;  // 1: the queue's head; 0: outside the order
  int64_t waiting = 0;   // workloads in the queue's order
  int32_t priority = 0;
  core::QueuePlace::Fit fits_when_all_end = core::QueuePlace::Fit::kUnknown;
  std::string reason;  // the cycle's own words
};

struct QueueOrder {
  std::vector<QueueOrderEntry> entries;       // by queue, then position
  std::vector<core::QuotaNodeReport> quotas;  // after the cycle's decisions
  int64_t at_ms = 0;                          // the cycle's time
};

class QueueOrderBook {
 public:
  // The last cycle's order replaces the one before.
  void Publish(QueueOrder order);
  // The last order published; null before the first cycle of this replica.
  std::shared_ptr<const QueueOrder> Last() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const QueueOrder> last_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_QUEUE_ORDER_BOOK_H_
