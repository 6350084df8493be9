// The server's side of RFC 6455 WebSocket framing, as the Kubernetes stream protocols
// (v4/v5.channel.k8s.io, what `kubectl exec` speaks) need it: the upgrade's accept key, binary
// and control frames out (unmasked, as a server sends them), and the client's frames in
// (masked), parsed as they arrive. No extensions, no fragmented messages out.
#ifndef TESSERA_SERVER_WEBSOCKET_H_
#define TESSERA_SERVER_WEBSOCKET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::server::websocket {

enum class Opcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key + RFC 6455 GUID)).
std::string AcceptKey(std::string_view client_key);

// One whole frame (FIN set) with `payload`, unmasked.
std::string Frame(Opcode op, std::string_view payload);
// A close frame with a status code (1000: normal closure) and reason.
std::string CloseFrame(uint16_t code, std::string_view reason = {});

struct Incoming {
  Opcode op;
  std::string payload;  // unmasked
};
// Takes the first complete frame off the front of `buffer` (bytes received so far); nullopt
// while it is incomplete. A frame above `max_payload` bytes, or unmasked (a client must mask),
// is an error: `*bad` is set and nothing is taken.
std::optional<Incoming> TakeFrame(std::string* buffer, size_t max_payload, bool* bad);

// The subprotocol to answer from a client's Sec-WebSocket-Protocol list (comma-separated),
// the first of `supported` (in order of preference) it offers; empty when none.
std::string ChooseProtocol(std::string_view offered,
                           std::initializer_list<std::string_view> supported);

}  // namespace tessera::server::websocket

#endif  // TESSERA_SERVER_WEBSOCKET_H_
