#!/usr/bin/env bash
# .ci/gpu-carry.sh — take the Debian packages the build needs to a GPU machine that has
# CUDA, CMake and Python but no package registry and none of them (GoogleTest, Google
# Benchmark, nlohmann-json, hwloc, Open MPI and its runtime libraries: ~8 MB of .deb).
#
#   here (Debian/Ubuntu with apt):   .ci/gpu-carry.sh fetch [DIR]       (DIR: .gpu-carry)
#   there (no apt, no network):      eval "$(.ci/gpu-carry.sh env [DIR] [PREFIX])"
#                                    make gpu-check
#
# `fetch` downloads the .deb files (apt-get download: no install, no root needed beyond
# apt's cache) and keeps DIR out of git (.git/info/exclude). `env` unpacks each into
# PREFIX (dpkg -x, never into /: a foreign libc or libstdc++ there can break the machine,
# which is also why those are not in the list) and prints the exports that make CMake,
# the compiler wrappers, the loader and Open MPI use PREFIX: CMAKE_PREFIX_PATH, PATH,
# LD_LIBRARY_PATH, OPAL_PREFIX (Open MPI's relocation variable: its wrappers and mpirun
# read their data files and components under it), TB_DEPS_PREFIX and TB_SKIP_DEPS=1.
# Where the CUDA toolkit carries no NCCL, NCCL_ROOT points at the one a pip-installed
# PyTorch brings (nvidia-nccl-cu*), if any.
set -euo pipefail

# What the build finds with find_package / FindMPI, plus what libopenmpi3 loads at run
# time. Not listed: libc6, libstdc++6, libgcc-s1, libgomp1, zlib (every CUDA image has them).
PACKAGES=(
  libgtest-dev libgmock-dev                       # GoogleTest: headers, static libs, CMake config
  libbenchmark-dev libbenchmark1debian            # Google Benchmark
  nlohmann-json3-dev                              # env.json
  libhwloc-dev libhwloc15 libpciaccess0 libxnvctrl0   # hwloc (topology in env.json; Open MPI uses it)
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1
  librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libmunge2 libltdl7 libnuma1
)

usage() {
  echo "usage: .ci/gpu-carry.sh fetch [DIR] | env [DIR] [PREFIX] | list   (DIR default .gpu-carry, PREFIX default /tmp/tb-deps)" >&2
  exit 2
}

fetch() {
  local dir=${1:-.gpu-carry}
  command -v apt-get >/dev/null || { echo "gpu-carry fetch: apt-get not found: run it on Debian/Ubuntu" >&2; exit 2; }
  mkdir -p "$dir"
  (cd "$dir" && apt-get download "${PACKAGES[@]}")
  local exclude
  exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || true)
  if [ -n "$exclude" ] && ! grep -qxF "/${dir#./}/" "$exclude" 2>/dev/null; then
    mkdir -p "$(dirname "$exclude")"  # a repository may have no info/ folder yet
    echo "/${dir#./}/" >> "$exclude"
  fi
  echo "gpu-carry: $(ls "$dir"/*.deb | wc -l) packages, $(du -sh "$dir" | cut -f1) in $dir (name it in the device tool's carry)" >&2
}

# The NCCL PyTorch's pip wheels bring (site-packages/nvidia/nccl/{include,lib}), where the
# toolkit has none. Prints the folder or nothing.
pip_nccl_root() {
  local py
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    "$py" - <<'EOF' 2>/dev/null && return 0
import importlib.util, os, sys
spec = importlib.util.find_spec("nvidia.nccl")
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
root = list(spec.submodule_search_locations)[0]
if not os.path.exists(os.path.join(root, "include", "nccl.h")):
    sys.exit(1)
print(root)
EOF
  done
  return 1
}

# env's errors: the message on stderr, and `false` on stdout, so that the caller's
# `eval "$(.ci/gpu-carry.sh env)"` fails too (eval of nothing would succeed, and the next
# command would run without the carried packages).
env_fail() {
  echo "gpu-carry env: $*" >&2
  echo false
  exit 2
}

env_exports() {
  local dir=${1:-.gpu-carry} prefix=${2:-/tmp/tb-deps}
  compgen -G "$dir/*.deb" >/dev/null || env_fail "no .deb files in $dir: run '.ci/gpu-carry.sh fetch $dir' where apt works, and carry $dir"
  case "$prefix" in /|/usr|/usr/local) env_fail "PREFIX=$prefix would unpack over the system; choose an empty folder" ;; esac
  command -v dpkg >/dev/null || env_fail "dpkg not found (needed to unpack .deb files)"
  mkdir -p "$prefix" || env_fail "cannot create $prefix"
  local deb
  for deb in "$dir"/*.deb; do dpkg -x "$deb" "$prefix" || env_fail "cannot unpack $deb into $prefix"; done
  local usr=$prefix/usr arch='' d
  # The libraries' multiarch folder (usr/lib/x86_64-linux-gnu). A glob, not `ls | grep`: under
  # set -e and pipefail a grep that matched nothing ended the script without a word.
  for d in "$usr"/lib/*-linux-gnu; do [ -d "$d" ] && { arch=${d##*/}; break; }; done
  if [ -z "$arch" ]; then
    env_fail "no $usr/lib/<arch>-linux-gnu/ after unpacking $dir/*.deb: fetch the packages" \
             "on Debian 12 for this machine's architecture ('.ci/gpu-carry.sh fetch' there) and carry them again"
  fi
  local lib=$usr/lib/$arch
  echo "export TB_DEPS_PREFIX='$usr'"
  echo "export TB_SKIP_DEPS=1"
  echo "export OPAL_PREFIX='$usr'"
  echo "export PATH='$usr/bin':\"\$PATH\""
  echo "export LD_LIBRARY_PATH='$lib:$lib/openmpi/lib'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
  echo "export CMAKE_PREFIX_PATH='$usr'\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
  # Open MPI refuses root without these; the device machine runs commands as root.
  echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  local cuda=${CUDA_HOME:-/usr/local/cuda}
  if ! ls "$cuda"/lib*/libnccl.so* >/dev/null 2>&1; then
    local nccl
    if nccl=$(pip_nccl_root); then
      echo "export NCCL_ROOT='$nccl'"
      echo "export LD_LIBRARY_PATH='$nccl/lib':\"\$LD_LIBRARY_PATH\""
    else
      echo "gpu-carry env: no NCCL in $cuda nor in a pip package: cuda-ddp and the NCCL tests will not build" >&2
    fi
  fi
}

case "${1:-}" in
  list) printf '%s\n' "${PACKAGES[@]}" ;;
  fetch) shift; fetch "$@" ;;
  env) shift; env_exports "$@" ;;
  *) usage ;;
esac
