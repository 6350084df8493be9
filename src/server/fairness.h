// Fairness between the API server's clients, in the spirit of Kubernetes' API Priority and
// Fairness: each client (a token) and each namespace may hold only so many connections, watches
// and requests in flight, and the tenants together leave room for the admin and the agents.
// Beyond a limit a request is answered 429 with Retry-After, at once: nothing queues behind a
// client that holds its share. The HTTP server (http_server.h) asks this book before it reads,
// runs or streams anything for a client.
#ifndef TESSERA_SERVER_FAIRNESS_H_
#define TESSERA_SERVER_FAIRNESS_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace tessera::server {

// Who sent a request, as far as the limits go.
struct ClientId {
  enum class Level : unsigned char {
    kExempt,     // the admin: never limited, and never evicted for others
    kAgent,      // a node agent: limited per token (agents' own limits), never evicted for others
    kTenant,     // namespace, exec, join and metrics tokens: limited per token and per namespace
    kAnonymous,  // no valid token: limited as one client together
  };
  Level level = Level::kAnonymous;
  std::string key;  // the token's id ("" for anonymous)
  std::string ns;   // a tenant's namespace ("" when it has none)
};

struct ClientLimits {
  // Connections one token may hold open (watches and idle keep-alive ones included).
  size_t connections_per_client = 128;
  // Watches one token, and one namespace's tokens together, may hold open.
  size_t watches_per_client = 100;
  size_t watches_per_namespace = 200;
  // Requests running at once (a watch counts while it is set up) for one token, one namespace,
  // and all tenants together. 0 for the last: the HTTP server's threads less two, so that two
  // threads are always free for the admin and the agents.
  size_t requests_per_client = 2;
  size_t requests_per_namespace = 4;
  size_t tenant_requests = 0;
  // An agent token's own limits (its heartbeats, binding watch, exec claims and log shipping
  // need few); agents are not counted with the tenants.
  size_t connections_per_agent = 64;
  size_t watches_per_agent = 32;
  size_t requests_per_agent = 8;
  // Retry-After, in seconds, of a 429.
  int retry_after_seconds = 1;
};

// The counts behind the limits. Thread-safe; every Take that succeeds is paired with a Give.
class FairnessBook {
 public:
  enum class What : unsigned char { kConnection, kWatch, kRequest };

  explicit FairnessBook(ClientLimits limits) : limits_(limits) {}

  // Takes one `what` for `who`: false (and nothing taken) when a limit is reached. Exempt
  // clients always get one.
  bool Take(What what, const ClientId& who);
  void Give(What what, const ClientId& who);

  // The connections `who` holds (0 for exempt clients, which are not counted).
  size_t Connections(const ClientId& who) const;
  const ClientLimits& limits() const { return limits_; }

  // Why a Take failed, for the 429's message.
  std::string Refusal(What what, const ClientId& who) const;

 private:
  struct Counts {
    size_t connections = 0, watches = 0, requests = 0;
  };
  size_t& Count(Counts& c, What what);
  // The limit of `what` for one client and for one namespace (SIZE_MAX: none).
  size_t ClientLimit(What what, ClientId::Level level) const;
  size_t NamespaceLimit(What what) const;

  ClientLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Counts> clients_;     // by token id ("" anonymous)
  std::map<std::string, Counts> namespaces_;  // tenants' namespaces
  size_t tenant_requests_ = 0;                // all tenants' requests in flight
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_FAIRNESS_H_
