// harness/backends/cuda_dp_comm.h — cuda-dp's replicate and reduce, steps (1) and (6)
// of backends/cuda_dp.cpp: SlotComm broadcasts slot 0's parameters (P floats) to the
// replicas and sums the slots' gradients (P floats each) onto slot 0, through a
// single-process NCCL communicator or peer copies, having enabled peer access
// between the GPUs; device_copy is the stream-ordered copy between two GPUs' memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/backends/cuda_dp_slots.h"
#include "harness/backends/cuda_dp_plan.h"
#include "kernels/cuda/nccl_check.h"

namespace tb::cuda_dp {

// Stream-ordered copy between two GPUs' memory (or within one), on `stream`.
void device_copy(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes, cudaStream_t stream);

// How slot 0 reaches the other slots: the routes of a step over slots [0, used) for
// every `used`, peer access between the GPUs and, built with NCCL, a communicator
// over them. Holds no stream of its own: it enqueues on the slots' streams.
class SlotComm {
 public:
  explicit SlotComm(Slots& slots) : slots_(slots) {}
  SlotComm(const SlotComm&) = delete;
  SlotComm& operator=(const SlotComm&) = delete;

  // Once every slot is set up (slot_ids: the GPU of each, P = params floats): the
  // routes, and with more than one GPU a scratch gradient (P) on slot 0 and the
  // connection of the GPUs (connect_devices).
  void setup(const std::vector<int>& slot_ids, int64_t params);
  // The distinct GPUs, slot 0's first.
  const std::vector<int>& devices() const { return devices_; }

  // Slot 0's parameters to the replicas of slots [1, count) once slot 0's stream has
  // passed `after`: GPU 0 -> each other GPU's leader (ncclBroadcast, or a peer copy),
  // then each leader (slot 0 itself on GPU 0) -> the other slots on its GPU. Joined
  // into slot 0's stream (its `done` events) before it returns.
  void broadcast_params(int count, cudaEvent_t after);

  // The gradients of slots [0, used) summed into slot 0's, once slot 0's stream has
  // passed `after` (every backward done): on each GPU the followers add into their
  // leader (add_inplace on the leader's stream), then the leaders reduce onto GPU 0
  // (ncclReduce, or a peer copy into scratch_ + add on slot 0's stream, leader by
  // leader in slot order). Ends joined into slot 0's stream.
  void reduce_grads(int used, cudaEvent_t after);

 private:
  // Peer access between slot 0's GPU and each other one (for direct peer copies);
  // NCCL over all of them when built with it, every pair of them has peer access, and
  // TB_DP_COMM is not "peer" (which forces the peer-copy path, for tests).
  void connect_devices();
  // Enables from -> to peer access; false when the driver refuses it.
  static bool enable_peer(int from, int to);
  // The leader slot of `device` in route r (a GPU taking part in an NCCL step has one).
  int leader_on(const DpRoute& r, int device) const;

#if defined(TB_HAVE_NCCL)
  struct Comms {  // one communicator per distinct GPU, rank i on devices_[i] (rank 0: slot 0's GPU)
    std::vector<ncclComm_t> comm;
    Comms() = default;
    Comms(const Comms&) = delete;
    Comms& operator=(const Comms&) = delete;
    ~Comms() {
      for (ncclComm_t c : comm) {
        if (c) ncclCommDestroy(c);
      }
    }
  };
#endif

  Slots& slots_;
  std::vector<int> slot_ids_;    // GPU of each slot, as --devices gave them
  std::vector<int> devices_;     // distinct GPUs, slot 0's first
  std::vector<DpRoute> routes_;  // [used]: leaders/followers of slots [0, used)
  std::vector<char> nccl_step_;  // [used]: whether such a step may use the communicator
  int64_t params_ = 0;           // P
  float* scratch_ = nullptr;     // GPU 0 (slot 0's arena): a remote gradient in the peer-copy reduction (P)
#if defined(TB_HAVE_NCCL)
  Comms comms_;                  // destroyed with this, before the slots' streams (the owner's job)
#endif
  bool use_nccl_ = false;
};

}  // namespace tb::cuda_dp
