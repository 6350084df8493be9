#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "api/json_read.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

constexpr std::string_view kTokenKind = "Token";
constexpr std::string_view kAdminId = "admin";

std::string Hex(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

Result<std::string> Store(store::Store& store, const std::string& id, Principal::Role role,
                          const std::string& ns, const std::string& node,
                          const std::string& created, const std::string& job = "") {
  Result<std::string> secret = RandomHex(32);
  if (!secret.ok()) return secret.status();
  nlohmann::json body = {
      {"role", RoleName(role)}, {"namespace", ns}, {"sha256", Sha256Hex(*secret)}};
  if (!node.empty()) body["node"] = node;
  if (!job.empty()) body["job"] = job;
  if (!created.empty()) body["created"] = created;
  store::Write w{store::Write::Op::kCreate, {std::string(kTokenKind), "", id}, body.dump(), {}};
  if (auto r = store.Commit(std::span<const store::Write>(&w, 1)); !r.ok()) return r.status();
  return id + "." + *secret;
}

std::optional<Principal::Role> RoleOf(std::string_view name) {
  for (Principal::Role r :
       {Principal::Role::kAdmin, Principal::Role::kNamespace, Principal::Role::kAgent,
        Principal::Role::kJoin, Principal::Role::kMetrics, Principal::Role::kExec}) {
    if (RoleName(r) == name) return r;
  }
  return std::nullopt;
}

}  // namespace

std::string_view RoleName(Principal::Role r) {
  switch (r) {
    case Principal::Role::kAdmin:
      return "admin";
    case Principal::Role::kNamespace:
      return "namespace";
    case Principal::Role::kAgent:
      return "agent";
    case Principal::Role::kJoin:
      return "join";
    case Principal::Role::kMetrics:
      return "metrics";
    case Principal::Role::kExec:
      return "exec";
  }
  return "namespace";
}

Result<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n <= 0) return Internal("no randomness");
    got += static_cast<size_t>(n);
  }
  return Hex(buf.data(), bytes);
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  // Fetched once, and a context per thread reused: every request hashes its token's secret.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                                 &EVP_MD_CTX_free);
  const EVP_MD* md_type = sha256 != nullptr ? sha256 : EVP_sha256();
  if (ctx == nullptr || EVP_DigestInit_ex(ctx.get(), md_type, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md, &n) != 1) {
    EVP_Digest(data.data(), data.size(), md, &n, md_type, nullptr);
  }
  return Hex(md, n);
}

Result<std::optional<std::string>> TokenAuthority::EnsureAdmin() {
  auto existing = store_.Get({std::string(kTokenKind), "", std::string(kAdminId)});
  if (!existing.ok()) return existing.status();
  if (existing->has_value()) return std::optional<std::string>();
  Result<std::string> t = Store(store_, std::string(kAdminId), Principal::Role::kAdmin, "", "", "");
  if (!t.ok()) return t.status();
  return std::optional<std::string>(*t);
}

Result<std::string> TokenAuthority::Create(Principal::Role role, const std::string& ns,
                                           const std::string& node, const std::string& created,
                                           const std::string& job) {
  using Role = Principal::Role;
  Result<std::string> id = RandomHex(8);
  if (!id.ok()) return id.status();
  return Store(store_, *id, role, role == Role::kNamespace || role == Role::kExec ? ns : "",
               role == Role::kAgent ? node : "", created, role == Role::kExec ? job : "");
}

Result<std::vector<TokenInfo>> TokenAuthority::List() {
  auto stored = store_.List(kTokenKind, std::nullopt);
  if (!stored.ok()) return stored.status();
  std::vector<TokenInfo> out;
  for (const store::StoredObject& o : *stored) {
    const nlohmann::json body = nlohmann::json::parse(o.body, nullptr, false);
    if (!body.is_object()) continue;
    const auto role = RoleOf(Str(body, "role"));
    if (!role) continue;
    out.push_back({o.key.name, *role, Str(body, "namespace"), Str(body, "node"),
                   Str(body, "created"), Str(body, "job")});
  }
  return out;
}

Status TokenAuthority::Revoke(const std::string& id) {
  if (id == kAdminId) return FailedPrecondition("the admin token cannot be revoked");
  const store::ObjectKey key{std::string(kTokenKind), "", id};
  auto existing = store_.Get(key);
  if (!existing.ok()) return existing.status();
  if (!existing->has_value()) return NotFound("token " + id + " not found");
  store::Write w{store::Write::Op::kDelete, key, "", (*existing)->version};
  auto r = store_.Commit(std::span<const store::Write>(&w, 1));
  Forget(id);  // also when the commit failed: it may have landed
  if (!r.ok()) return r.status();
  return Status::Ok();
}

void TokenAuthority::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  verified_.erase(id);
  ++revocations_;
}

Result<bool> TokenAuthority::NodeHasAgent(const std::string& node) {
  auto tokens = List();
  if (!tokens.ok()) return tokens.status();
  for (const TokenInfo& t : *tokens) {
    if (t.role == Principal::Role::kAgent && t.node == node) return true;
  }
  return false;
}

Result<Principal> TokenAuthority::Authenticate(std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty()) return Unauthenticated("missing bearer token");
  if (authorization.substr(0, kBearer.size()) != kBearer) {
    return Unauthenticated("the Authorization header must be \"Bearer <token>\"");
  }
  const std::string_view token = authorization.substr(kBearer.size());
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 64) {
    return Unauthenticated("unknown token");
  }
  const std::string id(token.substr(0, dot));
  const std::string got = Sha256Hex(token.substr(dot + 1));
  auto matches = [&got](const std::string& want) {
    return want.size() == got.size() && CRYPTO_memcmp(want.data(), got.data(), got.size()) == 0;
  };
  uint64_t revocations = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto v = verified_.find(id); v != verified_.end()) {
      if (!matches(v->second.sha256)) return Unauthenticated("unknown token");
      return v->second.principal;
    }
    revocations = revocations_;
  }
  auto stored = store_.Get({std::string(kTokenKind), "", id});
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return Unauthenticated("unknown token");
  const nlohmann::json body = nlohmann::json::parse((*stored)->body, nullptr, false);
  if (!body.is_object()) return Internal("token record " + id + " is corrupt");
  const std::string want = body.value("sha256", "");
  if (!matches(want)) return Unauthenticated("unknown token");
  Principal p;
  const auto role = RoleOf(Str(body, "role"));
  if (!role) return Unauthenticated("unknown token");  // fail closed on a role not known here
  p.role = *role;
  p.ns = Str(body, "namespace");
  p.node = Str(body, "node");
  p.job = Str(body, "job");
  p.token_id = id;
  // A scoped token without its scope names nothing it may touch.
  if ((p.role == Principal::Role::kNamespace && p.ns.empty()) ||
      (p.role == Principal::Role::kAgent && p.node.empty()) ||
      (p.role == Principal::Role::kExec && (p.ns.empty() || p.job.empty()))) {
    return Unauthenticated("this token has no " +
                           std::string(p.role == Principal::Role::kAgent  ? "node"
                                       : p.role == Principal::Role::kExec ? "job"
                                                                          : "namespace") +
                           "; ask the admin for a new one");
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Bounded by the tokens stored; a store grown past this many is read for the rest.
  constexpr size_t kMaxVerified = 100'000;
  if (revocations == revocations_ && verified_.size() < kMaxVerified) {
    verified_.emplace(id, Verified{want, p});
  }
  return p;
}

}  // namespace tessera::server
