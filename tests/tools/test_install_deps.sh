#!/usr/bin/env bash
# tests/tools/test_install_deps.sh — ctest `install_deps_checks`: cmake/install-deps.sh's
# package checks, sourced and called with a fake apt-cache/dpkg-query first on PATH.
# A long `apt-cache policy` (the writer outlives grep -q's first match: SIGPIPE under
# pipefail) must still count as available; a snap wrapper and "(none)" must not.
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
exit $fails
