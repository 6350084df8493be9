#include "server/fairness.h"

#include <cstdint>

namespace tessera::server {

size_t& FairnessBook::Count(Counts& c, What what) {
  switch (what) {
    case What::kConnection:
      return c.connections;
    case What::kWatch:
      return c.watches;
    case What::kRequest:
      break;
  }
  return c.requests;
}

size_t FairnessBook::ClientLimit(What what, ClientId::Level level) const {
  if (level == ClientId::Level::kAgent) {
    return what == What::kConnection ? limits_.connections_per_agent
           : what == What::kWatch    ? limits_.watches_per_agent
                                     : limits_.requests_per_agent;
  }
  switch (what) {
    case What::kConnection:
      return limits_.connections_per_client;
    case What::kWatch:
      return limits_.watches_per_client;
    case What::kRequest:
      break;
  }
  return limits_.requests_per_client;
}

size_t FairnessBook::NamespaceLimit(What what) const {
  switch (what) {
    case What::kConnection:
      return SIZE_MAX;  // connections are bounded per client and by the server's cap
    case What::kWatch:
      return limits_.watches_per_namespace;
    case What::kRequest:
      break;
  }
  return limits_.requests_per_namespace;
}

bool FairnessBook::Take(What what, const ClientId& who) {
  if (who.level == ClientId::Level::kExempt) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const bool tenant = who.level != ClientId::Level::kAgent;
  Counts& client = clients_[who.key];
  if (Count(client, what) >= ClientLimit(what, who.level)) return false;
  Counts* ns = who.ns.empty() || !tenant ? nullptr : &namespaces_[who.ns];
  if (ns != nullptr && Count(*ns, what) >= NamespaceLimit(what)) return false;
  const bool counted = tenant && what == What::kRequest;
  if (counted && limits_.tenant_requests > 0 && tenant_requests_ >= limits_.tenant_requests) {
    return false;
  }
  ++Count(client, what);
  if (ns != nullptr) ++Count(*ns, what);
  if (counted) ++tenant_requests_;
  return true;
}

void FairnessBook::Give(What what, const ClientId& who) {
  if (who.level == ClientId::Level::kExempt) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto drop = [&](std::map<std::string, Counts>& book, const std::string& key) {
    auto it = book.find(key);
    if (it == book.end()) return;
    size_t& n = Count(it->second, what);
    if (n > 0) --n;
    const Counts& c = it->second;
    if (c.connections == 0 && c.watches == 0 && c.requests == 0) book.erase(it);
  };
  const bool tenant = who.level != ClientId::Level::kAgent;
  drop(clients_, who.key);
  if (!who.ns.empty() && tenant) drop(namespaces_, who.ns);
  if (tenant && what == What::kRequest && tenant_requests_ > 0) --tenant_requests_;
}

size_t FairnessBook::Connections(const ClientId& who) const {
  if (who.level == ClientId::Level::kExempt) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(who.key);
  return it == clients_.end() ? 0 : it->second.connections;
}

std::string FairnessBook::Refusal(What what, const ClientId& who) const {
  const char* noun = what == What::kConnection ? "connections"
                     : what == What::kWatch    ? "watches"
                                               : "requests in flight";
  std::string whose =
      who.level == ClientId::Level::kAnonymous
          ? std::string("unauthenticated clients")
          : "token " + who.key + (who.ns.empty() ? "" : " (namespace " + who.ns + ")");
  std::string limits = std::to_string(ClientLimit(what, who.level)) + " per token";
  if (who.level == ClientId::Level::kAgent) {
    // An agent's own limits only.
  } else if (NamespaceLimit(what) != SIZE_MAX) {
    limits += ", " + std::to_string(NamespaceLimit(what)) + " per namespace";
  }
  if (who.level != ClientId::Level::kAgent && what == What::kRequest &&
      limits_.tenant_requests > 0) {
    limits += ", " + std::to_string(limits_.tenant_requests) + " for all tenants together";
  }
  size_t held = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(who.key);
    if (it != clients_.end())
      held = what == What::kConnection ? it->second.connections
             : what == What::kWatch    ? it->second.watches
                                       : it->second.requests;
  }
  return "too many " + std::string(noun) + " for " + whose + ": it holds " + std::to_string(held) +
         " (limits: " + limits + "); retry after " + std::to_string(limits_.retry_after_seconds) +
         " s";
}

}  // namespace tessera::server
