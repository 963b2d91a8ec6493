// Ad-hoc (docs only, ab.txt item 9): SGD and ReLU backward with their second buffer 0 to 256 bytes behind the
// first against 2048 bytes apart. Build: g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++20 -I.
// elementwise_offsets.cpp kernels/cpu/elementwise.cpp -o ew. Run: OMP_NUM_THREADS=1 ./ew 269322 LAG_BYTES+256
// elementwise ops with their two buffers at the same page offset against half a page apart
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "kernels/cpu/elementwise.h"
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? atol(argv[1]) : 269322;  // the small MLP's parameters
  const int reps = 41; const int lag = argc > 2 ? atoi(argv[2]) : 0;
  char* ba = static_cast<char*>(aligned_alloc(4096, n * 4 + 8192));
  char* bb = static_cast<char*>(aligned_alloc(4096, n * 4 + 8192));
  char* bv = static_cast<char*>(aligned_alloc(4096, n * 4 + 8192));
  for (int op = 0; op < 3; ++op) {
    std::vector<double> t[2];
    for (int r = 0; r < reps; ++r) {
      for (int w = 0; w < 2; ++w) {
        const int apart = (w + r) % 2;
        float* p = reinterpret_cast<float*>(ba + 16 + 256);
        float* g = reinterpret_cast<float*>(bb + 16 + (apart ? 2048 : lag));
        float* v = reinterpret_cast<float*>(bv + 16 + (apart ? 1024 : 0));
        if (r == 0) { std::fill(p, p + n, 0.5f); std::fill(g, g + n, 0.25f); std::fill(v, v + n, 0.0f); }
        auto t0 = clk::now();
        for (int k = 0; k < 20; ++k) {
          if (op == 0) tb::cpu::sgd_update(p, g, nullptr, n, 1e-6f, 0.0f, 0.0f);
          else if (op == 1) tb::cpu::sgd_update(p, g, v, n, 1e-6f, 0.9f, 1e-5f);
          else tb::cpu::relu_backward(p, g, n / 256, 256);
        }
        t[apart].push_back(std::chrono::duration<double>(clk::now() - t0).count());
      }
    }
    std::vector<double> ratio;
    for (int r = 0; r < reps; ++r) ratio.push_back(t[0][r] / t[1][r]);
    std::sort(ratio.begin(), ratio.end());
    for (auto& v : t) std::sort(v.begin(), v.end());
    const char* name[] = {"sgd plain", "sgd momentum+wd", "relu_backward"};
    printf("%-16s same offset %.1f us, apart %.1f us (medians per call); same/apart per pair %.3f [%.3f-%.3f]\n", name[op],
           t[0][reps / 2] / 20 * 1e6, t[1][reps / 2] / 20 * 1e6, ratio[reps / 2], ratio[0], ratio[reps - 1]);
  }
}
