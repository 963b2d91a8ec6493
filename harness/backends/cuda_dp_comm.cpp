// harness/backends/cuda_dp_comm.cpp — cuda-dp's parameter broadcast and gradient
// reduction between the slots, and the GPUs' peer access and NCCL communicator
// (see cuda_dp_comm.h).
#include "harness/backends/cuda_dp_comm.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/cuda/axpy.h"
#include "kernels/cuda/check.h"
#include "kernels/error.h"

namespace tb::cuda_dp {

void device_copy(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  if (dst_dev == src_dev) {
    TB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  } else {
    TB_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, stream));
  }
}

void SlotComm::setup(const std::vector<int>& slot_ids, int64_t params) {
  slot_ids_ = slot_ids;
  params_ = params;
  const int G = static_cast<int>(slot_ids_.size());
  routes_.resize(static_cast<size_t>(G) + 1);
  nccl_step_.assign(static_cast<size_t>(G) + 1, 0);
  for (int used = 1; used <= G; ++used) {
    routes_[static_cast<size_t>(used)] = dp_route(slot_ids_, used);
    nccl_step_[static_cast<size_t>(used)] = nccl_step(slot_ids_, used);
  }
  devices_ = distinct_devices(slot_ids_);
  if (devices_.size() > 1) {
    scratch_ = slots_[0].model.arena().alloc<float>(params_);  // peer-copy reduction: one remote gradient at a time
    connect_devices();
  }
}

void SlotComm::broadcast_params(int count, cudaEvent_t after) {
  if (count <= 1) return;
  const DpRoute& r = routes_[static_cast<size_t>(count)];
  const Slot& s0 = slots_[0];
  const size_t bytes = static_cast<size_t>(params_) * sizeof(float);
  for (int l : r.remote_leaders) slots_.wait_on(l, after);
#if defined(TB_HAVE_NCCL)
  if (use_nccl_ && nccl_step_[static_cast<size_t>(count)]) {
    TB_NCCL_CHECK(ncclGroupStart());
    for (size_t i = 0; i < devices_.size(); ++i) {
      const int l = i == 0 ? 0 : leader_on(r, devices_[i]);
      Slot& sl = slots_[l];
      slots_.on(l);
      // In place on every rank: the root (slot 0) sends its buffer, the others receive into theirs.
      TB_NCCL_CHECK(ncclBroadcast(sl.model.params(), sl.model.params(), static_cast<size_t>(params_), ncclFloat, 0,
                                  comms_.comm[i], sl.stream));
    }
    TB_NCCL_CHECK(ncclGroupEnd());
  } else
#endif
  {
    for (int l : r.remote_leaders) {
      Slot& sl = slots_[l];
      slots_.on(l);
      device_copy(sl.model.params(), sl.device, s0.model.params(), s0.device, bytes, sl.stream);
    }
  }
  for (int l : r.remote_leaders) slots_.record_done(l);
  for (int f : r.followers) {
    const int l = r.leader[static_cast<size_t>(f)];
    Slot& sl = slots_[f];
    // A follower on GPU 0 copies from the master once `after` passed; elsewhere once its leader has it.
    if (l == 0) {
      slots_.wait_on(f, after);
    } else {
      slots_.on(f);
      TB_CUDA_CHECK(cudaStreamWaitEvent(sl.stream, slots_[l].done, 0));
    }
    device_copy(sl.model.params(), sl.device, slots_[l].model.params(), sl.device, bytes, sl.stream);
    slots_.record_done(f);
  }
  slots_.join(r.remote_leaders);
  slots_.join(r.followers);
}

void SlotComm::reduce_grads(int used, cudaEvent_t after) {
  if (used <= 1) return;
  const DpRoute& r = routes_[static_cast<size_t>(used)];
  Slot& s0 = slots_[0];
  const int64_t P = params_;
  for (int l : r.remote_leaders) slots_.wait_on(l, after);
  for (int f : r.followers) {
    const int l = r.leader[static_cast<size_t>(f)];
    Slot& lead = slots_[l];
    slots_.on(l);
    cuda::add_inplace(lead.model.grads(), slots_[f].model.grads(), P, lead.stream);
  }
#if defined(TB_HAVE_NCCL)
  if (use_nccl_ && nccl_step_[static_cast<size_t>(used)]) {
    TB_NCCL_CHECK(ncclGroupStart());
    for (size_t i = 0; i < devices_.size(); ++i) {
      const int l = i == 0 ? 0 : leader_on(r, devices_[i]);
      Slot& sl = slots_[l];
      slots_.on(l);
      TB_NCCL_CHECK(ncclReduce(sl.model.grads(), sl.model.grads(), static_cast<size_t>(P), ncclFloat, ncclSum, 0,
                               comms_.comm[i], sl.stream));
    }
    TB_NCCL_CHECK(ncclGroupEnd());
    for (int l : r.remote_leaders) slots_.record_done(l);
    slots_.join(r.remote_leaders);
    return;
  }
#endif
  for (int l : r.remote_leaders) slots_.record_done(l);
  slots_.on(0);
  for (int l : r.remote_leaders) {
    const Slot& sl = slots_[l];
    TB_CUDA_CHECK(cudaStreamWaitEvent(s0.stream, sl.done, 0));
    device_copy(scratch_, s0.device, sl.model.grads(), sl.device, static_cast<size_t>(P) * sizeof(float), s0.stream);
    cuda::add_inplace(s0.model.grads(), scratch_, P, s0.stream);
  }
}

int SlotComm::leader_on(const DpRoute& r, int device) const {
  for (int l : r.remote_leaders) {
    if (slot_ids_[static_cast<size_t>(l)] == device) return l;
  }
  throw Error("cuda-dp: GPU " + std::to_string(device) + " has no slot in this step");
}

void SlotComm::connect_devices() {
  bool peers = true;
  for (int a : devices_) {
    for (int b : devices_) {
      int ok = 1;
      if (a != b) TB_CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, a, b));
      peers = peers && ok;
    }
  }
  const int d0 = devices_[0];
  for (size_t i = 1; i < devices_.size(); ++i) {
    int there = 0, back = 0;
    TB_CUDA_CHECK(cudaDeviceCanAccessPeer(&there, d0, devices_[i]));
    TB_CUDA_CHECK(cudaDeviceCanAccessPeer(&back, devices_[i], d0));
    // Without peer access, peer copies still work, staged through host memory: slower,
    // so say so once rather than let the report show an unexplained gap.
    if (!(there && back && enable_peer(d0, devices_[i]) && enable_peer(devices_[i], d0))) {
      std::fprintf(stderr, "trainbench: cuda-dp: GPUs %d and %d have no peer access: copies between them go through "
                   "host memory\n", d0, devices_[i]);
    }
  }
  const char* env = std::getenv("TB_DP_COMM");
  const bool force_peer = env != nullptr && std::string(env) == "peer";
#if defined(TB_HAVE_NCCL)
  if (peers && !force_peer) {
    comms_.comm.assign(devices_.size(), nullptr);
    TB_NCCL_CHECK(ncclCommInitAll(comms_.comm.data(), static_cast<int>(devices_.size()), devices_.data()));
    use_nccl_ = true;
  }
#else
  (void)peers;
  (void)force_peer;
#endif
}

bool SlotComm::enable_peer(int from, int to) {
  TB_CUDA_CHECK(cudaSetDevice(from));
  const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
  if (err == cudaSuccess) return true;
  // Already enabled is success; any other refusal (e.g. too many peers) leaves the
  // copies staged through the host. Either way clear the error so a later launch
  // check does not report it.
  cudaGetLastError();
  return err == cudaErrorPeerAccessAlreadyEnabled;
}

}  // namespace tb::cuda_dp
