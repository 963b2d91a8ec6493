#!/bin/bash
# Ad-hoc (docs only): builds ab_linear_step.cpp (copied to /tmp/s17/ab.cpp) against bb074a3 ("old") and
# a9a8ef5 before its constants were fixed ("new" = 4 rows x 3 outputs with kOnePassMaxOutputs 20; v1..v4 the
# TB_T_ROWS/GROUP/ACC macros that stood in for kDotRows/kDotGroup/kDotAccumulators while measuring).
# Run: OMP_NUM_THREADS=T /tmp/s17/ab O PAIRS A B  (A, B: old blocked new v1 v2 v3 v4)
# build.sh: ab with old (HEAD), new (working tree defaults), v1..v4 (TB_T_ROWS/GROUP/ACC variants)
set -e
cd /work/main
F="-O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I."
O=/tmp/s17/obj; mkdir -p $O
build_ns() { ns=$1; src=$2; shift 2
  for f in linear_step_blocked gemm cpu_props; do g++ $F -Dtb=$ns "$@" -c kernels/cpu/$f.cpp -o $O/${ns}_$f.o & done
  g++ $F -Dtb=$ns "$@" -c $src -o $O/${ns}_ls.o & wait; }
build_ns tbold /tmp/s17/linear_step_old.cpp  # git show bb074a3:kernels/cpu/linear_step.cpp
build_ns tb kernels/cpu/linear_step.cpp
build_ns tbv1 kernels/cpu/linear_step.cpp -DTB_T_ROWS=3 -DTB_T_GROUP=4 -DTB_T_ACC=12
build_ns tbv2 kernels/cpu/linear_step.cpp -DTB_T_ROWS=6 -DTB_T_GROUP=2 -DTB_T_ACC=12
build_ns tbv3 kernels/cpu/linear_step.cpp -DTB_T_ROWS=4 -DTB_T_GROUP=2 -DTB_T_ACC=8
build_ns tbv4 kernels/cpu/linear_step.cpp -DTB_T_ROWS=2 -DTB_T_GROUP=4 -DTB_T_ACC=8
g++ $F /tmp/s17/ab.cpp $O/*.o -o /tmp/s17/ab
