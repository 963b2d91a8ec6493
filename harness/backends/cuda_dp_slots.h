// harness/backends/cuda_dp_slots.h — cuda-dp's replica slots (backends/cuda_dp.cpp):
// Slot = a CudaModel (cuda_model.h) + what DataParallel adds (the event slot 0 waits
// on; on slots k > 0 the scattered input chunk, c = ceil(B/G) rows x D); Slots, the list
// of them (slot 0 first: the master) with the stream ordering between slot 0 and the
// others (phase barriers, joins, waits).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "harness/backends/cuda_model.h"
#include "harness/model.h"

namespace tb::cuda_dp {

// A slot's sizes, in rows and widths.
struct SlotSizes {
  int64_t act_rows = 0;    // activations: c, or on slot 0 the most it gathers or evaluates at once
  int64_t chunk_rows = 0;  // c: rows of backward's deltas and of the scattered chunks
  int64_t d = 0;           // D
  bool master = false;     // slot 0: optimizer state and loss sums; the others get the scattered input chunk
};

// One replica slot. Slot 0's model holds the master parameters, gradients and velocity;
// a slot k > 0 is a replica: its scattered dZ chunk (c x O) lands in model.delta(),
// where backward starts from.
struct Slot {
  // With `device` made current: the model, the `done` event and the input chunk.
  Slot(int device, const ModelSpec& m, bool tf32, const SlotSizes& sizes);
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot();  // the model (a member) releases its stream, handle and memory after this

  CudaModel model;
  int device;                   // model.device()
  cudaStream_t stream;          // model.stream()
  cudaEvent_t done = nullptr;   // recorded after this slot's part of a phase; slot 0's stream waits on it
  float* x = nullptr;           // slots > 0: the scattered input chunk, c x D (model's arena)
};

// The slots of a run in slot order; every per-slot enqueue runs with that slot's GPU current.
class Slots {
 public:
  // A new slot on `device`, appended (one that fails to build releases what it held).
  Slot& add(int device, const ModelSpec& m, bool tf32, const SlotSizes& sizes);
  int size() const { return static_cast<int>(list_.size()); }
  Slot& operator[](int k) { return *list_[static_cast<size_t>(k)]; }
  const Slot& operator[](int k) const { return *list_[static_cast<size_t>(k)]; }

  // Makes slot k's GPU current.
  void on(int k) const;
  // Slot k (> 0) records its `done` event; slot 0's stream will wait for it.
  void record_done(int k);
  // Phase barrier: slot 0's stream waits for slots [1, used), then records `mark`.
  void barrier(int used, cudaEvent_t mark);
  // Slot 0's stream waits for the last `done` of each slot in ks.
  void join(const std::vector<int>& ks);
  // Slot k's stream waits for an event recorded on slot 0's stream (a phase boundary).
  void wait_on(int k, cudaEvent_t e);

 private:
  std::vector<std::unique_ptr<Slot>> list_;
};

}  // namespace tb::cuda_dp
