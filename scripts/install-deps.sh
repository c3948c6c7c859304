#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, test and run Tether.
# Idempotent: when every package is present it returns at once.
#   scripts/install-deps.sh [--buf] [--fuzz] [--container]
# Each option adds what that job needs (below); .ci/run names all three, so a
# fresh machine runs apt-get once.
set -euo pipefail
want() {  # want OPTION: was OPTION given?
  local a
  for a in "${ARGS[@]}"; do [[ "$a" == "$1" ]] && return 0; done
  return 1
}
ARGS=("$@")
for a in "${ARGS[@]}"; do
  case "$a" in
    --buf|--fuzz|--container) ;;
    *) echo "install-deps: unknown option $a (--buf, --fuzz, --container)" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake pkg-config git clang-format
  ninja-build  # the build scripts' generator (scripts/cmake-generator.sh)
  ccache  # the CI builds (Release, sanitizers, fuzz) share compiled objects
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libeigen3-dev libspdlog-dev libfmt-dev
  libxsimd-dev     # the ensemble's lane kernels (header-only: nothing at run time)
  libxbyak-dev     # long tapes to x86-64 machine code (header-only: nothing at run time)
  libsuitesparse-dev  # KLU, RADAU_IIA's sparse Newton LU (linked statically: nothing at run time)
  libzip-dev       # `tether fmu` writes the FMU archive (client/cli/fmu_command.cc)
  libtinyxml2-dev  # `tether urdf` reads URDF (client/urdf); the FMU tests parse modelDescription.xml
  libmujoco-dev    # the mechanism tests compare against MuJoCo (tests/mechanism_mujoco_test.cc)
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-grpcio python3-grpc-tools python3-protobuf
  python3-matplotlib python3-numpy
  # The Python package (client/python): pip install into a venv
  # (--no-build-isolation: hatchling from apt), its tests (pytest, mypy),
  # pandas for Trajectory.to_pandas, Pillow for animations.
  python3-pip python3-venv python3-hatchling python3-pytest python3-mypy
  python3-pandas python3-pil
  python3-sympy  # tests/fmu3_sympy_test.py: the FMU's derivatives against a closed form
  python3-scipy  # tests/cosim_pid_test.py and the mechanism examples: scipy's integrators
  openssl  # the TLS tests make their certificates at test time
  # --session-store redis:// (server/service/redis_session_store.h) and the
  # cluster tests: the store, its C client, and the L7 proxy in front of
  # the replicas (deploy/haproxy.cfg, scripts/local-cluster.sh).
  redis-server libhiredis-dev haproxy
  python3-yaml  # tests/k8s_manifest_test.py reads deploy/k8s
)
# Container build and test (scripts/container-test.sh) only. As root with
# host networking and the kernel's overlayfs, podman needs no uidmap,
# slirp4netns or fuse-overlayfs; runc is the runtime its containers.conf names.
if want --container; then
  PACKAGES+=(podman runc debootstrap)
fi
# Fuzzing (scripts/fuzz.sh) only: clang with libFuzzer and the sanitizer
# runtimes (-fsanitize=fuzzer,address,undefined).
if want --fuzz; then
  PACKAGES+=(clang libclang-rt-14-dev)
fi

# buf lint / buf breaking (scripts/buf.sh) only: node and npm from Debian,
# then the buf CLI, pinned, from the npm registry into ~/.cache/tether-buf.
BUF_VERSION=1.75.0
install_buf() {
  want --buf || return 0
  local dir="$HOME/.cache/tether-buf"
  if [[ "$("$dir/node_modules/.bin/buf" --version 2>/dev/null)" == "$BUF_VERSION" ]]; then
    echo "install-deps: buf $BUF_VERSION present"
    return 0
  fi
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund "@bufbuild/buf@$BUF_VERSION"
}
# (A nodejs package that bundles npm, such as NodeSource's, needs no npm.)
if want --buf; then
  PACKAGES+=(nodejs)
  command -v npm >/dev/null || PACKAGES+=(npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_buf
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_buf
