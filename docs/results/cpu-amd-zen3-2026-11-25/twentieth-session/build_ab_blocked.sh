#!/bin/bash
# Ad-hoc (docs only): builds ../ab_linear_step.cpp (copied to $S/ab.cpp) for the blocked step: tbold =
# $S/linear_step_blocked_old.cpp, tb = the working tree (V0 -D flags), tbv1..4 = the working tree with V1..V4
# (-D flags of the temporary macros in macros.patch, applied to the working tree while measuring).
# First run: S=/tmp/s20; mkdir -p $S; git show 3763713:kernels/cpu/linear_step_blocked.cpp >
#   $S/linear_step_blocked_old.cpp; then `build_ab_blocked.sh all` (later runs may leave out "all": tbold's
#   objects stay in $S/obj).
# Run: AB_BLOCKED=1 OMP_NUM_THREADS=T $S/ab O PAIRS A B   (A, B: old new v1 v2 v3 v4; AB_BLOCKED is read at run time)
set -e
S=${S:-/tmp/s20}; cd "$(git rev-parse --show-toplevel)"
F="-O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I."
O=$S/obj; mkdir -p $O
cp docs/results/cpu-amd-zen3-2026-11-25/ab_linear_step.cpp $S/ab.cpp
build_ns() { ns=$1; src=$2; shift 2
  for f in linear_step gemm cpu_props; do g++ $F -Dtb=$ns "$@" -c kernels/cpu/$f.cpp -o $O/${ns}_$f.o & done
  g++ $F -Dtb=$ns "$@" -c $src -o $O/${ns}_lsb.o & wait; }
[ "$1" = all ] && build_ns tbold $S/linear_step_blocked_old.cpp
build_ns tb kernels/cpu/linear_step_blocked.cpp ${V0:-}
build_ns tbv1 kernels/cpu/linear_step_blocked.cpp ${V1:-}
build_ns tbv2 kernels/cpu/linear_step_blocked.cpp ${V2:-}
build_ns tbv3 kernels/cpu/linear_step_blocked.cpp ${V3:-}
build_ns tbv4 kernels/cpu/linear_step_blocked.cpp ${V4:-}
g++ $F $S/ab.cpp $O/*.o -o $S/ab
