// harness/backends/cuda_dp_slots.h — cuda-dp's replica slots (backends/cuda_dp.cpp):
// Slot, one replica's GPU, stream, cuBLAS handle and buffers (P parameters, c =
// ceil(B/G) rows per chunk, D in, O out), with its setup; and Slots, the list of
// them (slot 0 first: the master), with the stream ordering between slot 0 and the
// others (each slot's `done` event, phase barriers, joins, waits).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "harness/backends/device_arena.h"
#include "harness/model.h"

namespace tb::cuda_dp {

// What Slot::setup allocates, in rows and widths.
struct SlotSizes {
  int64_t params = 0;      // P
  int64_t act_rows = 0;    // rows of the activations: c, or on slot 0 the most it gathers or evaluates at once
  int64_t chunk_rows = 0;  // c: rows of backward's deltas and of the scattered chunks
  int64_t d = 0, o = 0;    // D, O
  bool scattered = false;  // slots k > 0: room for the scattered input (c x D) and dZ (c x O) chunks
};

// One replica slot: its GPU, stream, cuBLAS handle and buffers (rows: c for slots
// k > 0; slot 0's activations also hold the gathered B x O output and evaluation chunks).
struct Slot {
  explicit Slot(int dev) : device(dev), arena(dev) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot();  // arena (a member) frees the buffers after this, with `device` still current

  // With `device` current: creates the stream, the `done` event and the cuBLAS handle
  // (TF32 when asked; its stream, then a fixed workspace) and allocates the buffers.
  void setup(const ModelSpec& m, bool tf32, const SlotSizes& sizes);

  int device;
  DeviceArena arena;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaEvent_t done = nullptr;   // recorded after this slot's part of a phase; slot 0's stream waits on it
  float* params = nullptr;      // slot 0: the master parameters (P); others: the replica
  float* grads = nullptr;       // P
  std::vector<float*> acts;     // [l] rows x layers[l], l = 1..L
  float* delta = nullptr;       // c x max width: backward's ping-pong buffers
  float* delta_prev = nullptr;
  float* x = nullptr;           // slots > 0: the scattered input chunk, c x D
  float* dz = nullptr;          // slots > 0: the scattered dZ chunk, c x O
};

// The slots of a run in slot order; every per-slot enqueue runs with that slot's GPU current.
class Slots {
 public:
  // A new slot on `device`, appended; set it up next (a half set-up slot is released cleanly).
  Slot& add(int device);
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
