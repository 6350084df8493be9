// Bearer tokens: an admin token made at first start, namespace-scoped tokens, and join tokens
// for node agents. The store keeps only each token's SHA-256; the plaintext is shown once.
#ifndef TESSERA_SERVER_AUTH_H_
#define TESSERA_SERVER_AUTH_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "store/store.h"

namespace tessera::server {

// Who a token speaks for (docs/SECURITY.md has what each may do):
//   kAdmin      everything
//   kNamespace  one namespace's work, queues and logs
//   kAgent      one node: its Node, the Jobs bound to it, their pods' status and output
//   kJoin       only exchanges itself for a kAgent token of a node that has none yet
//   kMetrics    only reads /metrics
//   kExec       only runs commands (tessera exec) in the pods of one Job: an MPI launcher's
struct Principal {
  enum class Role : uint8_t { kAdmin, kNamespace, kAgent, kJoin, kMetrics, kExec };
  Role role = Role::kNamespace;
  std::string ns;    // kNamespace: the only namespace it may see and change
  std::string node;  // kAgent: the only node it acts for
  std::string job;   // kExec: the Job (in `ns`) as "<name>/<uid>": a Job made again is another
  std::string token_id;
};

std::string_view RoleName(Principal::Role r);

// A token as listed: never its secret.
struct TokenInfo {
  std::string id;
  Principal::Role role = Principal::Role::kNamespace;
  std::string ns;
  std::string node;
  std::string created;  // RFC 3339, "" for tokens made before it was recorded
  std::string job;      // kExec: "<name>/<uid>" in `ns`
};

class TokenAuthority {
 public:
  explicit TokenAuthority(store::Store& store) : store_(store) {}

  // Creates the admin token when there is none; returns its plaintext then, nullopt otherwise.
  Result<std::optional<std::string>> EnsureAdmin();
  // A new token ("<id>.<secret>", hex); `ns` only for kNamespace and kExec, `node` only for
  // kAgent, `job` only for kExec. `created` is recorded for listing.
  Result<std::string> Create(Principal::Role role, const std::string& ns,
                             const std::string& node = "", const std::string& created = "",
                             const std::string& job = "");
  // From an Authorization header: Unauthenticated when missing, malformed, unknown or revoked.
  // A token verified once is kept in memory (its secret's SHA-256 and what it speaks for) and
  // later requests bearing it read nothing from the store; Revoke forgets it. This assumes
  // that tokens are written only through this object: one server owns its store.
  Result<Principal> Authenticate(std::string_view authorization);

  // Every token, by id.
  Result<std::vector<TokenInfo>> List();
  // Deletes a token: requests bearing it fail from the next one on. The admin token stays.
  Status Revoke(const std::string& id);
  // Whether some agent token is bound to `node`.
  Result<bool> NodeHasAgent(const std::string& node);

 private:
  struct Verified {
    std::string sha256;  // of the secret, hex
    Principal principal;
  };
  // Erases `id` from the verified tokens and bars a lookup that read the store before.
  void Forget(const std::string& id);

  store::Store& store_;
  std::mutex mu_;
  std::unordered_map<std::string, Verified> verified_;  // by token id
  uint64_t revocations_ = 0;  // a lookup keeps what it read only if none came meanwhile
};

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);
// `bytes` random bytes from the kernel, as hex.
Result<std::string> RandomHex(size_t bytes);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_AUTH_H_
