#include "server/websocket.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>

namespace tessera::server::websocket {

std::string AcceptKey(std::string_view client_key) {
  const std::string text = std::string(client_key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char out[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
  const int n = EVP_EncodeBlock(out, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

std::string Frame(Opcode op, std::string_view payload) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | static_cast<uint8_t>(op)));
  const uint64_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  }
  out.append(payload);
  return out;
}

std::string CloseFrame(uint16_t code, std::string_view reason) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  payload.append(reason.substr(0, 123));  // a control frame carries at most 125 bytes
  return Frame(Opcode::kClose, payload);
}

std::optional<Incoming> TakeFrame(std::string* buffer, size_t max_payload, bool* bad) {
  const std::string& b = *buffer;
  if (b.size() < 2) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(b[i]); };
  const bool masked = (byte(1) & 0x80) != 0;
  if (!masked) {
    *bad = true;
    return std::nullopt;
  }
  uint64_t n = byte(1) & 0x7F;
  size_t at = 2;
  if (n == 126) {
    if (b.size() < 4) return std::nullopt;
    n = (uint64_t{byte(2)} << 8) | byte(3);
    at = 4;
  } else if (n == 127) {
    if (b.size() < 10) return std::nullopt;
    n = 0;
    for (size_t i = 2; i < 10; ++i) n = (n << 8) | byte(i);
    at = 10;
  }
  if (n > max_payload) {
    *bad = true;
    return std::nullopt;
  }
  if (b.size() < at + 4 + n) return std::nullopt;
  const size_t mask_at = at;
  at += 4;
  Incoming in{static_cast<Opcode>(byte(0) & 0x0F), b.substr(at, n)};
  for (size_t i = 0; i < in.payload.size(); ++i) {
    in.payload[i] = static_cast<char>(in.payload[i] ^ b[mask_at + (i % 4)]);
  }
  buffer->erase(0, at + n);
  return in;
}

std::string ChooseProtocol(std::string_view offered,
                           std::initializer_list<std::string_view> supported) {
  for (std::string_view want : supported) {
    std::string_view rest = offered;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (item == want) return std::string(want);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return "";
}

}  // namespace tessera::server::websocket
