#include "store/etcd_wire.h"

#include <openssl/evp.h>

#include <algorithm>
#include <utility>

namespace tessera::store {

using nlohmann::json;

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(n);
  return out;
}

Result<std::string> Unbase64(std::string_view text) {
  if (text.size() % 4 != 0) return Internal("etcd: a value is not base64");
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Internal("etcd: a value is not base64");
  // EVP_DecodeBlock counts the padding's bytes as decoded zeros.
  size_t len = static_cast<size_t>(n);
  if (text.ends_with("==")) {
    len -= 2;
  } else if (text.ends_with('=')) {
    len -= 1;
  }
  out.resize(len);
  return out;
}

Result<EtcdOptions> ParseEtcdUrl(std::string_view url) {
  EtcdOptions o;
  if (url.starts_with("etcd://")) {
    url.remove_prefix(7);
  } else if (url.starts_with("etcds://")) {
    url.remove_prefix(8);
    o.tls = true;
  } else {
    return InvalidArgument("store: \"" + std::string(url) +
                           "\" is not etcd://host:port[,host:port...][/prefix] (or etcds://)");
  }
  const size_t slash = url.find('/');
  std::string_view hosts = url.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = url.substr(slash);
    while (path.ends_with('/')) path.remove_suffix(1);
    if (!path.empty()) o.prefix = std::string(path) + "/";
  }
  while (!hosts.empty()) {
    const size_t comma = hosts.find(',');
    const std::string_view host = hosts.substr(0, comma);
    const size_t colon = host.rfind(':');
    if (host.empty() || colon == std::string_view::npos || colon == 0 || colon + 1 == host.size() ||
        !std::all_of(host.begin() + colon + 1, host.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return InvalidArgument("store: \"" + std::string(host) + "\" is not host:port");
    }
    o.endpoints.emplace_back(host);
    hosts.remove_prefix(comma == std::string_view::npos ? hosts.size() : comma + 1);
  }
  if (o.endpoints.empty()) return InvalidArgument("store: etcd:// names no member");
  return o;
}

json EtcdModIs(const std::string& key, int64_t revision) {
  return {{"key", Base64(key)},
          {"target", "MOD"},
          {"result", "EQUAL"},
          {"mod_revision", std::to_string(revision)}};
}
json EtcdPut(const std::string& key, const std::string& value) {
  return {{"request_put", {{"key", Base64(key)}, {"value", Base64(value)}}}};
}
json EtcdDelete(const std::string& key) {
  return {{"request_delete_range", {{"key", Base64(key)}}}};
}

std::string EtcdText(const json& kv, const char* field) {
  if (!kv.is_object() || !kv.contains(field) || !kv[field].is_string()) return "";
  auto bytes = Unbase64(kv[field].get_ref<const std::string&>());
  return bytes.ok() ? std::move(bytes).value() : std::string();
}

int64_t EtcdInt(const json& message, const char* field) {
  if (!message.is_object()) return 0;
  auto it = message.find(field);
  if (it == message.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), ::isdigit)) {
      return std::stoll(s);
    }
  }
  return 0;
}

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      ++prefix.back();
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

}  // namespace tessera::store
