#!/usr/bin/env bash
# Installs the system packages trainbench needs, once, idempotently.
# Called by `make test` / `make bench` before configuring. A no-op when every
# package is present; as root on Debian/Ubuntu it runs apt-get (waiting for another
# apt/dpkg to finish); elsewhere it prints the list to install by hand and fails (exit 1).
# Optional packages (below) never fail it: it goes on without them, saying so.
# Usage: cmake/install-deps.sh [build|report|all|fuzz]   (default: all)
# Sourced (`. cmake/install-deps.sh`), it only defines its functions (tests/tools/).
set -euo pipefail

# Debian/Ubuntu package names. CUDA/NCCL are not here: they come from NVIDIA's
# toolkit (/usr/local/cuda) and are optional.
build_pkgs=(cmake g++ make libgtest-dev libgmock-dev libbenchmark-dev openmpi-bin libopenmpi-dev nlohmann-json3-dev libhwloc-dev)
report_pkgs=(python3 python3-matplotlib python3-numpy python3-pytest python3-yaml fonts-dejavu-core)
# Nice to have: the report test opens the page in headless Chromium and skips
# (with the reason) without it. Ubuntu ships chromium only as a snap, so it is
# installed only where apt has a real package for it.
# PyTorch for the peer rows and the oracle test (bench/peers/, tests/peers/; both say
# "skipped" without it) and the OpenMP build of OpenBLAS that PyTorch and numpy should
# use (docs/performance.md: the default pthreads build fights PyTorch's OpenMP threads).
# Debian 12 has chromium, python3-torch 1.13.1 and libopenblas0-openmp 0.3.21 in main
# (apt-cache policy); Ubuntu has the last two in universe.
optional_pkgs=(chromium python3-torch libopenblas0-openmp)
# `make fuzz` only: clang with libFuzzer and the sanitizers' runtimes, and clang's OpenMP.
fuzz_pkgs=(cmake make clang libclang-rt-dev libomp-dev)
# Another apt or dpkg holding the lock (unattended-upgrades, a second make test):
# wait for it up to ten minutes instead of failing at once.
apt_wait=(-o DPkg::Lock::Timeout=600)
# Issue #16, also optional: Slurm and munge for the `slurm` test (a one-node cluster the
# test starts itself; skipped, with the reason, without them; Debian's Slurm brings the
# pmix and pmi2 plugins), and MPICH for .ci/run's second MPI build (-DTB_MPI=mpich).
# Installing MPICH beside Open MPI keeps Open MPI the default mpicc/mpirun (alternatives
# priority 50 against MPICH's 40).
optional_pkgs+=(slurmctld slurmd slurm-client munge mpich libmpich-dev)

# Each check captures a command's whole output before grep reads it: `cmd | grep -q`
# under pipefail fails when grep exits at the first match and cmd dies of SIGPIPE (141).

# is_installed PKG: dpkg says "install ok installed" (fully installed, not half).
is_installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ $status == *"ok installed"* ]]
}

# deb_available PKG: apt has an install candidate for PKG, and it is a real .deb,
# not Ubuntu's transitional wrapper that installs a snap (it depends on snapd).
deb_available() {
  local policy show
  policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
  grep -q "Candidate: [0-9]" <<<"$policy" || return 1
  show=$(apt-cache show "$1" 2>/dev/null) || return 1
  ! grep -qiE '^(pre-)?depends:.*\bsnapd\b|^description[^:]*:.*\bsnap\b' <<<"$show"
}

# am_root: apt-get may run here (the tests replace it).
am_root() { [ "$(id -u)" = 0 ]; }

# apt_update: `apt-get update`, waiting for another apt. DPkg::Lock::Timeout covers dpkg's
# lock (install) but not the lists lock that update takes: that one fails at once with
# "Could not get lock", so it is retried here, 60 times 10 s (TB_APT_RETRY_S), as long as dpkg's.
apt_update() {
  local out i
  for ((i = 0; i < 60; i++)); do
    out=$(apt-get "${apt_wait[@]}" update -qq 2>&1) && return 0
    grep -q "Could not get lock" <<<"$out" || break
    [ "$i" = 0 ] && echo "install-deps.sh: another apt holds its package lists; waiting for it" >&2
    sleep "${TB_APT_RETRY_S:-10}"
  done
  printf '%s\n' "$out" >&2
  return 1
}

# lists_empty: apt has no package lists yet (a fresh container): nothing can be installed
# before an update.
lists_empty() { ! compgen -G "${TB_APT_LISTS:-/var/lib/apt/lists}/*_Packages*" >/dev/null; }

main() {
  local want=${1:-all} pkgs p
  case "$want" in
    build)  pkgs=("${build_pkgs[@]}") ;;
    report) pkgs=("${report_pkgs[@]}") ;;
    all)    pkgs=("${build_pkgs[@]}" "${report_pkgs[@]}") ;;
    fuzz)   pkgs=("${fuzz_pkgs[@]}") ;;
    *) echo "install-deps.sh: unknown set '$want' (allowed: build, report, all, fuzz)" >&2; return 2 ;;
  esac

  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps.sh: not a Debian/Ubuntu system (no dpkg). Install the equivalents of:" >&2
    echo "  ${pkgs[*]}" >&2
    echo "then run the make target again with TB_SKIP_DEPS=1." >&2
    return 1
  fi
  local missing=() optional_missing=() available=() rc=0
  for p in "${pkgs[@]}"; do is_installed "$p" || missing+=("$p"); done
  if [ "$want" = report ] || [ "$want" = all ]; then
    for p in "${optional_pkgs[@]}"; do is_installed "$p" || optional_missing+=("$p"); done
  fi
  [ ${#missing[@]} -eq 0 ] && [ ${#optional_missing[@]} -eq 0 ] && return 0

  if ! am_root || ! command -v apt-get >/dev/null 2>&1; then
    local how="as root: apt-get install -y"
    am_root || how="sudo apt-get install -y"
    command -v apt-get >/dev/null 2>&1 || how="no apt-get here: install by hand"
    if [ ${#missing[@]} -eq 0 ]; then  # only optional ones are missing: carry on without them
      echo "install-deps.sh: optional packages not installed: ${optional_missing[*]} (the tests and" \
           "peer rows that need them say skipped; $how ${optional_missing[*]})" >&2
      return 0
    fi
    echo "install-deps.sh: missing packages: ${missing[*]}" >&2
    echo "  install them ($how ${missing[*]})," >&2
    echo "  or set TB_SKIP_DEPS=1 if you provide them another way" >&2
    return 1
  fi

  export DEBIAN_FRONTEND=noninteractive
  # Refresh the lists only for a required package, or where there are none yet: an optional
  # package apt cannot offer (Ubuntu's snap-only chromium) must not refresh them on every make.
  if [ ${#missing[@]} -gt 0 ] || lists_empty; then
    if ! apt_update; then
      if [ ${#missing[@]} -gt 0 ]; then
        echo "install-deps.sh: apt-get update failed (above); cannot install ${missing[*]}" >&2
        return 1
      fi
      echo "install-deps.sh: apt-get update failed (above); going on without the optional ${optional_missing[*]}" >&2
      return 0
    fi
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps.sh: installing ${missing[*]}" >&2
    apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
      echo "install-deps.sh: apt-get install failed; needed: ${missing[*]}" >&2
      return 1
    }
  fi
  for p in "${optional_missing[@]}"; do
    if deb_available "$p"; then
      available+=("$p")
    else
      echo "install-deps.sh: optional package $p is not available as a .deb here; skipping it" >&2
    fi
  done
  # Optional ones in their own transaction: one that fails (a postinst, a mirror without
  # it) must not take the required ones with it, nor fail the make.
  if [ ${#available[@]} -gt 0 ]; then
    echo "install-deps.sh: installing the optional ${available[*]}" >&2
    apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends "${available[@]}" >/dev/null || rc=$?
    [ "$rc" = 0 ] || echo "install-deps.sh: installing ${available[*]} failed (apt-get exit $rc);" \
                         "going on without them (their tests say skipped)" >&2
  fi
  echo "install-deps.sh: done" >&2
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
