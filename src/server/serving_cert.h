// A certificate authority of the server's own and the serving certificate it signs, so that
// HTTPS works with nothing set up: clients trust `ca.crt` (the kubeconfig `tessera dev` writes
// names it).
#ifndef TESSERA_SERVER_SERVING_CERT_H_
#define TESSERA_SERVER_SERVING_CERT_H_

#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::server {

struct ServingCert {
  std::string ca_file;    // <dir>/ca.crt: what clients trust
  std::string cert_file;  // <dir>/server.crt: the serving certificate (P-256, signed by the CA)
  std::string key_file;   // <dir>/server.key (mode 0600)
};

// Makes, or reuses, the CA (ca.crt, ca.key) and the serving certificate in `dir`. The serving
// certificate names every entry of `hosts` (IP addresses or DNS names) as subject alternative
// names; one that lacks any of them, or is within a day of expiring, is made again with the
// same CA, so clients keep trusting the server. Keys are written with mode 0600.
Result<ServingCert> EnsureServingCert(const std::string& dir,
                                      const std::vector<std::string>& hosts);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_SERVING_CERT_H_
