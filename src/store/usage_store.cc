#include "store/usage_store.h"

#include "store/sqlite_util.h"

namespace tessera::store {

namespace {

constexpr const char* kColumns =
    "id, kind, key, ns, queue, job, pod, model, gpu_milli, start_ms, end_ms";

class SqliteUsageStore : public UsageStore {
 public:
  explicit SqliteUsageStore(sqlite3* db) : db_(db) {}
  ~SqliteUsageStore() override { sqlite3_close(db_); }

  Status Init() {
    return ExecSql(db_,
                   "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                   "CREATE TABLE IF NOT EXISTS segments(id INTEGER PRIMARY KEY, "
                   "kind INTEGER NOT NULL, key TEXT NOT NULL, ns TEXT NOT NULL, "
                   "queue TEXT NOT NULL, job TEXT NOT NULL, pod TEXT NOT NULL, "
                   "model TEXT NOT NULL, gpu_milli INTEGER NOT NULL, start_ms INTEGER NOT NULL, "
                   "end_ms INTEGER NOT NULL);"
                   "CREATE INDEX IF NOT EXISTS segments_end ON segments(end_ms);");
  }

  Result<std::vector<core::UsageSegment>> LoadOpen() override {
    return Select(std::string("SELECT ") + kColumns + " FROM segments WHERE end_ms < 0 ORDER BY id",
                  [](Statement&) {});
  }

  // One process alone writes this ledger: there is no election, and `fence` holds.
  Status Apply(std::vector<core::UsageSegment>* opened,
               std::span<const std::pair<int64_t, int64_t>> closed, const Fence*) override {
    if (opened->empty() && closed.empty()) return Status::Ok();
    TESSERA_RETURN_IF_ERROR(ExecSql(db_, "BEGIN IMMEDIATE"));
    Status s = ApplyLocked(opened, closed);
    if (s.ok()) s = ExecSql(db_, "COMMIT");
    if (!s.ok()) {
      (void)ExecSql(db_, "ROLLBACK");
      for (core::UsageSegment& seg : *opened) seg.id = 0;
    }
    return s;
  }

  Result<std::vector<core::UsageSegment>> Overlapping(int64_t since_ms, int64_t until_ms,
                                                      std::optional<std::string_view> ns) override {
    std::string sql = std::string("SELECT ") + kColumns +
                      " FROM segments WHERE start_ms < ?1 AND (end_ms < 0 OR end_ms > ?2)";
    if (ns) sql += " AND ns = ?3";
    sql += " ORDER BY id";
    return Select(sql, [&](Statement& q) {
      q.Bind(1, until_ms).Bind(2, since_ms);
      if (ns) q.Bind(3, *ns);
    });
  }

 private:
  Status ApplyLocked(std::vector<core::UsageSegment>* opened,
                     std::span<const std::pair<int64_t, int64_t>> closed) {
    Statement ins(db_,
                  "INSERT INTO segments(kind, key, ns, queue, job, pod, model, gpu_milli, "
                  "start_ms, end_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    Statement upd(db_, "UPDATE segments SET end_ms = ?2 WHERE id = ?1");
    if (!ins.prepared() || !upd.prepared()) return Internal(Error("prepare"));
    for (core::UsageSegment& s : *opened) {
      ins.Bind(1, static_cast<int64_t>(s.kind)).Bind(2, s.key).Bind(3, s.ns).Bind(4, s.queue);
      ins.Bind(5, s.job).Bind(6, s.pod).Bind(7, s.model).Bind(8, s.gpu_milli);
      ins.Bind(9, s.start_ms).Bind(10, s.end_ms);
      const int rc = ins.Step();
      ins.Reset();
      if (rc != SQLITE_DONE) return Internal(Error("insert"));
      s.id = sqlite3_last_insert_rowid(db_);
    }
    for (const auto& [id, end] : closed) {
      upd.Bind(1, id).Bind(2, end);
      const int rc = upd.Step();
      upd.Reset();
      if (rc != SQLITE_DONE) return Internal(Error("update"));
    }
    return Status::Ok();
  }

  template <typename BindFn>
  Result<std::vector<core::UsageSegment>> Select(const std::string& sql, BindFn bind) {
    Statement q(db_, sql.c_str());
    if (!q.prepared()) return Internal(Error("prepare"));
    bind(q);
    std::vector<core::UsageSegment> out;
    int rc;
    while ((rc = q.Step()) == SQLITE_ROW) {
      core::UsageSegment s;
      s.id = q.Int(0);
      s.kind = q.Int(1) == 1 ? core::SegmentKind::kIdle : core::SegmentKind::kHeld;
      s.key = q.Text(2);
      s.ns = q.Text(3);
      s.queue = q.Text(4);
      s.job = q.Text(5);
      s.pod = q.Text(6);
      s.model = q.Text(7);
      s.gpu_milli = q.Int(8);
      s.start_ms = q.Int(9);
      s.end_ms = q.Int(10);
      out.push_back(std::move(s));
    }
    if (rc != SQLITE_DONE) return Internal(Error("select"));
    return out;
  }

  std::string Error(const char* what) {
    return std::string("usage ledger: ") + what + ": " + sqlite3_errmsg(db_);
  }

  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<UsageStore>> UsageStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Internal("cannot open usage ledger " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  auto store = std::make_unique<SqliteUsageStore>(db);
  TESSERA_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<UsageStore>(std::move(store));
}

}  // namespace tessera::store
