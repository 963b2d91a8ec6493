// Ad-hoc (docs only): this VM's second core, measured. Every 250 ms, the FMA loop of the
// ceilings (kernels/cpu/ceiling_loops.h) on 1 thread, then on 2 threads at once; prints
// both rates (GFLOP/s) and their ratio. A window of `iters` rounds per thread: 800,000 is
// ~2 ms at 160 GFLOP/s, 8,000,000 ~20 ms.
// Build: g++ -O3 -march=native -fopenmp -std=c++20 -I. <this file> kernels/cpu/ceiling_loops.cpp -o /tmp/fma2
// Run:   OMP_WAIT_POLICY=passive /tmp/fma2 SAMPLES ITERS
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include "kernels/cpu/ceiling_loops.h"
using clk = std::chrono::steady_clock;
static double rate(int threads, int64_t iters) {
  auto t0 = clk::now();
#pragma omp parallel num_threads(threads)
  {
    alignas(64) float out[16 * 16];
    tb::cpu::fma_loop(iters, 1.0000001f, 1e-7f, out);
    if (out[0] == 12345.f) printf("x");  // keeps the loop
  }
  double s = std::chrono::duration<double>(clk::now() - t0).count();
  return 2.0 * iters * tb::cpu::kFmaChains * tb::cpu::kFmaLanes * threads / s / 1e9;
}
int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 40;
  const int64_t iters = argc > 2 ? atoll(argv[2]) : 8000000;
  rate(2, iters / 10);
  for (int i = 0; i < n; ++i) {
    const double one = rate(1, iters), two = rate(2, iters);
    printf("%6.1f %6.1f  x%.2f\n", one, two, two / one);
    fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}
