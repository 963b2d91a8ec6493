#!/usr/bin/env bash
# tests/tools/test_install_deps.sh — ctest `install_deps_checks`: cmake/install-deps.sh's
# package checks, sourced and called with a fake apt-cache/dpkg-query first on PATH.
# A long `apt-cache policy` (the writer outlives grep -q's first match: SIGPIPE under
# pipefail) must still count as available; a snap wrapper and "(none)" must not. Then
# main() with a fake apt-get: the lists lock waited for, optional packages never fatal and
# never a reason to refresh the lists, required ones fatal.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
fake=$(mktemp -d); trap 'rm -rf "$fake"' EXIT

# apt-cache policy|show PKG, as FAKE_APT says: long (a candidate, then 1 MB of
# version table), none (no candidate), snap (a candidate whose .deb depends on snapd).
cat > "$fake/apt-cache" <<'FAKE'
#!/usr/bin/env bash
case "$1:$FAKE_APT" in
  policy:none) printf '%s:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n' "$2" ;;
  policy:*) printf '%s:\n  Installed: (none)\n  Candidate: 1.13.1+dfsg-4\n  Version table:\n' "$2"
            for i in $(seq 20000); do
              echo "     1.13.$i 500        500 http://deb.debian.org/debian bookworm/main amd64 Packages"
            done ;;
  show:snap) printf 'Package: %s\nPre-Depends: debconf, snapd\nDescription: Transitional package - %s -> %s snap\n' "$2" "$2" "$2" ;;
  show:*) printf 'Package: %s\nDepends: libc6\nDescription: a real package (its snapshot of upstream)\n' "$2"
          for i in $(seq 20000); do echo " line $i of a long description"; done ;;
esac
FAKE
# dpkg-query -W -f='${Status}' PKG: installed when PKG is in FAKE_INSTALLED.
cat > "$fake/dpkg-query" <<'FAKE'
#!/usr/bin/env bash
for p in $FAKE_INSTALLED; do [ "$p" = "${!#}" ] && { printf 'install ok installed'; exit 0; }; done
printf 'unknown ok not-installed'; exit 1
FAKE
chmod +x "$fake/apt-cache" "$fake/dpkg-query"
export PATH="$fake:$PATH"

# shellcheck source=../../cmake/install-deps.sh
. "$repo/cmake/install-deps.sh"   # defines the functions, runs nothing; sets -euo pipefail
fails=0
expect() {  # expect yes|no DESCRIPTION COMMAND...
  local want=$1 what=$2 got=no; shift 2
  if "$@"; then got=yes; fi
  if [ "$got" = "$want" ]; then echo "ok: $what"; else echo "FAIL: $what: expected $want, got $got"; fails=1; fi
}
FAKE_APT=long expect yes "a long apt-cache policy with a candidate is available" deb_available python3-torch
FAKE_APT=none expect no "Candidate: (none) is not available" deb_available chromium
FAKE_APT=snap expect no "a transitional snap wrapper is not available" deb_available chromium
FAKE_INSTALLED="cmake chromium" expect yes "an installed package is installed" is_installed chromium
FAKE_INSTALLED="cmake" expect no "a package dpkg does not know is not installed" is_installed chromium

# apt-get as FAKE_APT_GET says: "lock N" (update finds the lists locked N times), "updatefail",
# "optfail" (an install of any optional package fails); every call logged in $fake/log.
cat > "$fake/apt-get" <<'FAKE'
#!/usr/bin/env bash
echo "$*" >> "$FAKE_LOG"
case " $* " in
  *" update "*)
    case "$FAKE_APT_GET" in
      lock*) n=$(cat "$FAKE_LOG.locks" 2>/dev/null || echo 0)
             if [ "$n" -lt "${FAKE_APT_GET#lock }" ]; then
               echo $((n + 1)) > "$FAKE_LOG.locks"
               echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
               exit 100
             fi ;;
      updatefail) echo "E: The repository 'http://x bookworm Release' is not signed." >&2; exit 100 ;;
    esac ;;
  *" install "*)
    if [ "$FAKE_APT_GET" = optfail ]; then
      for p in $OPTIONAL; do
        case " $* " in *" $p "*) echo "E: $p: subprocess returned error" >&2; exit 100 ;; esac
      done
    fi ;;
esac
exit 0
FAKE
chmod +x "$fake/apt-get"
mkdir -p "$fake/lists" "$fake/nolists"; touch "$fake/lists/deb.debian.org_dists_bookworm_main_binary-amd64_Packages"
export FAKE_LOG=$fake/log TB_APT_RETRY_S=0 OPTIONAL="${optional_pkgs[*]}"
all_required="${build_pkgs[*]} ${report_pkgs[*]}"
# run_main DESCRIPTION WANT_RC ROOT FAKE_APT_GET FAKE_APT INSTALLED LISTS: main all, its rc and log.
run_main() {
  local what=$1 want=$2 rc=0; rm -f "$FAKE_LOG" "$FAKE_LOG.locks"; touch "$FAKE_LOG"
  (FAKE_ROOT=$3; am_root() { [ "$FAKE_ROOT" = 1 ]; }
   FAKE_APT_GET=$4 FAKE_APT=$5 FAKE_INSTALLED=$6 TB_APT_LISTS=$7 main all) > "$fake/out" 2>&1 || rc=$?
  if [ "$rc" = "$want" ]; then
    echo "ok: $what (rc $rc)"
  else
    echo "FAIL: $what: rc $rc, expected $want"; cat "$fake/out"; fails=1
  fi
}
log_has() {  # log_has yes|no DESCRIPTION PATTERN: a line of the apt-get log matches PATTERN
  expect "$1" "$2" grep -qE "$3" "$FAKE_LOG"
}
run_main "required missing, lists locked twice: waits, then installs" 0 1 "lock 2" long "" "$fake/lists"
expect yes "three updates (two locked)" test "$(grep -c update "$FAKE_LOG")" = 3
log_has yes "the required packages installed" "^-o DPkg::Lock::Timeout=600 install .* cmake "
run_main "required missing, update fails: fatal" 1 1 updatefail long "" "$fake/lists"
log_has no "nothing installed after a failed update" " install "
run_main "only optional missing, none available, lists present: no update" 0 1 "" none "$all_required" "$fake/lists"
log_has no "no update for optional packages apt cannot offer" "update"
expect yes "says which optional package it skips" grep -q "optional package chromium is not available" "$fake/out"
run_main "only optional missing, no lists, update fails: not fatal" 0 1 updatefail long "$all_required" "$fake/nolists"
log_has no "nothing installed" " install "
run_main "an optional package's install fails: required still installed, not fatal" 0 1 optfail long "" "$fake/lists"
log_has yes "required installed in their own transaction" " install .* cmake "
log_has no "required and optional not in one transaction" " install .* cmake .* mpich"
expect yes "says it goes on without them" grep -q "going on without them" "$fake/out"
run_main "not root, only optional missing: goes on, names them" 0 0 "" long "$all_required" "$fake/lists"
expect yes "names the optional packages" grep -q "optional packages not installed: chromium" "$fake/out"
log_has no "not root: no apt-get call" "."
run_main "not root, required missing: fails with the list" 1 0 "" long "" "$fake/lists"
expect yes "tells the user the sudo line" grep -q "sudo apt-get install -y cmake" "$fake/out"
exit $fails
