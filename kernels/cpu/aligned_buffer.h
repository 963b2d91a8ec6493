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
