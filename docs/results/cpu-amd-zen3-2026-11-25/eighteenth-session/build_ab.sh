#!/bin/bash
# Ad-hoc (docs only): builds ../ab_linear_step.cpp (copied to $S/ab.cpp) against a saved linear_step.cpp
# ("old", $S/linear_step_old.cpp: in the eighteenth session 9435ab5's, in the nineteenth 2a07c70's parent or
# 2a07c70 itself, as ab.txt says), the working tree ("new", with V0's -D flags) and variants v1..v4 compiled
# with -D flags (V1..V4 environment variables). S defaults to /tmp/s18 (eighteenth session); the nineteenth
# used S=/tmp/s19. While measuring, macros stood in for constants (each session's ab.txt names them):
# eighteenth: TB_T_DOT (kAllDotMaxOutputs), TB_T_MAX (kOnePassMaxOutputs), TB_T_DOTN (kDotMaxOutputs, past
# any number of vectors), TB_T_SUPER / TB_T_KP (a row_superblock twin for AVX2: S blocks sharing one backward,
# kP columns of dW^T in registers; not kept).
# Run: OMP_NUM_THREADS=T $S/ab O PAIRS A B   (A, B: old blocked new v1 v2 v3 v4)
set -e
S=${S:-/tmp/s18}
cd /work/main
F="-O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I."
O=$S/obj; mkdir -p $O
build_ns() { ns=$1; src=$2; shift 2
  for f in linear_step_blocked gemm cpu_props; do g++ $F -Dtb=$ns "$@" -c kernels/cpu/$f.cpp -o $O/${ns}_$f.o & done
  g++ $F -Dtb=$ns "$@" -c $src -o $O/${ns}_ls.o & wait; }
[ "$1" = all ] && build_ns tbold $S/linear_step_old.cpp
build_ns tb kernels/cpu/linear_step.cpp ${V0:-}
build_ns tbv1 kernels/cpu/linear_step.cpp ${V1:--DTB_T_DOT=20}
build_ns tbv2 kernels/cpu/linear_step.cpp ${V2:--DTB_T_DOT=12}
build_ns tbv3 kernels/cpu/linear_step.cpp ${V3:-}
build_ns tbv4 kernels/cpu/linear_step.cpp ${V4:-}
g++ $F $S/ab.cpp $O/*.o -o $S/ab
