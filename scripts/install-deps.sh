#!/usr/bin/env bash
# Installs the Debian packages Tessera builds and tests with. Idempotent: packages already present
# are left alone, and apt-get runs only when something is missing.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build make pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  libboost-dev libglpk-dev libsqlite3-dev libyaml-cpp-dev libyaml-dev libssl-dev prometheus-cpp-dev
  prometheus openssl python3-kubernetes
  # the control plane on etcd (store/etcd_store.h): the tests start their own members; its
  # client speaks etcd's gRPC API (store/etcd_rpc.proto)
  etcd-server libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # distributed training in the tests: a gloo all_reduce and mpirun across two agents
  python3-torch openmpi-bin
  # containers: real podman on a local image made from busybox-static, where the machine allows
  podman busybox-static
  # the web console: its chart library, embedded at build time; its tests drive Debian's
  # Chromium, headless, through chromium-driver and Selenium
  libjs-dygraphs chromium chromium-driver python3-selenium
  # Slurm on this machine, for comparisons (bench/slurm_env.sh starts its own munged and
  # slurmctld)
  slurm-wlm
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# kubectl: Debian's kubernetes-client, unless a kubectl is already installed (its package would
# conflict over /usr/bin/kubectl); the kubectl test runs the one on PATH.
if ! command -v kubectl >/dev/null 2>&1 &&
  ! dpkg-query -W -f='${Status}' kubernetes-client 2>/dev/null | grep -q "install ok installed"; then
  missing+=(kubernetes-client)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
