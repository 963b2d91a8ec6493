// kernels/cpu/aligned_buffer.h — a 64-byte aligned float buffer that only grows, for
// the per-step scratch of the CPU kernels: steady-state steps never allocate, and
// whole cache lines / zmm loads start at its first float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace tb::cpu {

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  ~Buffer() { ::operator delete(p_, std::align_val_t{64}); }
  float* data() const { return p_; }
  int64_t size() const { return static_cast<int64_t>(n_); }  // floats allocated
  // At least n floats that start 2 KiB (half a page) from `from` modulo 4 KiB, 64-byte
  // aligned, inside a buffer of n + kApartSlack floats. Why: a load waits for an older
  // store to the same address bits 0-11 ("4K aliasing"), so a loop that stores into this
  // buffer in step with loads from `from` (dW rows beside x rows, 64 bytes a step) stalls
  // on every load when the two pointers' page offsets lie within a few lines of each other,
  // as two buffers from separate mmap'd allocations often do (docs/performance.md, issue #18).
  static constexpr int64_t kApartSlack = 1024;
  float* get_apart(int64_t n, const void* from) {
    float* p = get(n + kApartSlack);
    const uintptr_t gap = (reinterpret_cast<uintptr_t>(from) + 2048 - reinterpret_cast<uintptr_t>(p)) & 4095;
    return p + (gap + 63) / 64 * 16;  // at most 1024 floats on
  }
  // At least n floats; the contents are undefined after a growth.
  float* get(int64_t n) {
    if (static_cast<size_t>(n) > n_) {
      ::operator delete(p_, std::align_val_t{64});
      p_ = nullptr;  // stays valid if the allocation throws
      n_ = 0;
      p_ = static_cast<float*>(::operator new(static_cast<size_t>(n) * sizeof(float), std::align_val_t{64}));
      n_ = static_cast<size_t>(n);
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace tb::cpu
