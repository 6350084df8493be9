// The one way a streamed response waits for its source (the change feed for a watch, a pod's
// log, the exec hub for a session's output, input or claims): Next asks the source; when it
// has nothing yet, the stream registers a wake-up with it and is asked again when woken. The
// wake-up holds the stream weakly (a stream gone is not woken, nor kept alive), a cancelled
// stream registers nothing more, and Cancel drops what it registered.
#ifndef TESSERA_SERVER_WAITING_STREAM_H_
#define TESSERA_SERVER_WAITING_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "server/http_server.h"

namespace tessera::server {

class WaitingStream : public ResponseStream, public std::enable_shared_from_this<WaitingStream> {
 public:
  using Emit = std::function<void(std::optional<std::string>)>;

  // Marks the stream cancelled and drops its registration; then OnCancel.
  void Cancel() final;

 protected:
  // A wake-up that asks this stream for its next chunk again (Next(emit)), while it lives.
  std::function<void()> Again(Emit emit);

  // Waits on a source that registers wake-ups by id: `subscribe` registers one and returns its
  // id, or nullopt when the source has news already (nothing registered); `unsubscribe` drops
  // one. True when the stream now waits, or was cancelled: Next returns. False: Next asks the
  // source again.
  bool WaitOn(const Emit& emit,
              const std::function<std::optional<uint64_t>(std::function<void()>)>& subscribe,
              std::function<void(uint64_t)> unsubscribe);

  bool Cancelled();

  // What else ends with the client (a session abandoned).
  virtual void OnCancel() {}

 private:
  std::mutex mu_;
  bool cancelled_ = false;
  std::function<void()> drop_;  // the registration's removal
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_WAITING_STREAM_H_
