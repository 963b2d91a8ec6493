// harness/backends/cuda_dp_slots.cpp — cuda-dp's Slot setup and teardown, and the
// stream ordering between the slots (see cuda_dp_slots.h).
#include "harness/backends/cuda_dp_slots.h"

#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm.h"

namespace tb::cuda_dp {
namespace {

constexpr int64_t kWorkspaceBytes = 32 << 20;  // per slot: cuBLAS never allocates inside a step

}  // namespace

Slot::~Slot() {
  cudaSetDevice(device);
  if (stream) TB_CUDA_WARN(cudaStreamSynchronize(stream));
  if (done) TB_CUDA_WARN(cudaEventDestroy(done));
  if (cublas) cublasDestroy(cublas);
  if (stream) TB_CUDA_WARN(cudaStreamDestroy(stream));
}

void Slot::setup(const ModelSpec& m, bool tf32, const SlotSizes& sizes) {
  TB_CUDA_CHECK(cudaSetDevice(device));
  TB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  TB_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  TB_CUBLAS_CHECK(cublasCreate(&cublas));
  cuda::set_tf32(cublas, tf32);
  TB_CUBLAS_CHECK(cublasSetStream(cublas, stream));  // before the workspace: setting a stream resets it
  TB_CUBLAS_CHECK(cublasSetWorkspace(cublas, arena.alloc<char>(kWorkspaceBytes), kWorkspaceBytes));
  params = arena.alloc<float>(sizes.params);
  grads = arena.alloc<float>(sizes.params);
  acts.assign(m.layers.size(), nullptr);
  for (size_t l = 1; l < m.layers.size(); ++l) acts[l] = arena.alloc<float>(sizes.act_rows * m.layers[l]);
  delta = arena.alloc<float>(sizes.chunk_rows * m.max_width());
  delta_prev = arena.alloc<float>(sizes.chunk_rows * m.max_width());
  if (sizes.scattered) {
    x = arena.alloc<float>(sizes.chunk_rows * sizes.d);
    dz = arena.alloc<float>(sizes.chunk_rows * sizes.o);
  }
}

Slot& Slots::add(int device) {
  list_.push_back(std::make_unique<Slot>(device));
  return *list_.back();
}

void Slots::on(int k) const { TB_CUDA_CHECK(cudaSetDevice((*this)[k].device)); }

void Slots::record_done(int k) {
  on(k);
  TB_CUDA_CHECK(cudaEventRecord((*this)[k].done, (*this)[k].stream));
}

void Slots::barrier(int used, cudaEvent_t mark) {
  on(0);
  cudaStream_t s0 = (*this)[0].stream;
  for (int k = 1; k < used; ++k) TB_CUDA_CHECK(cudaStreamWaitEvent(s0, (*this)[k].done, 0));
  TB_CUDA_CHECK(cudaEventRecord(mark, s0));
}

void Slots::join(const std::vector<int>& ks) {
  on(0);
  for (int k : ks) TB_CUDA_CHECK(cudaStreamWaitEvent((*this)[0].stream, (*this)[k].done, 0));
}

void Slots::wait_on(int k, cudaEvent_t e) {
  on(k);
  TB_CUDA_CHECK(cudaStreamWaitEvent((*this)[k].stream, e, 0));
}

}  // namespace tb::cuda_dp
