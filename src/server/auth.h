// Bearer tokens: an admin token made at first start, namespace-scoped tokens, and join tokens
// for node agents. The store keeps only each token's SHA-256; the plaintext is shown once.
#ifndef TESSERA_SERVER_AUTH_H_
#define TESSERA_SERVER_AUTH_H_

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "store/store.h"

namespace tessera::server {

struct Principal {
  enum class Role : uint8_t { kAdmin, kNamespace, kAgent };
  Role role = Role::kNamespace;
  std::string ns;  // kNamespace: the only namespace it may see and change
  std::string token_id;
};

class TokenAuthority {
 public:
  explicit TokenAuthority(store::Store& store) : store_(store) {}

  // Creates the admin token when there is none; returns its plaintext then, nullopt otherwise.
  Result<std::optional<std::string>> EnsureAdmin();
  // A new token ("<id>.<secret>", hex); `ns` only for kNamespace.
  Result<std::string> Create(Principal::Role role, const std::string& ns);
  // From an Authorization header: Unauthenticated when missing, malformed or unknown.
  Result<Principal> Authenticate(std::string_view authorization);

 private:
  store::Store& store_;
};

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_AUTH_H_
