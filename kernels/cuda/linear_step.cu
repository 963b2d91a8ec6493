// kernels/cuda/linear_step.cu — see linear_step.h; the device code and its geometry
// are linear_step_kernels.cuh (run on the CPU by tests/cuda_emu). B rows, D inputs,
// O outputs. Two launches on `stream`: per-block partials, then their fixed-order sum.
// Pass 1 comes in two sizes of shared memory (O x D up to 1024 or 8192 weights).
#include "kernels/cuda/linear_step.h"

#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/linear_step_kernels.cuh"
#include "kernels/error.h"

namespace tb::cuda {

// ---- launchers (sizes validated) ---------------------------------------------------------
static void launch_linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o,
                                   const float* w, const float* b, float inv_count, float* dw, float* db,
                                   double* loss_sum, void* workspace, cudaStream_t stream) {
  const int64_t blocks = rows == 0 ? 0 : linear_step_blocks(rows, o);
  double* part = static_cast<double*>(workspace);
  if (blocks > 0) {
    const unsigned grid = static_cast<unsigned>(blocks);
    const int64_t per_block = linear_step_rows_per_block(rows, o);
    if (o * d <= kStepSmallWeights) {
      linear_mse_partial_kernel<kStepSmallWeights>
          <<<grid, kStepThreads, 0, stream>>>(x, t, rows, d, o, w, b, inv_count, per_block, part);
    } else {
      linear_mse_partial_kernel<kStepMaxWeights>
          <<<grid, kStepThreads, 0, stream>>>(x, t, rows, d, o, w, b, inv_count, per_block, part);
    }
    TB_CUDA_CHECK_LAUNCH();
  }
  const int64_t width = linear_step_partial_width(d, o);
  const int tile = linear_step_finish_tile(width);
  const dim3 block(static_cast<unsigned>(tile), static_cast<unsigned>(kStepFinishThreads / tile));
  linear_mse_finish_kernel<<<grid_for(width, tile, kStepFinishMaxBlocks), block, 0, stream>>>(part, blocks, d, o, dw,
                                                                                             db, loss_sum);
  TB_CUDA_CHECK_LAUNCH();
}

// ---- public ops ----------------------------------------------------------------------------
[[noreturn]] static void fail(const std::string& what) { throw tb::Error("tb::cuda::linear_mse_step: " + what); }

bool linear_mse_step_applies(int64_t d, int64_t o) { return linear_step_fits(d, o); }

int64_t linear_mse_step_workspace_bytes(int64_t rows, int64_t d, int64_t o) {
  if (rows < 0 || !linear_step_fits(d, o)) return 0;
  return linear_step_workspace_bytes(rows == 0 ? 0 : linear_step_blocks(rows, o), d, o);
}

void linear_mse_step(const float* x, const float* t, int64_t rows, int64_t d, int64_t o, const float* w,
                     const float* b, float inv_count, float* dw, float* db, double* loss_sum, void* workspace,
                     int64_t workspace_bytes, cudaStream_t stream) {
  if (!linear_step_fits(d, o))
    fail("needs 1 <= O <= " + std::to_string(kStepMaxOutputs) + ", 1 <= D <= " + std::to_string(kStepMaxInputs) +
         " and O * D <= " + std::to_string(kStepMaxWeights) + " (got D=" + std::to_string(d) +
         " O=" + std::to_string(o) + ")");
  if (rows < 0) fail("negative size rows = " + std::to_string(rows));
  const int64_t need = linear_mse_step_workspace_bytes(rows, d, o);
  if (workspace_bytes < need)
    fail("workspace of " + std::to_string(workspace_bytes) + " bytes, needs " + std::to_string(need));
  if (w == nullptr || b == nullptr || dw == nullptr || db == nullptr || loss_sum == nullptr)
    fail("w, b, dw, db and loss_sum must not be null");
  if (rows > 0 && (x == nullptr || t == nullptr || workspace == nullptr)) fail("x, t and workspace must not be null");
  launch_linear_mse_step(x, t, rows, d, o, w, b, inv_count, dw, db, loss_sum, workspace, stream);
}

}  // namespace tb::cuda
