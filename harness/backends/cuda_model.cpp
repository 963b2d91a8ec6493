// harness/backends/cuda_model.cpp — see cuda_model.h. The same math as CpuModel
// (harness/cpu_model.cpp) on one GPU's stream: per step on B rows, forward Z_l =
// A_{l-1} W_l^T (cuBLAS NT) with bias and ReLU fused; loss and dZ_L fused; backward
// dW_l = dZ_l^T A_{l-1} (TN), db_l = column sums, dA_{l-1} = dZ_l W_l (NN) masked by the ReLU.
// Linear regression within tb::cuda::linear_mse_step_applies takes the fused one-pass
// step instead (fused_step), as CpuModel does.
#include "harness/backends/cuda_model.h"

#include <algorithm>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/linear_step.h"
#include "kernels/cuda/step_loss.h"

namespace tb {
namespace {

// cuBLAS's fixed workspace: it must not allocate while a CUDA graph is captured.
constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;

bool fused_applies(const ModelSpec& m) {
  return m.num_layers() == 1 && m.task == Task::kRegression && cuda::linear_mse_step_applies(m.in_dim(), m.out_dim());
}

// column_sum's workspace for every layer's bias gradient at up to `rows` rows (doubles).
int64_t column_sum_elems(const ModelSpec& m, int64_t rows) {
  int64_t most = 0;
  for (size_t l = 1; l < m.layers.size(); ++l)
    most = std::max(most, cuda::column_sum_workspace_elems(rows, m.layers[l]));
  return most;
}

// fused_step's workspace (bytes; 0 where it does not apply or on a replica).
int64_t fused_step_bytes(const ModelSpec& m, const CudaModelSize& size) {
  if (size.replica || !fused_applies(m)) return 0;
  return cuda::linear_mse_step_workspace_bytes(std::max(size.rows, size.delta_rows), m.in_dim(), m.out_dim());
}

}  // namespace

CudaModel::CudaModel(const ModelSpec& model, int device, const CudaModelSize& size, bool tf32)
    : model_(model), layout_(make_layout(model)), device_(device), size_(size), arena_(device) {
  try {
    acquire(tf32);
  } catch (...) {
    release();  // a constructor that throws gets no destructor call
    throw;
  }
}

CudaModel::~CudaModel() { release(); }

int64_t CudaModel::device_bytes(const ModelSpec& m, const CudaModelSize& size) {
  const int64_t P = make_layout(m).total;
  int64_t floats = (size.replica ? 2 : 3) * P + 2 * size.delta_rows * m.max_width();
  for (size_t l = 1; l < m.layers.size(); ++l) floats += size.rows * m.layers[l];
  return floats * 4 + column_sum_elems(m, size.delta_rows) * 8 + fused_step_bytes(m, size) + kCublasWorkspaceBytes;
}

void CudaModel::acquire(bool tf32) {
  TB_CUDA_CHECK(cudaSetDevice(device_));
  TB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  TB_CUBLAS_CHECK(cublasCreate(&cublas_));
  cuda::set_tf32(cublas_, tf32);
  // cublasSetStream resets the workspace, so the stream is set first (and
  // tb::cuda::gemm only calls it again when the stream changes, which it never does).
  TB_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  TB_CUBLAS_CHECK(cublasSetWorkspace(cublas_, arena_.alloc<char>(kCublasWorkspaceBytes), kCublasWorkspaceBytes));
  params_ = arena_.alloc<float>(layout_.total);
  grads_ = arena_.alloc<float>(layout_.total);
  if (!size_.replica) velocity_ = arena_.alloc<float>(layout_.total);
  acts_.assign(model_.layers.size(), nullptr);
  for (size_t l = 1; l < model_.layers.size(); ++l) acts_[l] = arena_.alloc<float>(size_.rows * model_.layers[l]);
  delta_ = arena_.alloc<float>(size_.delta_rows * model_.max_width());
  delta_prev_ = arena_.alloc<float>(size_.delta_rows * model_.max_width());
  colsum_ws_elems_ = column_sum_elems(model_, size_.delta_rows);
  if (colsum_ws_elems_ > 0) colsum_ws_ = arena_.alloc<double>(colsum_ws_elems_);
  step_ws_bytes_ = fused_step_bytes(model_, size_);
  if (step_ws_bytes_ > 0) step_ws_ = arena_.alloc<char>(step_ws_bytes_);
  if (!size_.replica) {
    sums_ = arena_.alloc<double>(2);
    hits_ = arena_.alloc<unsigned long long>(1);
  }
}

// Everything acquire() got, however far it went (the arena frees the memory after).
void CudaModel::release() noexcept {
  cudaSetDevice(device_);
  // After an error mid-epoch queued work may still use the buffers: drain the stream first.
  if (stream_) TB_CUDA_WARN(cudaStreamSynchronize(stream_));
  for (const auto& [input, g] : graphs_) {
    if (g) TB_CUDA_WARN(cudaGraphExecDestroy(g));
  }
  graphs_.clear();
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) TB_CUDA_WARN(cudaStreamDestroy(stream_));
  cublas_ = nullptr;
  stream_ = nullptr;
}

double CudaModel::loss_per_row() const {
  return model_.task == Task::kClassification ? 1.0 : static_cast<double>(model_.out_dim());
}

void CudaModel::set_params(const std::vector<float>& params) {
  TB_CUDA_CHECK(cudaMemcpyAsync(params_, params.data(), params.size() * sizeof(float), cudaMemcpyHostToDevice,
                                stream_));
  if (velocity_) TB_CUDA_CHECK(cudaMemsetAsync(velocity_, 0, params.size() * sizeof(float), stream_));
}

std::vector<float> CudaModel::read_params() const {
  TB_CUDA_CHECK(cudaSetDevice(device_));
  std::vector<float> p(static_cast<size_t>(layout_.total));
  TB_CUDA_CHECK(cudaMemcpy(p.data(), params_, p.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return p;
}

void CudaModel::forward(const float* x, int64_t count) {
  const int L = model_.num_layers();
  for (int l = 0; l < L; ++l) {
    const LayerView& v = layout_.layers[static_cast<size_t>(l)];
    const float* a = l == 0 ? x : acts_[static_cast<size_t>(l)];
    float* z = acts_[static_cast<size_t>(l) + 1];
    cuda::gemm(cublas_, false, true, count, v.out, v.in, 1.0f, a, v.in, params_ + v.w_offset, v.in, 0.0f, z, v.out,
               stream_);
    cuda::bias_act_forward(z, params_ + v.b_offset, count, v.out, l + 1 < L, stream_);
  }
}

void CudaModel::loss(const DeviceBatch& b, int64_t count, int64_t global_rows, float* grad, double* sum,
                     unsigned long long* hits) {
  const int64_t O = model_.out_dim();
  if (model_.task == Task::kRegression) {
    cuda::mse_loss_grad(output(), b.y, count, O, 1.0f / static_cast<float>(global_rows * O), grad, sum, stream_);
  } else {
    cuda::softmax_xent_loss_grad(output(), b.labels, count, O, 1.0f / static_cast<float>(global_rows), grad, sum,
                                 hits, stream_);
  }
}

void CudaModel::backward(const float* x, int64_t count, const std::function<void(int)>& on_layer, const float* dz) {
  // dZ_l ping-pongs between the two delta buffers, starting with the one dz_L is not in.
  const float* d = dz ? dz : delta_;
  float* spare[2] = {dz ? delta_ : delta_prev_, dz ? delta_prev_ : delta_};
  int next = 0;
  for (int l = model_.num_layers() - 1; l >= 0; --l) {
    const LayerView& v = layout_.layers[static_cast<size_t>(l)];
    const float* a = l == 0 ? x : acts_[static_cast<size_t>(l)];
    cuda::gemm(cublas_, true, false, v.out, v.in, count, 1.0f, d, v.out, a, v.in, 0.0f, grads_ + v.w_offset, v.in,
               stream_);
    cuda::column_sum(d, count, v.out, grads_ + v.b_offset, colsum_ws_, colsum_ws_elems_, stream_);
    if (on_layer) on_layer(l);
    if (l == 0) break;
    float* dp = spare[next];
    next ^= 1;
    cuda::gemm(cublas_, false, false, count, v.in, v.out, 1.0f, d, v.out, params_ + v.w_offset, v.in, 0.0f, dp, v.in,
               stream_);
    cuda::relu_backward(dp, a, count, v.in, stream_);
    d = dp;
  }
}

void CudaModel::update(const Sgd& sgd) {
  cuda::sgd_update(params_, grads_, velocity_, layout_.total, sgd.lr, sgd.momentum, sgd.weight_decay, stream_);
}

// Gradients of `count` rows (the whole batch) into grads(), the loss into *sum.
void CudaModel::eager_step(const DeviceBatch& b, int64_t count, double* sum) {
  if (has_fused_step()) return fused_step(b, count, count, sum);
  forward(b.x, count);
  loss(b, count, count, delta_, sum, nullptr);
  backward(b.x, count);
}

bool CudaModel::has_fused_step() const { return step_ws_bytes_ > 0; }

void CudaModel::fused_step(const DeviceBatch& b, int64_t count, int64_t global_rows, double* sum) {
  const LayerView& v = layout_.layers[0];
  const float inv = 1.0f / static_cast<float>(global_rows * v.out);
  cuda::linear_mse_step(b.x, b.y, count, v.in, v.out, params_ + v.w_offset, params_ + v.b_offset, inv,
                        grads_ + v.w_offset, grads_ + v.b_offset, sum, step_ws_, step_ws_bytes_, stream_);
}

void CudaModel::graphed_step(const DeviceBatch& b, int64_t count, const Sgd& sgd, double* step_losses,
                             unsigned long long* next_step) {
  double* scratch = sums_ + 1;
  cudaGraphExec_t& exec = graphs_[b.x];
  if (!exec) {
    // The SGD update never runs eagerly before a capture (it would change the
    // parameters), so without this its kernel would first load inside the capture.
    if (!graph_kernels_loaded_) {
      cuda::preload_graph_kernels();
      graph_kernels_loaded_ = true;
    }
    // One eager forward + loss + backward first (as PyTorch advises before capture):
    // cuBLAS has chosen and set up its algorithms for these shapes before the capture
    // begins, so nothing capture-unsafe happens inside it. It writes only scratch
    // (activations, deltas, gradients, the scratch loss, which the graph zeroes again);
    // the parameters change only in replays.
    eager_step(b, count, scratch);
    cudaGraph_t graph = nullptr;
    TB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      TB_CUDA_CHECK(cudaMemsetAsync(scratch, 0, sizeof(double), stream_));
      eager_step(b, count, scratch);
      update(sgd);
      cuda::append_step_loss(scratch, step_losses, next_step, stream_);
    } catch (...) {
      // Leave the stream out of capture mode, or release()'s synchronisation (and
      // every later use of the stream) fails with a second, confusing error.
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(stream_, &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
      cudaGetLastError();
      throw;
    }
    TB_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    TB_CUDA_WARN(cudaGraphDestroy(graph));
    TB_CUDA_CHECK(inst);
  }
  TB_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
}

void CudaModel::evaluate_rows(const DeviceBatch& data, const std::vector<Shard>& ranges, double* loss_sum,
                              int64_t* hits) {
  TB_CUDA_CHECK(cudaSetDevice(device_));
  const int64_t D = model_.in_dim(), O = model_.out_dim();
  double* sum = sums_;
  TB_CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(double), stream_));
  TB_CUDA_CHECK(cudaMemsetAsync(hits_, 0, sizeof(unsigned long long), stream_));
  const int64_t chunk = std::min(kEvalChunk, size_.rows);
  for (const Shard& r : ranges) {
    for (int64_t r0 = r.begin; r0 < r.end; r0 += chunk) {
      const int64_t cnt = std::min(chunk, r.end - r0);
      const DeviceBatch b = rows_from(data.x, data.y, data.labels, r0, D, O);
      forward(b.x, cnt);
      loss(b, cnt, cnt, nullptr, sum, hits_);
    }
  }
  unsigned long long h = 0;
  TB_CUDA_CHECK(cudaMemcpyAsync(loss_sum, sum, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  TB_CUDA_CHECK(cudaMemcpyAsync(&h, hits_, sizeof h, cudaMemcpyDeviceToHost, stream_));
  TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  *hits = static_cast<int64_t>(h);
}

}  // namespace tb
