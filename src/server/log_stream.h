// Follows one pod's log as a response body (kubectl logs -f): what is there (its tail), then
// what is appended, until the pod has ended or its container's run is over (a later one
// started) and all of it was sent.
#ifndef TESSERA_SERVER_LOG_STREAM_H_
#define TESSERA_SERVER_LOG_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "server/http_server.h"
#include "server/log_store.h"
#include "server/waiting_stream.h"

namespace tessera::server {

// What a follow sends: what is appended is prefixed with its time (as it comes: it is sent as
// soon as it is received) with `timestamps`, and it ends after `limit_bytes` (-1: no limit).
struct LogStreamOptions {
  bool timestamps = false;
  int64_t limit_bytes = -1;
};

class LogStream : public WaitingStream {
 public:
  using Options = LogStreamOptions;
  // `first` is sent first; then what is appended after `from`.
  LogStream(LogStore& logs, std::string ns, std::string job, std::string uid, std::string pod,
            std::string first, LogStore::Position from, Options options = Options(),
            std::function<int64_t()> clock = nullptr)
      : logs_(logs),
        ns_(std::move(ns)),
        job_(std::move(job)),
        uid_(std::move(uid)),
        pod_(std::move(pod)),
        first_(std::move(first)),
        from_(from),
        options_(options),
        clock_(std::move(clock)) {}

  void Next(std::function<void(std::optional<std::string>)> emit) override;

 private:
  LogStore& logs_;
  const std::string ns_, job_, uid_, pod_;
  // `data` as sent: prefixed at each line's start with `timestamps`, cut at the limit.
  std::string Shape(std::string data);

  std::string first_;
  LogStore::Position from_;
  Options options_;
  std::function<int64_t()> clock_;
  bool line_start_ = true;  // the next byte sent starts a line
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_LOG_STREAM_H_
