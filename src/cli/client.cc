#include "cli/client.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "api/yaml.h"

namespace tessera::cli {

namespace {

// One server's address, or several replicas' separated by commas ("https://a:8443,b:8443"):
// the first is tried first, the others when it cannot be reached.
Status SetAddress(std::string addrs, Endpoint* ep) {
  bool first = true;
  while (true) {
    const size_t comma = addrs.find(',');
    std::string addr = addrs.substr(0, comma);
    if (addr.starts_with("https://")) {
      if (first) ep->tls = true;
      addr = addr.substr(8);
    } else if (addr.starts_with("http://")) {
      addr = addr.substr(7);
    }
    while (!addr.empty() && addr.back() == '/') addr.pop_back();
    const size_t colon = addr.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) {
      return InvalidArgument("server address \"" + addr + "\": expected HOST:PORT");
    }
    if (first) {
      ep->host = addr.substr(0, colon);
      ep->port = addr.substr(colon + 1);
    }
    ep->replicas.emplace_back(addr.substr(0, colon), addr.substr(colon + 1));
    first = false;
    if (comma == std::string::npos) break;
    addrs = addrs.substr(comma + 1);
  }
  if (ep->replicas.size() == 1) ep->replicas.clear();
  return Status::Ok();
}

}  // namespace

Result<Endpoint> ResolveEndpoint(const std::string& addr, const std::string& token,
                                 const std::string& ca_file) {
  Endpoint ep;
  std::string server = addr, tok = token, ca = ca_file;
  if (ca.empty()) {
    if (const char* e = std::getenv("TESSERA_CA")) ca = e;
  }
  if (server.empty()) {
    if (const char* e = std::getenv("TESSERA_ADDR")) server = e;
  }
  if (tok.empty()) {
    if (const char* e = std::getenv("TESSERA_TOKEN")) tok = e;
  }
  if (server.empty() || tok.empty()) {
    const char* home = std::getenv("HOME");
    const std::string path = std::string(home ? home : "") + "/.tessera/config";
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      auto docs = api::ParseYamlDocuments(ss.str());
      if (!docs.ok() || docs->size() != 1 || !(*docs)[0].is_object()) {
        return InvalidArgument(path + ": expected a map with server and token");
      }
      const auto& cfg = (*docs)[0];
      for (const auto& [key, value] : cfg.items()) {
        if ((key != "server" && key != "token" && key != "ca") || !value.is_string()) {
          return InvalidArgument(path + ": " + key +
                                 ": expected only the strings server, token and ca");
        }
      }
      if (server.empty() && cfg.contains("server")) server = cfg["server"].get<std::string>();
      if (tok.empty() && cfg.contains("token")) tok = cfg["token"].get<std::string>();
      if (ca.empty() && cfg.contains("ca")) ca = cfg["ca"].get<std::string>();
    }
  }
  if (!server.empty()) {
    if (Status s = SetAddress(server, &ep); !s.ok()) return s;
  }
  ep.token = tok;
  ep.ca_file = ca;
  return ep;
}

}  // namespace tessera::cli
