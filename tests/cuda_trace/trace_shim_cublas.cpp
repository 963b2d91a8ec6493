// tests/cuda_trace/trace_shim_cublas.cpp — the trace shim's fake cuBLAS: version, handle,
// stream, workspace, math and pointer mode, and Sgemm, recorded with the exact extents
// each GEMM reads and writes (trace_shim_state.h). No GEMM is computed, unless
// TB_FAKE_EXECUTE=1 (trace_shim_exec.h): then Sgemm runs to cuBLAS's column-major contract.
#include <mutex>
#include <string>

#include "trace_shim_exec.h"
#include "trace_shim_state.h"

using namespace tb_trace_shim;

extern "C" {

// A query (no record, no handle needed): the version of the cuBLAS headers the shim was built with.
cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

// A handle holds device memory (its workspaces: TB_FAKE_CUBLAS_MIB); where it does not fit,
// cuBLAS answers CUBLAS_STATUS_ALLOC_FAILED and makes no handle.
cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  std::lock_guard<std::mutex> g(g_mu);
  const size_t ws = mib_knob("TB_FAKE_CUBLAS_MIB", 0);
  if (!charge(t_dev, ws)) {
    *h = nullptr;
    Rec("cublasCreate").kv("bytes", static_cast<long long>(ws)).ret(CUBLAS_STATUS_ALLOC_FAILED).emit();
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  *h = static_cast<cublasHandle_t>(make_handle('B', t_dev));
  handle(*h)->charged = ws;
  Rec("cublasCreate").blas(*h).emit();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cublasDestroy").blas(h).emit();
  if (const Handle* b = handle(h)) release(b->dev, b->charged);
  g_handles.erase(reinterpret_cast<uintptr_t>(h));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cublasSetMathMode").blas(h).kv("mode", static_cast<int>(m)).emit();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cublasSetPointerMode").blas(h).kv("mode", static_cast<int>(m)).emit();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Handle* b = handle(h);
  if (b) {
    b->stream = s;
    b->workspace = nullptr;  // as cuBLAS: setting a stream resets the workspace to the default pool
    b->workspace_bytes = 0;
  }
  Rec("cublasSetStream").blas(h).stream(s).emit();
  return b ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* b = handle(h);
  *s = b ? static_cast<cudaStream_t>(b->stream) : nullptr;
  return b ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* w, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  Handle* b = handle(h);
  if (b) {
    b->workspace = w;
    b->workspace_bytes = bytes;
  }
  Rec("cublasSetWorkspace").blas(h).kv("ptr", ptr_name(w)).kv("bytes", static_cast<long long>(bytes)).emit();
  return b ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                              float* c, int ldc) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* hb = handle(h);
  // Column-major extents: a rows x cols matrix with leading dimension ld spans (cols - 1) * ld + rows floats.
  auto span = [](long long rows, long long cols, long long ld) {
    return rows > 0 && cols > 0 ? static_cast<size_t>(((cols - 1) * ld + rows) * 4) : size_t{0};
  };
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  std::string acc;
  add_access(&acc, access('r', a, na ? span(m, k, lda) : span(k, m, lda)));
  add_access(&acc, access('r', b, nb ? span(k, n, ldb) : span(n, k, ldb)));
  add_access(&acc, access('w', c, span(m, n, ldc)));
  if (hb && hb->workspace) add_access(&acc, access('w', hb->workspace, hb->workspace_bytes));
  Rec("cublasSgemm").blas(h).stream(hb ? static_cast<cudaStream_t>(hb->stream) : nullptr)
      .kv("ws", hb && hb->workspace ? ptr_name(hb->workspace) : "default").kv("ta", int(ta)).kv("tb", int(tb))
      .kv("m", m).kv("n", n).kv("k", k).kv("alpha", std::to_string(*alpha)).kv("a", ptr_name(a)).kv("lda", lda)
      .kv("b", ptr_name(b)).kv("ldb", ldb).kv("beta", std::to_string(*beta)).kv("c", ptr_name(c)).kv("ldc", ldc)
      .acc(acc).emit();
  if (!hb) return CUBLAS_STATUS_NOT_INITIALIZED;
  // Host pointer mode (the only one trainbench sets): alpha and beta are read at the call.
  const float al = *alpha, be = *beta;
  submit(hb->stream, [=] { run_sgemm(!na, !nb, m, n, k, al, a, lda, b, ldb, be, c, ldc); });
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t) { return "fake cuBLAS status (tests/cuda_trace shim)"; }

}  // extern "C"
