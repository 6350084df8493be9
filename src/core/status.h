// Recoverable errors as values: Status carries a code and a human reason; Result<T> is a value or
// a Status. Invariant violations are not Statuses; they are checks.
#ifndef TESSERA_CORE_STATUS_H_
#define TESSERA_CORE_STATUS_H_

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kResourceExhausted,
  kTooLarge,          // the request or what it makes passes a size or work bound (HTTP 413)
  kConflict,          // a write based on a stale version
  kUnauthenticated,   // no or unknown credentials
  kPermissionDenied,  // known credentials, not allowed
  kUnavailable,       // a service behind this one (the store's etcd) cannot answer now (503)
  kInternal,
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status AlreadyExists(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
inline Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status ResourceExhausted(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
inline Status TooLarge(std::string m) { return Status(StatusCode::kTooLarge, std::move(m)); }
inline Status Conflict(std::string m) { return Status(StatusCode::kConflict, std::move(m)); }
inline Status Unauthenticated(std::string m) {
  return Status(StatusCode::kUnauthenticated, std::move(m));
}
inline Status PermissionDenied(std::string m) {
  return Status(StatusCode::kPermissionDenied, std::move(m));
}
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// A value of T, or the Status that explains why there is none. Accessing the value of an error
// Result is a programming error (checked by assert).
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessera

// Returns the Status of `expr` from the enclosing function when it is an error.
#define TESSERA_RETURN_IF_ERROR(expr)                              \
  do {                                                             \
    if (::tessera::Status _tessera_s = (expr); !_tessera_s.ok()) { \
      return _tessera_s;                                           \
    }                                                              \
  } while (0)

#endif  // TESSERA_CORE_STATUS_H_
