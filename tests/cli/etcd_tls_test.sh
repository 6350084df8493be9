#!/usr/bin/env bash
# A server on an etcd that speaks only TLS and asks for client certificates (--client-cert-auth),
# as production etcd clusters run: with --etcd-ca-file, --etcd-cert-file and --etcd-key-file it
# stores and serves; without the client certificate it is refused with the flags to check.
source "$(dirname "$0")/server_env.sh" "$1"
command -v etcd >/dev/null || fail "Debian's etcd-server is not installed"
TESSERA=$(realpath "$TESSERA")
cd "$WORK"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca 2>/dev/null
for n in member client; do
  openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj /CN=$n 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >$n.ext
  openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $n.crt -days 2 \
    -extfile $n.ext 2>/dev/null
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
peer=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
etcd --name e --data-dir etcd --listen-client-urls "https://127.0.0.1:$port" \
  --advertise-client-urls "https://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "e=http://127.0.0.1:$peer" \
  --cert-file member.crt --key-file member.key --trusted-ca-file ca.crt --client-cert-auth \
  --logger zap --log-outputs etcd.log &
ETCD=$!
trap 'kill -9 $ETCD 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 200); do
  curl -s --cacert ca.crt --cert client.crt --key client.key "https://127.0.0.1:$port/health" |
    grep -q '"true"' && break
  sleep 0.05
done

# Without a client certificate: refused, naming the flags.
expect_exit 1 "$TESSERA" server --data-dir "$WORK/refused" --listen 127.0.0.1:0 --plain-http \
  --store "etcds://127.0.0.1:$port" --etcd-ca-file ca.crt
expect_out "--etcd-cert-file"
# The flags are for etcds:// only.
expect_exit 2 "$TESSERA" server --data-dir "$WORK/refused" --listen 127.0.0.1:0 --plain-http \
  --store "etcd://127.0.0.1:$port" --etcd-ca-file ca.crt
expect_out "etcds://"

SERVER_ARGS="--plain-http --store etcds://127.0.0.1:$port/tls --etcd-ca-file $WORK/ca.crt \
  --etcd-cert-file $WORK/client.crt --etcd-key-file $WORK/client.key" start_server
printf 'apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: over-tls}\nspec: {tasks: [{name: main, command: ["true"]}]}\n' >job.yaml
expect_exit 0 "$TESSERA" apply -f job.yaml
expect_exit 0 "$TESSERA" get job over-tls -o json
expect_out '"name": "over-tls"'
# It is in etcd, under the prefix.
curl -s --cacert ca.crt --cert client.crt --key client.key "https://127.0.0.1:$port/v3/kv/range" \
  -X POST -d "{\"key\": \"$(printf '/tls/Job/default/over-tls' | base64)\"}" | grep -q '"kvs"' ||
  fail "the Job is not in etcd"
echo "etcd_tls_test: ok"
