#include "server/queue_order_book.h"

#include <utility>

namespace tessera::server {

void QueueOrderBook::Publish(QueueOrder order) {
  auto next = std::make_shared<const QueueOrder>(std::move(order));
  std::lock_guard<std::mutex> lock(mu_);
  last_ = std::move(next);
}

std::shared_ptr<const QueueOrder> QueueOrderBook::Last() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

}  // namespace tessera::server
