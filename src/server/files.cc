#include "server/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tessera::server {

Status WriteFileDurably(const std::string& path, std::string_view text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return FailedPrecondition("cannot write " + path + ": " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return FailedPrecondition("cannot write " + path);
  }
  return Status::Ok();
}

Result<DirLock> DirLock::Acquire(const std::string& dir) {
  const std::string path = dir + "/lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return FailedPrecondition("cannot open " + path + ": " + std::strerror(errno));
  struct flock want = {};
  want.l_type = F_WRLCK;
  want.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &want) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EACCES || err == EAGAIN) {
      return FailedPrecondition("data directory " + dir +
                                " is in use by another server: one server owns its state");
    }
    return FailedPrecondition("cannot lock " + path + ": " + std::strerror(err));
  }
  return DirLock(fd);
}

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tessera::server
