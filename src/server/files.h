// Writing the files the control plane keeps beside its state (tokens, keys, client configs).
#ifndef TESSERA_SERVER_FILES_H_
#define TESSERA_SERVER_FILES_H_

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"

namespace tessera::server {

// Replaces `path` with `text`, created with `mode` (0600: its owner only), all or nothing: the
// text goes to a temporary file beside it, is synced, then renamed over `path`.
Status WriteFileDurably(const std::string& path, std::string_view text, mode_t mode);

// An exclusive lock on a directory's `lock` file, held until destroyed: one server owns its
// data directory. An open file description lock: a second holder in the same process is
// refused too, and it ends when the last descriptor of it closes (close-on-exec; a child
// forked without exec must close it).
class DirLock {
 public:
  // FailedPrecondition when another holder has it.
  static Result<DirLock> Acquire(const std::string& dir);
  DirLock() = default;
  DirLock(DirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_FILES_H_
