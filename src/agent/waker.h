// Waiting for whatever should make the agent act next: a wake-up from another thread (a watch
// event, a stop request), a descriptor becoming readable (a pod's exit, see Runner::ExitFds),
// or a deadline.
#ifndef TESSERA_AGENT_WAKER_H_
#define TESSERA_AGENT_WAKER_H_

#include <span>

namespace tessera::agent {

class Waker {
 public:
  Waker();  // an eventfd; aborts if the process cannot make one
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // Makes the current or next Wait return. Thread-safe and async-signal-safe; wake-ups that
  // come before a Wait returns are one.
  void Notify();
  // Returns true when woken by Notify or one of `fds` is readable, false after `timeout_ms`
  // (< 0: no limit). A wake-up by Notify is consumed; readable `fds` are left as they are.
  bool Wait(int timeout_ms, std::span<const int> fds = {});

 private:
  int fd_;
};

// Whether `fd` is readable now (a stop requested through a descriptor, say).
bool Readable(int fd);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_WAKER_H_
