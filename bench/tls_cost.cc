// Where a TLS client's time goes with Debian's OpenSSL, step by step, outside Tessera: library
// initialisation, a client context, the CA file, the TCP connection and the handshake, against a
// server given by its CA and port (a `tessera server`, say). One line per run, in ms.
//   tessera_tls_cost CA_FILE PORT
// bench/cli_call.sh puts the figures beside a whole `tessera apply` over HTTPS.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point* t) {
  const auto now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - *t).count();
  *t = now;
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CA_FILE PORT\n", argv[0]);
    return 2;
  }
  auto t = Clock::now();
  OPENSSL_init_ssl(0, nullptr);
  const double init = Since(&t);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  const double context = Since(&t);
  if (SSL_CTX_load_verify_locations(ctx, argv[1], nullptr) != 1) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const double ca = Since(&t);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[2])));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("connect");
    return 1;
  }
  const double tcp = Since(&t);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "127.0.0.1");
  if (SSL_connect(ssl) != 1) {
    std::fprintf(stderr, "handshake failed\n");
    return 1;
  }
  const double handshake = Since(&t);
  std::printf("init %.2f context %.2f ca %.2f connect %.2f handshake %.2f\n", init, context, ca,
              tcp, handshake);
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
  return 0;
}
