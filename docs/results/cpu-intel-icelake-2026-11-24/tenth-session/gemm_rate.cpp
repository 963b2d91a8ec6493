// Ad-hoc (docs only): GFLOP/s of tb::cpu::gemm over four of the large MLP's GEMM shapes
// (batch 1024: forward 1024x4096x4096, dA, dW, the 1000-wide forward), each the fastest
// of REPS calls; the rate = their FLOPs / the sum of their fastest times. From the
// repository root, one binary per version of the sources:
//   g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I. gemm_rate.cpp kernels/cpu/gemm.cpp \
//       kernels/cpu/cpu_props.cpp -o gr && OMP_NUM_THREADS=2 ./gr 4
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kernels/cpu/gemm.h"
int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  struct S { bool ta, tb; long m, n, k; } shapes[] = {{false, true, 1024, 4096, 4096}, {false, false, 1024, 4096, 4096}, {true, false, 4096, 4096, 1024}, {false, true, 1024, 1000, 4096}};
  double flops = 0, tbest = 0;
  for (auto s : shapes) {
    std::vector<float> a(s.m * s.k, 0.01f), b(s.k * s.n, 0.02f), c(s.m * s.n);
    double best = 1e9;
    for (int r = 0; r < reps; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      tb::cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), s.ta ? s.m : s.k, b.data(), s.tb ? s.k : s.n, 0.0f, c.data(), s.n);
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (t < best) best = t;
    }
    flops += 2.0 * s.m * s.n * s.k; tbest += best;
  }
  printf("x %.1f GFLOP/s\n", flops / tbest / 1e9);
}
