// harness/backends/cuda_model.h — CudaModel: one GPU's float32 model, the twin of
// CpuModel (harness/backends/cpu_model.h) with the same method names: stream, cuBLAS handle and
// buffers (P params, grads, velocity; activations rows x out_l; deltas rows x max width),
// forward, loss, backward with a per-layer "gradient ready" callback, SGD, evaluation.
// `cuda` = a CudaModel + data placement; cuda-dp's slots are CudaModels.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "harness/backends/cuda_upload.h"
#include "harness/backends/device_arena.h"
#include "harness/backends/cpu_model.h"
#include "harness/ddp_plan.h"
#include "harness/model.h"

namespace tb {

// What a CudaModel holds, in rows.
struct CudaModelSize {
  int64_t rows = 0;        // activations: the most rows one forward() or loss() sees
  int64_t delta_rows = 0;  // backward's deltas: the most rows one backward() sees
  bool replica = false;    // a cuda-dp replica: never updated, never takes a loss (no velocity, no sums)
};

// Device work is enqueued on stream() and never allocates or waits for the device:
// losses and hits accumulate in device memory the caller reads when it synchronises.
// Every method expects the model's GPU to be current (its owner keeps it so); the
// constructor, destructor, read_params() and evaluate_rows() make it current themselves.
class CudaModel {
 public:
  // Creates the stream and cuBLAS handle (TF32 when asked, a fixed workspace: cuBLAS
  // must not allocate inside a step or a graph capture) and allocates every buffer. A
  // constructor that fails part-way releases what it had acquired.
  CudaModel(const ModelSpec& model, int device, const CudaModelSize& size, bool tf32);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  // Device bytes such a model allocates (for a refusal with numbers before allocating).
  static int64_t device_bytes(const ModelSpec& model, const CudaModelSize& size);

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  // This GPU's memory: the model's buffers, and whatever its owner adds beside them
  // (data, staging, losses), counted together for peak_device_mem_bytes.
  DeviceArena& arena() { return arena_; }
  const DeviceArena& arena() const { return arena_; }
  const ParamLayout& layout() const { return layout_; }
  float* params() { return params_; }  // P, device
  const float* params() const { return params_; }
  float* grads() { return grads_; }  // P, device
  const float* grads() const { return grads_; }
  float* delta() { return delta_; }  // dZ_L (delta rows x O): what loss() writes, backward() starts from
  float* output() { return acts_.back(); }  // Z_L, rows x O
  const float* output() const { return acts_.back(); }
  // What a per-row loss is in loss()'s sums: O for MSE (a sum over elements), 1 for cross-entropy.
  double loss_per_row() const;

  // Replaces the parameters (P, from the host) and zeroes the optimizer state; enqueued.
  void set_params(const std::vector<float>& params);
  // The parameters, copied to the host (waits for the stream's work).
  std::vector<float> read_params() const;

  // Activations for layers 1..L from x (count x D): Z = A W^T (GEMM NT), then bias (+ReLU).
  void forward(const float* x, int64_t count);
  // Adds the loss of output() rows [0, count) against b's targets into *sum (MSE: over
  // the count x O elements; cross-entropy: over the rows) and argmax hits into *hits
  // (may be null); writes dZ_L scaled for the mean over a global batch of global_rows
  // into grad (delta(), or elsewhere such as cuda-dp's gathered dZ; null: no gradient).
  void loss(const DeviceBatch& b, int64_t count, int64_t global_rows, float* grad, double* sum,
            unsigned long long* hits);
  // Parameter gradients into grads() from dZ_L: dW = dZ^T A (TN), db = column sums,
  // dA = dZ W (NN) masked by the ReLU. on_layer(l) runs as soon as the gradients of
  // layer l are enqueued — last layer first — so a reducer can start on them. dZ_L is
  // read from delta(), or from dz (count x O) where given.
  void backward(const float* x, int64_t count, const std::function<void(int)>& on_layer = {},
                const float* dz = nullptr);
  // SGD on params() from grads() (velocity kept here).
  void update(const Sgd& sgd);

  // Whether fused_step() applies: one linear layer, regression, and D x O within
  // tb::cuda::linear_mse_step_applies (O <= 16, D <= 2048, O x D <= 8192). As CpuModel's.
  bool has_fused_step() const;
  // forward + loss (into *sum, loss()'s units) + backward of `count` rows of b in one
  // pass over X (kernels/cuda/linear_step.h): the same gradients in grads(), output()
  // and delta() not written. A training step only (not for a cuda-dp replica).
  void fused_step(const DeviceBatch& b, int64_t count, int64_t global_rows, double* sum);

  // --cuda-graph: forward + loss + backward (or fused_step) + update of `count` rows read
  // from b (the whole batch), captured once per input address b.x and replayed. Before the
  // first capture every kernel the graph uses is loaded (tb::cuda::preload_graph_kernels:
  // lazy loading must not load one inside a capture), and before each one eager step lets
  // cuBLAS set up for these shapes. The step's loss sum is written by the graph itself
  // into step_losses[*next_step], and *next_step advanced (both device memory; every graph
  // of this model must be given the same two pointers): no copy follows a replay.
  void graphed_step(const DeviceBatch& b, int64_t count, const Sgd& sgd, double* step_losses,
                    unsigned long long* next_step);

  // Evaluation: the summed loss (loss()'s units) and argmax hits over the rows of every
  // range, read in place from `data` (the rows held on the device from index 0), in
  // chunks of at most kEvalChunk; one synchronisation.
  void evaluate_rows(const DeviceBatch& data, const std::vector<Shard>& ranges, double* loss_sum, int64_t* hits);

 private:
  void acquire(bool tf32);
  void eager_step(const DeviceBatch& b, int64_t count, double* sum);
  void release() noexcept;

  ModelSpec model_;
  ParamLayout layout_;
  int device_;
  CudaModelSize size_;
  DeviceArena arena_;  // frees the buffers after release() (a member: destroyed last)
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  float *params_ = nullptr, *grads_ = nullptr, *velocity_ = nullptr;
  std::vector<float*> acts_;  // [l] rows x layers[l], l = 1..L ([0]: the input, read in place)
  float *delta_ = nullptr, *delta_prev_ = nullptr;
  double* colsum_ws_ = nullptr;  // column_sum's row-slice partials (bias gradients)
  int64_t colsum_ws_elems_ = 0;
  void* step_ws_ = nullptr;  // fused_step's per-block partials (has_fused_step only)
  int64_t step_ws_bytes_ = 0;
  double* sums_ = nullptr;  // [0] an evaluation's loss sum, [1] a graphed step's scratch loss
  unsigned long long* hits_ = nullptr;
  std::map<const float*, cudaGraphExec_t> graphs_;  // --cuda-graph: by input rows
  bool graph_kernels_loaded_ = false;               // preload_graph_kernels() done on this device
};

}  // namespace tb
