#include "cli/store_cmd.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "server/files.h"
#include "store/etcd_module.h"
#include "store/store.h"

namespace tessera::cli {

CLI::App* AddStoreCommand(CLI::App& app, StoreCopyOptions& o, CLI::App** copy,
                          StoreStatusOptions& s, CLI::App** status) {
  CLI::App* store = app.add_subcommand("store", "The control plane's state store");
  store->require_subcommand(1);
  *copy = store->add_subcommand(
      "copy", "Copy a stopped server's state (SQLite) to etcd, where replicas share it");
  (*copy)
      ->add_option("--from", o.from, "The server's data directory (sqlite:DIR or DIR)")
      ->required();
  (*copy)
      ->add_option("--to", o.to, "etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS)")
      ->required();
  (*copy)->add_option("--etcd-ca-file", o.etcd_ca_file,
                      "PEM CA bundle that verifies etcd's members");
  (*copy)->add_option("--etcd-cert-file", o.etcd_cert_file, "PEM client certificate for etcd");
  (*copy)->add_option("--etcd-key-file", o.etcd_key_file, "The client certificate's key (PEM)");
  *status = store->add_subcommand(
      "status", "The replicas on etcd (leader, watch lag) and etcd's members (size, quota)");
  (*status)
      ->add_option("--store", s.store,
                   "etcd://HOST:PORT[,HOST:PORT...][/PREFIX] (etcds:// for TLS)")
      ->required();
  (*status)->add_option("--etcd-ca-file", s.etcd_ca_file,
                        "PEM CA bundle that verifies etcd's members");
  (*status)->add_option("--etcd-cert-file", s.etcd_cert_file, "PEM client certificate for etcd");
  (*status)->add_option("--etcd-key-file", s.etcd_key_file, "The client certificate's key (PEM)");
  (*status)
      ->add_option("--quota-bytes", s.quota_bytes,
                   "etcd's --quota-backend-bytes, to compare its database with")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  (*status)->add_option("-o,--output", s.output, "json for JSON")->check(CLI::IsMember({"json"}));
  return store;
}

namespace {

// The objects of `kind` in both stores, compared by key and body.
Status Same(store::Store& from, store::Store& to, const std::string& kind, size_t* count) {
  auto a = from.List(kind, std::nullopt);
  if (!a.ok()) return a.status();
  auto b = to.List(kind, std::nullopt);
  if (!b.ok()) return b.status();
  std::map<store::ObjectKey, const std::string*> copied;
  for (const store::StoredObject& o : *b) copied[o.key] = &o.body;
  for (const store::StoredObject& o : *a) {
    auto it = copied.find(o.key);
    if (it == copied.end() || *it->second != o.body) {
      return Internal("the copy of " + store::Describe(o.key) + " differs from the original");
    }
  }
  if (a->size() != b->size())
    return Internal(kind + ": the copy holds objects the original does not");
  *count = a->size();
  return Status::Ok();
}

// Every segment of a ledger, open and closed, by id.
Result<std::vector<core::UsageSegment>> AllSegments(store::UsageStore& ledger) {
  return ledger.Overlapping(std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max(), std::nullopt);
}

// The accounting ledger (usage.db) into etcd's, which must be empty: every segment, open or
// closed (ids are the new ledger's), checked against the original.
Status CopyLedger(const std::string& path, const store::EtcdOptions& etcd, std::ostream& out) {
  if (!std::filesystem::exists(path)) {
    out << "usage segments: 0 (no ledger at " << path << ")\n";
    return Status::Ok();
  }
  auto from = store::UsageStore::Open(path);
  if (!from.ok()) return from.status();
  auto module = store::LoadEtcdModule();
  if (!module.ok()) return module.status();
  auto to = (*module)->open_usage_store(etcd);
  if (!to.ok()) return to.status();
  auto there = AllSegments(**to);
  if (!there.ok()) return there.status();
  if (!there->empty()) {
    return FailedPrecondition("--to: " + etcd.prefix + " holds a usage ledger already (" +
                              std::to_string(there->size()) + " segments)");
  }
  auto segments = AllSegments(**from);
  if (!segments.ok()) return segments.status();
  TESSERA_RETURN_IF_ERROR((*to)->Apply(&*segments, {}));
  auto copied = AllSegments(**to);
  if (!copied.ok()) return copied.status();
  auto key = [](const core::UsageSegment& s) {
    return std::tie(s.key, s.kind, s.ns, s.queue, s.job, s.pod, s.model, s.gpu_milli, s.start_ms,
                    s.end_ms);
  };
  auto by_content = [&](const core::UsageSegment& a, const core::UsageSegment& b) {
    return key(a) < key(b);
  };
  std::sort(segments->begin(), segments->end(), by_content);
  std::sort(copied->begin(), copied->end(), by_content);
  if (!std::equal(segments->begin(), segments->end(), copied->begin(), copied->end(),
                  [&](const auto& a, const auto& b) { return key(a) == key(b); })) {
    return Internal("the copy of the usage ledger differs from the original");
  }
  const auto open = std::count_if(segments->begin(), segments->end(),
                                  [](const core::UsageSegment& s) { return s.open(); });
  out << "usage segments: " << segments->size() << " (" << open << " open), from " << path
      << ", checked against the original\n";
  return Status::Ok();
}

Status Copy(const StoreCopyOptions& o, std::ostream& out) {
  std::string dir = o.from;
  if (dir.starts_with("sqlite:")) dir = dir.substr(7);
  const std::string db = dir + "/state.db";
  if (!std::filesystem::exists(db)) return InvalidArgument("--from: no state database at " + db);
  // The server must be stopped: it holds the directory while it runs.
  auto owner = server::DirLock::Acquire(dir);
  if (!owner.ok()) return FailedPrecondition("--from: " + owner.status().message());
  auto from = store::OpenSqliteStore(db);
  if (!from.ok()) return from.status();
  auto etcd = store::ParseEtcdUrl(o.to);
  if (!etcd.ok()) return InvalidArgument("--to: " + etcd.status().message());
  etcd->ca_file = o.etcd_ca_file;
  etcd->cert_file = o.etcd_cert_file;
  etcd->key_file = o.etcd_key_file;
  auto module = store::LoadEtcdModule();
  if (!module.ok()) return module.status();
  auto to = (*module)->open_store({.etcd = *etcd});
  if (!to.ok()) return to.status();
  auto there = (*to)->ListKinds();
  if (!there.ok()) return there.status();
  if (!there->empty()) {
    return FailedPrecondition("--to: " + etcd->prefix + " holds objects already (" + (*there)[0] +
                              "...): copy into an empty prefix");
  }
  auto kinds = (*from)->ListKinds();
  if (!kinds.ok()) return kinds.status();
  size_t total = 0;
  for (const std::string& kind : *kinds) {
    auto objects = (*from)->List(kind, std::nullopt);
    if (!objects.ok()) return objects.status();
    // Within etcd's limits per transaction: at most 100 keys and about 1 MiB.
    std::vector<store::Write> batch;
    size_t bytes = 0;
    auto flush = [&]() -> Status {
      if (batch.empty()) return Status::Ok();
      auto r = (*to)->Commit(batch);
      batch.clear();
      bytes = 0;
      return r.ok() ? Status::Ok() : r.status();
    };
    for (store::StoredObject& obj : *objects) {
      if (batch.size() >= 100 || bytes + obj.body.size() > (1 << 20)) {
        TESSERA_RETURN_IF_ERROR(flush());
      }
      bytes += obj.body.size();
      batch.push_back({store::Write::Op::kCreate, std::move(obj.key), std::move(obj.body), {}});
    }
    TESSERA_RETURN_IF_ERROR(flush());
    size_t n = 0;
    TESSERA_RETURN_IF_ERROR(Same(**from, **to, kind, &n));
    out << kind << ": " << n << "\n";
    total += n;
  }
  out << "copied " << total << " objects of " << kinds->size() << " kinds from " << db << " to "
      << o.to << ", each checked against the original\n";
  TESSERA_RETURN_IF_ERROR(CopyLedger(dir + "/usage.db", *etcd, out));
  out << "tokens were copied: admin.token works on every replica\n";
  return Status::Ok();
}

}  // namespace

Result<nlohmann::json> StoreStatus(const StoreStatusOptions& o) {
  using nlohmann::json;
  auto etcd = store::ParseEtcdUrl(o.store);
  if (!etcd.ok()) return etcd.status();
  etcd->ca_file = o.etcd_ca_file;
  etcd->cert_file = o.etcd_cert_file;
  etcd->key_file = o.etcd_key_file;
  auto module = store::LoadEtcdModule();
  if (!module.ok()) return module.status();
  std::unique_ptr<store::EtcdCaller> client = (*module)->open_caller(*etcd);
  json out = {{"store", o.store}, {"quotaBytes", o.quota_bytes}};
  // The leader, and each replica's record (store/etcd_election.h), in one read at one revision.
  const std::string replicas = store::EtcdReplicasPrefix(*etcd);
  auto read = client->Call(
      "kv/txn",
      {{"success",
        {{{"request_range", {{"key", store::Base64(store::EtcdElectionKey(*etcd, "scheduler"))}}}},
         {{"request_range",
           {{"key", store::Base64(replicas)},
            {"range_end", store::Base64(store::PrefixEnd(replicas))}}}}}}});
  if (!read.ok()) return read.status();
  const int64_t revision = store::EtcdInt((*read)["header"], "revision");
  out["revision"] = revision;
  const json& responses = read->value("responses", json::array());
  auto text = [](const json& kv, const char* field) {
    auto bytes = store::Unbase64(kv.value(field, ""));
    return bytes.ok() ? *bytes : std::string();
  };
  auto kvs = [&](size_t i) {
    return i < responses.size()
               ? responses[i].value("response_range", json::object()).value("kvs", json::array())
               : json::array();
  };
  out["leader"] = "";
  for (const json& kv : kvs(0)) out["leader"] = text(kv, "value");
  out["replicas"] = json::array();
  for (const json& kv : kvs(1)) {
    const std::string id = text(kv, "key").substr(replicas.size());
    json r = json::parse(text(kv, "value"), nullptr, false);
    if (!r.is_object()) r = json::object();
    r["id"] = id;
    // Behind etcd's revision as of its last report (each renewal: a few seconds at most).
    r["lag"] = std::max<int64_t>(0, revision - r.value("revision", int64_t{0}));
    out["replicas"].push_back(std::move(r));
  }
  // Each member, asked on its own.
  out["members"] = json::array();
  for (const std::string& endpoint : etcd->endpoints) {
    store::EtcdOptions one = *etcd;
    one.endpoints = {endpoint};
    std::unique_ptr<store::EtcdCaller> member = (*module)->open_caller(one);
    json m = {{"endpoint", endpoint}};
    auto st = member->Call("maintenance/status", json::object());
    if (!st.ok()) {
      m["error"] = st.status().message();
    } else {
      m["version"] = st->value("version", "");
      m["dbSize"] = store::EtcdInt(*st, "dbSize");
      m["dbSizeInUse"] = store::EtcdInt(*st, "dbSizeInUse");
      // Member IDs are unsigned 64-bit, often past int64's range: compared as protobuf's JSON
      // writes them (strings of digits).
      const json header = st->value("header", json::object());
      m["isLeader"] = st->contains("leader") && header.contains("member_id") &&
                      (*st)["leader"] == header["member_id"];
      m["quotaUsedPercent"] = 100.0 * static_cast<double>(store::EtcdInt(*st, "dbSize")) /
                              static_cast<double>(o.quota_bytes);
    }
    out["members"].push_back(std::move(m));
  }
  auto alarms = client->Call("maintenance/alarm", {{"action", "GET"}});
  out["alarms"] = json::array();
  if (alarms.ok()) {
    for (const json& a : alarms->value("alarms", json::array())) {
      out["alarms"].push_back(a.value("alarm", "NONE"));
    }
  }
  return out;
}

int RunStoreStatus(const StoreStatusOptions& o, std::ostream& out, std::ostream& err) {
  auto status = StoreStatus(o);
  if (!status.ok()) {
    err << "error: " << status.status().message() << "\n";
    return status.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const nlohmann::json& s = *status;
  if (o.output == "json") {
    out << s.dump(2) << "\n";
    return 0;
  }
  const std::string leader = s["leader"].get<std::string>();
  out << "etcd revision " << s["revision"].get<int64_t>()
      << ", scheduler leader: " << (leader.empty() ? "none" : leader) << "\n\n";
  out << "REPLICA                        ADDRESS                LEADER  WATCH-REVISION  LAG  "
         "REPORTED\n";
  for (const auto& r : s["replicas"]) {
    char line[512];
    std::snprintf(line, sizeof line, "%-30s %-22s %-7s %-15lld %-4lld %s\n",
                  r.value("id", "").c_str(), r.value("address", "").c_str(),
                  r.value("leader", false) ? "yes" : "no",
                  static_cast<long long>(r.value("revision", int64_t{0})),
                  static_cast<long long>(r.value("lag", int64_t{0})), r.value("at", "").c_str());
    out << line;
  }
  out << "\nMEMBER                 VERSION  LEADER  DB-SIZE      IN-USE       QUOTA-USED\n";
  for (const auto& m : s["members"]) {
    char line[512];
    if (m.contains("error")) {
      std::snprintf(line, sizeof line, "%-22s unreachable: %s\n", m.value("endpoint", "").c_str(),
                    m.value("error", "").c_str());
    } else {
      std::snprintf(line, sizeof line, "%-22s %-8s %-7s %-12lld %-12lld %.1f%% of %lld\n",
                    m.value("endpoint", "").c_str(), m.value("version", "").c_str(),
                    m.value("isLeader", false) ? "yes" : "no",
                    static_cast<long long>(m.value("dbSize", int64_t{0})),
                    static_cast<long long>(m.value("dbSizeInUse", int64_t{0})),
                    m.value("quotaUsedPercent", 0.0),
                    static_cast<long long>(s["quotaBytes"].get<int64_t>()));
    }
    out << line;
  }
  out << "\nalarms: " << (s["alarms"].empty() ? std::string("none") : s["alarms"].dump()) << "\n";
  return 0;
}

int RunStoreCopy(const StoreCopyOptions& o, std::ostream& out, std::ostream& err) {
  Status s = Copy(o, out);
  if (s.ok()) return 0;
  err << "error: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace tessera::cli
