// The SQLite implementation of Store: one database file in WAL mode. Tables: objects (the
// current state), changes (the log watches and reads at a revision use, compacted to the newest
// `retained_changes` and, of older ones, each object's last when it changed since), meta (the
// latest and the compacted revision, and `history`: the revision from which the log holds what
// reads at a revision need; a database written before the log kept it starts there).
#include <sqlite3.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
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
    bool history_known = false;
    {
      Statement q(db_, "SELECT key, value FROM meta");
      while (q.Step() == SQLITE_ROW) {
        const std::string key = q.Text(0);
        if (key == "revision") revision_ = q.Int(1);
        if (key == "compacted") compacted_ = q.Int(1);
        if (key == "history") {
          history_ = q.Int(1);
          history_known = true;
        }
      }
    }
    if (!history_known) {
      // Nothing compacted yet: the log is whole. Otherwise an earlier compaction may have
      // dropped what reads before now would need.
      history_ = compacted_ == 0 ? 0 : revision_;
      Statement q(db_, "INSERT INTO meta VALUES('history', ?1)");
      q.Bind(1, history_);
      if (q.Step() != SQLITE_DONE) return Error("meta");
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
    const int64_t floor = revision_ - options_.retained_changes;
    if (floor >= compacted_ + 1000) CompactLocked(floor);
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
    return ListLocked(kind, ns);
  }

  Result<std::vector<std::string>> ListKinds() override {
    std::lock_guard<std::mutex> lock(mu_);
    InUse q(Prepared("SELECT DISTINCT kind FROM objects ORDER BY kind"));
    std::vector<std::string> out;
    int rc;
    while ((rc = q->Step()) == SQLITE_ROW) out.push_back(q->Text(0));
    if (rc != SQLITE_DONE) return Error("list kinds");
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

  Result<std::vector<StoredObject>> ListAt(std::string_view kind,
                                           std::optional<std::string_view> ns,
                                           int64_t revision) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(CheckReadAt(revision, std::max(compacted_, history_), revision_));
    auto current = ListLocked(kind, ns);
    if (!current.ok()) return current.status();
    int rc;
    // Of the objects changed since: their last change at or before the revision.
    // Of the objects changed since (read by the primary key: few), their last change at or
    // before the revision, found walking the log back from it until each is found (an index by
    // object would find them at once, at a cost to every commit).
    std::set<std::pair<std::string, std::string>> wanted;
    Statement k(db_,
                "SELECT DISTINCT ns, name FROM changes WHERE revision > ?2 AND kind=?1 "
                "AND (?3 IS NULL OR ns=?3)");
    k.Bind(1, kind).Bind(2, revision);
    if (ns) k.Bind(3, *ns);
    while ((rc = k.Step()) == SQLITE_ROW) wanted.emplace(k.Text(0), k.Text(1));
    if (rc != SQLITE_DONE) return Error("list at");
    std::vector<Change> before;
    Statement back(db_,
                   "SELECT revision, type, ns, name FROM changes WHERE revision <= ?2 AND kind=?1 "
                   "ORDER BY revision DESC");
    back.Bind(1, kind).Bind(2, revision);
    while (!wanted.empty() && (rc = back.Step()) == SQLITE_ROW) {
      if (wanted.erase({back.Text(2), back.Text(3)}) == 0) continue;
      Change& c = before.emplace_back();
      c.revision = back.Int(0);
      c.type = static_cast<ChangeType>(back.Int(1));
      c.object = {{std::string(kind), back.Text(2), back.Text(3)}, c.revision, ""};
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return Error("list at");
    Statement body(db_, "SELECT body FROM changes WHERE revision=?1");
    for (Change& c : before) {
      if (c.type == ChangeType::kDeleted) continue;
      body.Reset();
      body.Bind(1, c.revision);
      if (body.Step() != SQLITE_ROW) return Error("list at");
      c.object.body = body.Text(0);
    }
    return StateAt(std::move(current).value(), before, revision);
  }

  Result<std::optional<StoredObject>> GetAt(const ObjectKey& key, int64_t revision) override {
    std::lock_guard<std::mutex> lock(mu_);
    TESSERA_RETURN_IF_ERROR(CheckReadAt(revision, std::max(compacted_, history_), revision_));
    InUse q(Prepared(kGetSql));
    q->Bind(1, key.kind).Bind(2, key.ns).Bind(3, key.name);
    int rc = q->Step();
    if (rc == SQLITE_ROW && q->Int(0) <= revision) {
      return std::optional<StoredObject>(StoredObject{key, q->Int(0), q->Text(1)});
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("get");
    // Changed since (or gone, or made since): its last change at or before the revision.
    Statement b(db_,
                "SELECT revision, type, body FROM changes WHERE kind=?1 AND ns=?2 AND name=?3 "
                "AND revision <= ?4 ORDER BY revision DESC LIMIT 1");
    b.Bind(1, key.kind).Bind(2, key.ns).Bind(3, key.name).Bind(4, revision);
    rc = b.Step();
    if (rc == SQLITE_DONE ||
        (rc == SQLITE_ROW && static_cast<ChangeType>(b.Int(1)) == ChangeType::kDeleted)) {
      return std::optional<StoredObject>();
    }
    if (rc != SQLITE_ROW) return Error("get at");
    return std::optional<StoredObject>(StoredObject{key, b.Int(0), b.Text(2)});
  }

  Status Compact(int64_t revision) override {
    std::lock_guard<std::mutex> lock(mu_);
    revision = std::min(revision, revision_);
    if (revision <= compacted_) return Status::Ok();
    return CompactLocked(revision);
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

  // The objects of `kind` now (only namespace `ns` when given), by namespace and name (mu_
  // held).
  Result<std::vector<StoredObject>> ListLocked(std::string_view kind,
                                               std::optional<std::string_view> ns) {
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

  // Drops the changes up to `revision` but each object's last, when it changed since (reads
  // after `revision` need it). On its own, the store compacts beyond the retained window in
  // batches of 1,000 revisions. A failure leaves more history than needed, never less.
  Status CompactLocked(int64_t revision) {
    if (Status s = Run("BEGIN IMMEDIATE"); !s.ok()) return s;
    Statement q(
        db_,
        "DELETE FROM changes WHERE revision <= ?1 AND revision NOT IN "
        "(SELECT MAX(revision) FROM changes WHERE revision <= ?1 AND (kind, ns, name) IN "
        "(SELECT kind, ns, name FROM changes WHERE revision > ?1) GROUP BY kind, ns, name)");
    q.Bind(1, revision);
    if (q.Step() == SQLITE_DONE && SetMeta("compacted", revision).ok() && Run("COMMIT").ok()) {
      compacted_ = revision;
      return Status::Ok();
    }
    Status failed = Error("compact");
    (void)Run("ROLLBACK");
    return failed;
  }

  sqlite3* db_;
  SqliteOptions options_;
  std::unordered_map<const char*, std::unique_ptr<Statement>> cache_;
  std::mutex mu_;
  int64_t revision_ = 0;
  int64_t compacted_ = 0;
  int64_t history_ = 0;
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
