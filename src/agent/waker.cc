#include "agent/waker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace tessera::agent {

Waker::Waker() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) std::abort();
}

Waker::~Waker() { close(fd_); }

void Waker::Notify() {
  const uint64_t one = 1;
  while (write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

bool Waker::Wait(int timeout_ms, std::span<const int> fds) {
  std::vector<pollfd> polled;
  polled.reserve(fds.size() + 1);
  polled.push_back({fd_, POLLIN, 0});
  for (int fd : fds) polled.push_back({fd, POLLIN, 0});
  int n = 0;
  do {
    n = poll(polled.data(), polled.size(), timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  if (polled[0].revents & POLLIN) {
    uint64_t count = 0;
    while (read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
  }
  return true;
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  int n = 0;
  do {
    n = poll(&p, 1, 0);
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & POLLIN);
}

}  // namespace tessera::agent
