// Small helpers over the SQLite C API shared by the store's databases.
#ifndef TESSERA_STORE_SQLITE_UTIL_H_
#define TESSERA_STORE_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::store {

// A prepared statement, reset for reuse after each run.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    status_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr);
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool prepared() const { return status_ == SQLITE_OK; }
  Statement& Bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(s_); }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t Int(int col) { return sqlite3_column_int64(s_, col); }
  std::string Text(int col) {
    const unsigned char* t = sqlite3_column_text(s_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s_, col)))
             : std::string();
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int status_ = SQLITE_ERROR;
};

// A cached statement in use: reset (bindings cleared, read locks released) when it goes.
class InUse {
 public:
  explicit InUse(Statement& s) : s_(s) {}
  ~InUse() { s_.Reset(); }
  InUse(const InUse&) = delete;
  InUse& operator=(const InUse&) = delete;
  Statement* operator->() { return &s_; }

 private:
  Statement& s_;
};

// Runs `sql` (one or more statements); Internal with SQLite's message on failure.
inline Status ExecSql(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    Status s = Internal(std::string("store: ") + (err ? err : "unknown error"));
    sqlite3_free(err);
    return s;
  }
  return Status::Ok();
}

}  // namespace tessera::store

#endif  // TESSERA_STORE_SQLITE_UTIL_H_
