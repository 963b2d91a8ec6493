// harness/backends/cuda_dp_slots.cpp — cuda-dp's Slot construction and teardown, and
// the stream ordering between the slots (see cuda_dp_slots.h).
#include "harness/backends/cuda_dp_slots.h"

#include "kernels/cuda/check.h"

namespace tb::cuda_dp {

Slot::Slot(int dev, const ModelSpec& m, bool tf32, const SlotSizes& sizes)
    : model(m, dev, CudaModelSize{sizes.act_rows, sizes.chunk_rows, !sizes.master}, tf32), device(dev),
      stream(model.stream()) {
  if (!sizes.master) x = model.arena().alloc<float>(sizes.chunk_rows * sizes.d);
  TB_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));  // last: nothing after it can fail
}

Slot::~Slot() {
  cudaSetDevice(device);
  TB_CUDA_WARN(cudaStreamSynchronize(stream));
  if (done) TB_CUDA_WARN(cudaEventDestroy(done));
}

Slot& Slots::add(int device, const ModelSpec& m, bool tf32, const SlotSizes& sizes) {
  list_.push_back(std::make_unique<Slot>(device, m, tf32, sizes));
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
