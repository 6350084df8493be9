// The SQLite implementation of Store: one database file in WAL mode. Tables: objects (the
// current state), changes (the log watches read, compacted to the newest `retained_changes`),
// meta (the latest and the compacted revision).
#include <sqlite3.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "store/sqlite_util.h"
#include "store/store.h"

namespace tessera::store {

namespace {

constexpr const char* kGetSql =
    "SELECT version, body FROM objects WHERE kind=?1 AND ns=?2 AND name=?3";

class SqliteStore : public Store {
 public:
  SqliteStore(sqlite3* db, SqliteOptions options) : db_(db), options_(options) {}
  ~SqliteStore() override {
    cache_.clear();  // statements are finalized before the connection closes
    sqlite3_close(db_);
  }

  Status Init() {
    const std::string pragmas = std::string("PRAGMA journal_mode=WAL; PRAGMA synchronous=") +
                                (options_.fsync_every_commit ? "FULL" : "NORMAL") + ";";
    if (Status s = Exec(pragmas.c_str()); !s.ok()) return s;
    if (Status s =
            Exec("CREATE TABLE IF NOT EXISTS objects(kind TEXT NOT NULL, ns TEXT NOT NULL, "
                 "name TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, "
                 "PRIMARY KEY(kind, ns, name)) WITHOUT ROWID;"
                 "CREATE TABLE IF NOT EXISTS changes(revision INTEGER PRIMARY KEY, "
                 "type INTEGER NOT NULL, kind TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL, "
                 "body TEXT NOT NULL);"
                 "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                 "INSERT OR IGNORE INTO meta VALUES('revision', 0), ('compacted', 0);");
        !s.ok()) {
      return s;
    }
    Statement q(db_, "SELECT key, value FROM meta");
    while (q.Step() == SQLITE_ROW) {
      (q.Text(0) == "revision" ? revision_ : compacted_) = q.Int(1);
    }
    return Status::Ok();
  }

  Result<std::vector<int64_t>> Commit(std::span<const Write> writes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (writes.empty()) return std::vector<int64_t>{};
    if (Status s = Run("BEGIN IMMEDIATE"); !s.ok()) return s;
    const int64_t before = revision_;
    Result<std::vector<int64_t>> r = CommitLocked(writes);
    if (r.ok()) {
      if (Status s = SetMeta("revision", revision_); !s.ok()) r = s;
    }
    if (r.ok()) {
      if (Status s = Run("COMMIT"); !s.ok()) r = s;
    }
    if (!r.ok()) {
      (void)Run("ROLLBACK");
      revision_ = before;
      return r;
    }
    Compact();
    return r;
  }

  Result<std::optional<StoredObject>> Get(const ObjectKey& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    InUse q(Prepared(kGetSql));
    q->Bind(1, key.kind).Bind(2, key.ns).Bind(3, key.name);
    const int rc = q->Step();
    if (rc == SQLITE_DONE) return std::optional<StoredObject>();
    if (rc != SQLITE_ROW) return Error("get");
    return std::optional<StoredObject>(StoredObject{key, q->Int(0), q->Text(1)});
  }

  Result<std::vector<StoredObject>> List(std::string_view kind,
                                         std::optional<std::string_view> ns) override {
    std::lock_guard<std::mutex> lock(mu_);
    Statement q(db_, ns ? "SELECT ns, name, version, body FROM objects WHERE kind=?1 AND ns=?2 "
                          "ORDER BY ns, name"
                        : "SELECT ns, name, version, body FROM objects WHERE kind=?1 "
                          "ORDER BY ns, name");
    q.Bind(1, kind);
    if (ns) q.Bind(2, *ns);
    std::vector<StoredObject> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      out.push_back({{std::string(kind), q.Text(0), q.Text(1)}, q.Int(2), q.Text(3)});
    }
    if (rc != SQLITE_DONE) return Error("list");
    return out;
  }

  Result<std::vector<Change>> ChangesAfter(int64_t after, size_t limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (after < compacted_) {
      return FailedPrecondition("resource version " + std::to_string(after) +
                                " is too old: changes up to " + std::to_string(compacted_) +
                                " were compacted; list again");
    }
    InUse q(
        Prepared("SELECT revision, type, kind, ns, name, body FROM changes WHERE revision > ?1 "
                 "ORDER BY revision LIMIT ?2"));
    q->Bind(1, after).Bind(2, static_cast<int64_t>(limit));
    std::vector<Change> out;
    int rc;
    while ((rc = q->Step()) == SQLITE_ROW) {
      Change& c = out.emplace_back();
      c.revision = q->Int(0);
      c.type = static_cast<ChangeType>(q->Int(1));
      c.object = {{q->Text(2), q->Text(3), q->Text(4)}, c.revision, q->Text(5)};
    }
    if (rc != SQLITE_DONE) return Error("changes");
    return out;
  }

  int64_t Revision() override {
    std::lock_guard<std::mutex> lock(mu_);
    return revision_;
  }

 private:
  // The statement for `sql` (a string literal: cached by address), prepared on first use.
  Statement& Prepared(const char* sql) {
    std::unique_ptr<Statement>& s = cache_[sql];
    if (!s) s = std::make_unique<Statement>(db_, sql);
    return *s;
  }

  Status Error(std::string_view what) const {
    return Internal("store " + std::string(what) + ": " + sqlite3_errmsg(db_));
  }

  Status Exec(const char* sql) { return ExecSql(db_, sql); }
  // One statement without results (BEGIN, COMMIT...), prepared once.
  Status Run(const char* sql) {
    InUse q(Prepared(sql));
    return q->Step() == SQLITE_DONE ? Status::Ok() : Error(sql);
  }

  Status SetMeta(const char* key, int64_t value) {
    InUse q(Prepared("UPDATE meta SET value=?2 WHERE key=?1"));
    q->Bind(1, key).Bind(2, value);
    return q->Step() == SQLITE_DONE ? Status::Ok() : Error("meta");
  }

  Result<std::vector<int64_t>> CommitLocked(std::span<const Write> writes) {
    Statement& get = Prepared(kGetSql);
    Statement& put = Prepared("INSERT OR REPLACE INTO objects VALUES(?1, ?2, ?3, ?4, ?5)");
    Statement& del = Prepared("DELETE FROM objects WHERE kind=?1 AND ns=?2 AND name=?3");
    Statement& log = Prepared("INSERT INTO changes VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    if (!get.prepared() || !put.prepared() || !del.prepared() || !log.prepared()) {
      return Error("prepare");
    }
    // Each is reset again below before reuse; reset on the way out, however it is left.
    InUse g(get), p(put), d(del), l(log);
    std::vector<int64_t> revisions;
    for (const Write& w : writes) {
      get.Reset();
      get.Bind(1, w.key.kind).Bind(2, w.key.ns).Bind(3, w.key.name);
      const int rc = get.Step();
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("read");
      const bool exists = rc == SQLITE_ROW;
      const int64_t current = exists ? get.Int(0) : 0;
      const std::string body = exists ? get.Text(1) : std::string();
      TESSERA_RETURN_IF_ERROR(CheckWrite(w, exists, current));
      if (w.op == Write::Op::kPut && exists && body == w.body) {
        revisions.push_back(current);
        continue;
      }
      const int64_t rev = ++revision_;
      ChangeType type = exists ? ChangeType::kModified : ChangeType::kAdded;
      if (w.op == Write::Op::kDelete) {
        type = ChangeType::kDeleted;
        del.Reset();
        del.Bind(1, w.key.kind).Bind(2, w.key.ns).Bind(3, w.key.name);
        if (del.Step() != SQLITE_DONE) return Error("delete");
      } else {
        put.Reset();
        put.Bind(1, w.key.kind).Bind(2, w.key.ns).Bind(3, w.key.name).Bind(4, rev).Bind(5, w.body);
        if (put.Step() != SQLITE_DONE) return Error("write");
      }
      log.Reset();
      log.Bind(1, rev)
          .Bind(2, static_cast<int64_t>(type))
          .Bind(3, w.key.kind)
          .Bind(4, w.key.ns)
          .Bind(5, w.key.name)
          .Bind(6, w.op == Write::Op::kDelete ? body : w.body);
      if (log.Step() != SQLITE_DONE) return Error("log");
      revisions.push_back(rev);
    }
    return revisions;
  }

  // Drops changes beyond the retained window, in batches of 1,000 revisions. A failure leaves
  // more history than needed, never less.
  void Compact() {
    const int64_t floor = revision_ - options_.retained_changes;
    if (floor < compacted_ + 1000) return;
    if (!Run("BEGIN IMMEDIATE").ok()) return;
    Statement q(db_, "DELETE FROM changes WHERE revision <= ?1");
    q.Bind(1, floor);
    if (q.Step() == SQLITE_DONE && SetMeta("compacted", floor).ok() && Run("COMMIT").ok()) {
      compacted_ = floor;
      return;
    }
    (void)Run("ROLLBACK");
  }

  sqlite3* db_;
  SqliteOptions options_;
  std::unordered_map<const char*, std::unique_ptr<Statement>> cache_;
  std::mutex mu_;
  int64_t revision_ = 0;
  int64_t compacted_ = 0;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path, SqliteOptions options) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Internal("cannot open store " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  auto store = std::make_unique<SqliteStore>(db, options);
  if (Status s = store->Init(); !s.ok()) return s;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace tessera::store
