// tests/cuda_emu/cuda_emu.h — just enough of CUDA's execution model, in host C++, to
// run the project's own kernels (kernels/cuda/*_kernels.cuh, included after this
// header) on the CPU: their indexing, grid-stride loops, shared memory, barriers and
// warp-shuffle reductions, at the launch geometry their launchers use.
//
// The model: emu::launch(grid, block, kernel, args...) starts one host thread per
// thread of a block (block.x * block.y * block.z, whole warps of 32) and runs the
// blocks one after another (x fastest): every thread calls the kernel with blockIdx
// set, then all meet at a barrier before the next block. So
//  - threadIdx / blockIdx are thread-local, blockDim / gridDim global;
//  - __shared__ is a static variable: one copy, shared by the threads of the running
//    block (blocks never overlap, as on a GPU a block sees only its own);
//  - __syncthreads() is a barrier of the block's threads: a kernel whose threads do not
//    all reach it hangs here (the test's timeout), as it would misbehave on a GPU;
//  - __shfl_down_sync(full mask, v, d) and __shfl_xor_sync(full mask, v, m) exchange
//    through a per-warp slot array between two barriers of the warp's 32 threads; lanes
//    whose source is past the warp's end keep their value;
//  - atomicAdd is serialised by a mutex.
// Not modelled: memory ordering beyond what barriers give, partial masks, warp sizes
// other than 32, concurrent blocks (a kernel relying on inter-block timing is wrong
// anyway). Host threads are real, so a data race between threads of a block that
// skips a barrier can show up as a wrong result (not reliably).
#pragma once

#if defined(__CUDACC__)
#error "cuda_emu.h is for host C++ only"
#endif

#include <barrier>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

namespace emu {

struct Warp {
  std::barrier<> meet{32};
  uint64_t slot[32] = {};
};

struct State {
  dim3 grid, block;
  std::unique_ptr<std::barrier<>> block_barrier;
  std::vector<std::unique_ptr<Warp>> warps;
  std::mutex atomic_mu;
};
inline State& state() {
  static State s;
  return s;
}
inline thread_local dim3 t_thread, t_block;
inline thread_local unsigned t_linear = 0;  // x + y * bx + z * bx * by

// Runs kernel(args...) over grid x block as described above; returns when all is done.
template <class Kernel, class... Args>
void launch(dim3 grid, dim3 block, Kernel kernel, Args... args) {
  State& s = state();
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads % 32 != 0 || threads > 1024)
    throw std::invalid_argument("emu::launch: a block of whole warps, at most 1024 threads");
  s.grid = grid;
  s.block = block;
  s.block_barrier = std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(threads));
  s.warps.clear();
  for (unsigned w = 0; w < threads / 32; ++w) s.warps.push_back(std::make_unique<Warp>());
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      t_linear = i;
      t_thread = dim3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
      for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
          for (unsigned bx = 0; bx < grid.x; ++bx) {
            t_block = dim3(bx, by, bz);
            kernel(args...);
            s.block_barrier->arrive_and_wait();
          }
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace emu

#define threadIdx (emu::t_thread)
#define blockIdx (emu::t_block)
#define blockDim (emu::state().block)
#define gridDim (emu::state().grid)

inline void __syncthreads() { emu::state().block_barrier->arrive_and_wait(); }

namespace emu {
// Every lane of the warp posts v, then reads lane source(lane) (its own value when the
// source is outside the warp): the exchange under __shfl_down_sync / __shfl_xor_sync.
template <class T, class Source>
T shuffle(unsigned mask, T v, Source source) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffles move at most 8 bytes");
  if (mask != 0xffffffffu) throw std::invalid_argument("emu: only full-warp shuffles are modelled");
  Warp& w = *state().warps[t_linear / 32];
  const unsigned lane = t_linear % 32;
  std::memcpy(&w.slot[lane], &v, sizeof v);
  w.meet.arrive_and_wait();
  T out = v;
  const unsigned from = source(lane);
  if (from < 32) std::memcpy(&out, &w.slot[from], sizeof out);
  w.meet.arrive_and_wait();  // nobody overwrites a slot before every lane has read
  return out;
}
}  // namespace emu

template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
  return emu::shuffle(mask, v, [delta](unsigned lane) { return lane + delta; });
}

template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask) {
  return emu::shuffle(mask, v, [lane_mask](unsigned lane) { return lane ^ static_cast<unsigned>(lane_mask); });
}

template <class T>
T atomicAdd(T* address, T v) {
  std::lock_guard<std::mutex> g(emu::state().atomic_mu);
  const T old = *address;
  *address = old + v;
  return old;
}

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
