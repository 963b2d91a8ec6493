#!/usr/bin/env bash
# Installs the system packages trainbench needs, once, idempotently.
# Called by `make test` / `make bench` before configuring. A no-op when every
# package is present; as root on Debian/Ubuntu it runs apt-get; elsewhere it
# prints the list to install by hand and fails (exit 1).
# Usage: cmake/install-deps.sh [build|report|all]   (default: all)
set -euo pipefail

want=${1:-all}
# Debian/Ubuntu package names. CUDA/NCCL are not here: they come from NVIDIA's
# toolkit (/usr/local/cuda) and are optional.
build_pkgs=(cmake g++ make libgtest-dev libgmock-dev libbenchmark-dev openmpi-bin libopenmpi-dev libhwloc-dev)
report_pkgs=(python3 python3-matplotlib python3-numpy python3-pytest python3-yaml fonts-dejavu-core)
# Nice to have: the report test opens the page in headless Chromium and skips
# (with the reason) without it. Ubuntu ships chromium only as a snap, so it is
# installed only where apt has a real package for it.
# PyTorch for the peer rows and the oracle test (bench/peers/, tests/peers/; both say
# "skipped" without it) and the OpenMP build of OpenBLAS that PyTorch and numpy should
# use (docs/performance.md: the default pthreads build fights PyTorch's OpenMP threads).
# Debian 12 has python3-torch 1.13.1 and libopenblas0-openmp 0.3.21 in main; Ubuntu has
# both in universe (versions differ by release; not verified here: apt-cache policy).
optional_pkgs=(chromium python3-torch libopenblas0-openmp)
# Issue #16, also optional: Slurm and munge for the `slurm` test (a one-node cluster the
# test starts itself; skipped, with the reason, without them; Debian's Slurm brings the
# pmix and pmi2 plugins), and MPICH for .ci/run's second MPI build (-DTB_MPI=mpich).
# Installing MPICH beside Open MPI keeps Open MPI the default mpicc/mpirun (alternatives
# priority 50 against MPICH's 40).
optional_pkgs+=(slurmctld slurmd slurm-client munge mpich libmpich-dev)
case "$want" in
  build)  pkgs=("${build_pkgs[@]}") ;;
  report) pkgs=("${report_pkgs[@]}") ;;
  all)    pkgs=("${build_pkgs[@]}" "${report_pkgs[@]}") ;;
  *) echo "install-deps.sh: unknown set '$want' (allowed: build, report, all)" >&2; exit 2 ;;
esac

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    # dpkg-query prints "install ok installed" only for a fully installed package.
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
      missing+=("$p")
    fi
  done
else
  echo "install-deps.sh: not a Debian/Ubuntu system (no dpkg). Install the equivalents of:" >&2
  echo "  ${pkgs[*]}" >&2
  echo "then run the make target again with TB_SKIP_DEPS=1." >&2
  exit 1
fi

optional_missing=()
if [ "$want" != build ]; then
  for p in "${optional_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || optional_missing+=("$p")
  done
fi

[ ${#missing[@]} -eq 0 ] && [ ${#optional_missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  [ ${#missing[@]} -eq 0 ] && exit 0  # only optional ones are missing: carry on without them
  echo "install-deps.sh: missing packages: ${missing[*]}" >&2
  echo "  install them with: sudo apt-get install -y ${missing[*]}" >&2
  echo "  (or set TB_SKIP_DEPS=1 if you provide them another way)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
for p in "${optional_missing[@]}"; do
  # A real .deb with an install candidate, not Ubuntu's transitional snap wrapper.
  if apt-cache policy "$p" 2>/dev/null | grep -q "Candidate: [0-9]" &&
     ! apt-cache show "$p" 2>/dev/null | grep -qi "snap"; then
    missing+=("$p")
  else
    echo "install-deps.sh: optional package $p is not available as a .deb here; skipping it" >&2
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps.sh: installing ${missing[*]}" >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps.sh: done" >&2
