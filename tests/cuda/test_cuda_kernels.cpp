// tests/cuda/test_cuda_kernels.cpp — the CUDA kernels (tb::cuda, kernels/cuda/)
// against their CPU twins (tb::cpu) on fresh random data (B rows, N columns, K
// classes; GEMM M x N = (M x K)(K x N)). Binary tb_tests_cuda, ctest label "cuda".
// The CudaKernels fixture skips with the CUDA error string when no device is usable;
// the CudaChecks tests need no device (error-macro formatting, argument validation)
// and always run. Tolerances are stated per test.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu/axpy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"
#include "kernels/cuda/axpy.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/linear_step.h"
#include "kernels/error.h"
#include "kernels/scalar_math.h"
#include "tests/cuda/gpu_gate.h"
#include "tests/random_vec.h"

namespace tb::cuda {
namespace {

constexpr double kU = 1.0 / (1 << 24);  // float32 unit roundoff

// ---- always-running checks (no device needed) ---------------------------------------

// The message must say where (file:line, function), what (the statement) and why.
TEST(CudaChecks, CudaCheckMessageHasWhereWhatAndWhy) {
  int line = 0;
  try {
    line = __LINE__ + 1;
    TB_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "TB_CUDA_CHECK did not throw";
  } catch (const tb::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("test_cuda_kernels.cpp:" + std::to_string(line) + " "), std::string::npos) << msg;
    EXPECT_NE(msg.find("TestBody"), std::string::npos) << msg;  // __func__ of the test
    EXPECT_NE(msg.find(": cudaErrorInvalidValue failed: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(TB_CUDA_CHECK(cudaSuccess));
}

TEST(CudaChecks, CublasCheckMessageNamesTheStatus) {
  int line = 0;
  try {
    line = __LINE__ + 1;
    TB_CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "TB_CUBLAS_CHECK did not throw";
  } catch (const tb::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("test_cuda_kernels.cpp:" + std::to_string(line) + " "), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUBLAS_STATUS_INVALID_VALUE failed: CUBLAS_STATUS_INVALID_VALUE ("), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(TB_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
}

TEST(CudaChecks, EveryCublasStatusHasItsName) {
  const std::pair<cublasStatus_t, const char*> all[] = {
      {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS"},
      {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED"},
      {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
      {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH"},
      {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR"},
      {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED"},
      {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
      {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR"},
  };
  for (const auto& [status, name] : all)
    EXPECT_EQ(std::string(cublas_status_string(status)).rfind(std::string(name) + " (", 0), 0u)
        << cublas_status_string(status);
  EXPECT_NE(cublas_status_string(static_cast<cublasStatus_t>(999)), nullptr);
}

TEST(CudaChecks, WarnPrintsAndDoesNotThrow) {
  testing::internal::CaptureStderr();
  EXPECT_NO_THROW(TB_CUDA_WARN(cudaErrorInvalidValue));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cudaErrorInvalidValue failed: "), std::string::npos) << err;
  EXPECT_NE(err.find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << err;
}

// Validation happens before any CUDA call, so it is testable without a device. Each
// message must name the op and the offending argument (a launch failure on a machine
// without a GPU would also throw tb::Error, but not with these words).
template <class Fn>
void expect_error(Fn fn, const std::string& words) {
  try {
    fn();
    ADD_FAILURE() << "no tb::Error (expected one containing \"" << words << "\")";
  } catch (const tb::Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(CudaChecks, OpsRejectBadArgumentsBeforeTouchingTheDevice) {
  float f = 0.0f;
  double d = 0.0;
  int32_t label = 0;
  int64_t row = 0;
  float* const null_f = nullptr;
  cudaStream_t s = nullptr;
  expect_error([&] { gemm(nullptr, false, false, -1, 2, 2, 1.0f, &f, 2, &f, 2, 0.0f, &f, 2, s); },
               "tb::cuda::gemm: negative dimension m=-1");
  expect_error([&] { gemm(nullptr, false, false, int64_t{1} << 31, 1, 1, 1.0f, &f, 1, &f, 1, 0.0f, &f, 1, s); },
               "m = 2147483648 does not fit");
  expect_error([&] { gemm(nullptr, false, false, 2, 3, 4, 1.0f, &f, 4, &f, 3, 0.0f, &f, 2, s); },
               "ldc = 2 is smaller than the row length 3");
  expect_error([&] { gemm(nullptr, true, false, 2, 3, 4, 1.0f, &f, 1, &f, 3, 0.0f, &f, 3, s); },
               "lda = 1 is smaller than the row length 2");
  expect_error([&] { gemm(nullptr, false, true, 2, 3, 4, 1.0f, &f, 4, &f, 3, 0.0f, &f, 3, s); },
               "ldb = 3 is smaller than the row length 4");
  expect_error([&] { gemm(nullptr, false, false, 2, 3, 4, 1.0f, &f, 4, &f, 3, 0.0f, &f, 3, s); },
               "cuBLAS handle is null");
  expect_error([&] { set_tf32(nullptr, true); }, "tb::cuda::set_tf32: cuBLAS handle is null");
  expect_error([&] { bias_act_forward(&f, &f, -1, 3, true, s); },
               "tb::cuda::bias_act_forward: negative size rows = -1");
  expect_error([&] { bias_act_forward(null_f, &f, 2, 3, true, s); }, "bias_act_forward: z is null");
  expect_error([&] { relu_backward(&f, nullptr, 2, 3, s); }, "relu_backward: a is null");
  expect_error([&] { column_sum(&f, 2, -3, &f, nullptr, 0, s); }, "column_sum: negative size");
  expect_error([&] { column_sum(&f, 2, 3, nullptr, nullptr, 0, s); }, "column_sum: db is null");
  expect_error([&] { column_sum(&f, 1 << 20, 1, &f, &d, 1, s); },
               "column_sum: workspace of 1 doubles, 1048576 x 1 needs 256");
  expect_error([&] { column_sum(&f, 1 << 20, 1, &f, nullptr, 256, s); }, "column_sum: workspace is null");
  expect_error([&] { linear_mse_step(&f, &f, 4, 64, 17, &f, &f, 1.0f, &f, &f, &d, &f, 1 << 20, s); },
               "linear_mse_step: needs 1 <= O <= 16, 1 <= D <= 2048 and O * D <= 8192 (got D=64 O=17)");
  expect_error([&] { linear_mse_step(&f, &f, 4, 4096, 1, &f, &f, 1.0f, &f, &f, &d, &f, 1 << 20, s); },
               "(got D=4096 O=1)");
  expect_error([&] { linear_mse_step(&f, &f, 4, 8, 2, &f, &f, 1.0f, &f, &f, &d, &f, 8, s); },
               "linear_mse_step: workspace of 8 bytes, needs");
  expect_error([&] { linear_mse_step(&f, &f, 4, 8, 2, &f, &f, 1.0f, &f, &f, nullptr, &f, 1 << 20, s); },
               "must not be null");
  expect_error([&] { mse_loss_grad(&f, &f, 2, 3, 1.0f, &f, nullptr, s); }, "mse_loss_grad: loss_sum is null");
  expect_error([&] { mse_loss_grad(&f, &f, INT64_MAX, 3, 1.0f, &f, &d, s); }, "rows * cols overflows");
  expect_error([&] { softmax_xent_loss_grad(&f, &label, 2, 0, 1.0f, &f, &d, nullptr, s); },
               "softmax_xent_loss_grad: k = 0 is outside");
  expect_error([&] { softmax_xent_loss_grad(&f, &label, 2, int64_t{1} << 31, 1.0f, &f, &d, nullptr, s); },
               "k = 2147483648 is outside");
  expect_error([&] { softmax_xent_loss_grad(&f, nullptr, 2, 3, 1.0f, &f, &d, nullptr, s); },
               "softmax_xent_loss_grad: labels is null");
  expect_error([&] { sgd_update(&f, &f, nullptr, 4, 0.1f, 0.9f, 0.0f, s); }, "needs a momentum buffer v");
  expect_error([&] { sgd_update(&f, &f, &f, -4, 0.1f, 0.9f, 0.0f, s); }, "sgd_update: negative size n = -4");
  expect_error([&] { gather_rows(&f, nullptr, 2, 3, &f, s); }, "gather_rows: rows is null");
  expect_error([&] { gather_labels(&label, &row, 2, nullptr, s); }, "gather_labels: dst is null");

  // Empty shapes are no-ops that touch nothing (null pointers included).
  EXPECT_NO_THROW(gemm(nullptr, false, false, 0, 3, 4, 1.0f, nullptr, 4, nullptr, 3, 0.0f, nullptr, 3, s));
  EXPECT_NO_THROW(bias_act_forward(nullptr, nullptr, 0, 3, true, s));
  EXPECT_NO_THROW(relu_backward(nullptr, nullptr, 5, 0, s));
  EXPECT_NO_THROW(column_sum(nullptr, 5, 0, nullptr, nullptr, 0, s));
  EXPECT_NO_THROW(mse_loss_grad(nullptr, nullptr, 0, 3, 1.0f, nullptr, nullptr, s));
  EXPECT_NO_THROW(softmax_xent_loss_grad(nullptr, nullptr, 0, 10, 1.0f, nullptr, nullptr, nullptr, s));
  EXPECT_NO_THROW(sgd_update(nullptr, nullptr, nullptr, 0, 0.1f, 0.9f, 0.0f, s));
  EXPECT_NO_THROW(gather_rows(nullptr, nullptr, 0, 3, nullptr, s));
  EXPECT_NO_THROW(gather_labels(nullptr, nullptr, 0, nullptr, s));
}

// ---- device fixture ----------------------------------------------------------------------

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    TB_GPU_TEST_GATE();
    TB_CUDA_CHECK(cudaSetDevice(0));
    TB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TB_CUBLAS_CHECK(cublasCreate(&handle_));
    set_tf32(handle_, false);
  }
  void TearDown() override {
    if (handle_ != nullptr && cublasDestroy(handle_) != CUBLAS_STATUS_SUCCESS) ADD_FAILURE() << "cublasDestroy";
    if (stream_ != nullptr) TB_CUDA_WARN(cudaStreamDestroy(stream_));
  }
  void sync() { TB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

// Fresh random data per call site: U(lo, hi), never exact zeros in practice.
using tb::test::random_vec;

struct Dims {
  int64_t rows, cols;
};
// Odd shapes, the suite's shapes, and one beyond the elementwise grid cap
// (8192 blocks x 256 threads = 2M elements), so the grid-stride loops wrap.
const std::vector<Dims> kDims = {{1, 1}, {3, 7}, {17, 129}, {256, 10}, {256, 256}, {1000, 70}, {2048, 1100}};

// ---- GEMM ---------------------------------------------------------------------------------

struct GemmCase {
  bool ta, tb;
  int64_t m, n, k, pad;
  float alpha, beta;
  bool c_nan;
};

// Runs tb::cuda::gemm and tb::cpu::gemm on the same operands and checks each against
// the double reference with the fp32 bound of tests/kernels/test_gemm_cpu.cpp,
//   |C - ref| <= (K + 8) 2^-23 (|alpha| sum_p |a_ip b_pj| + |beta C0_ij|)   (x tf32_scale),
// rigorous for any summation order (cuBLAS may split K). With TF32 each operand keeps
// 10 mantissa bits (relative error <= 2^-10 if truncated, 2^-11 if rounded), so each
// product is off by <= ~2^-9 relative: tf32 adds 2^-8 * scale (twice that). C's
// padding must stay untouched.
void check_gemm(cublasHandle_t handle, cudaStream_t stream, const GemmCase& tc, uint32_t seed, bool tf32) {
  SCOPED_TRACE(std::string(tc.ta ? "T" : "N") + (tc.tb ? "T" : "N") + " m=" + std::to_string(tc.m) +
               " n=" + std::to_string(tc.n) + " k=" + std::to_string(tc.k) + " pad=" + std::to_string(tc.pad) +
               " alpha=" + std::to_string(tc.alpha) + " beta=" + std::to_string(tc.beta) + (tc.c_nan ? " C=NaN" : "") +
               (tf32 ? " tf32" : " fp32"));
  const int64_t m = tc.m, n = tc.n, k = tc.k;
  const int64_t a_rows = tc.ta ? k : m, a_cols = tc.ta ? m : k;
  const int64_t b_rows = tc.tb ? n : k, b_cols = tc.tb ? k : n;
  const int64_t lda = a_cols + tc.pad, ldb = b_cols + tc.pad, ldc = n + tc.pad;
  const std::vector<float> a = random_vec(std::max<int64_t>(a_rows * lda, 1), seed);
  const std::vector<float> b = random_vec(std::max<int64_t>(b_rows * ldb, 1), seed + 1);
  std::vector<float> c0 = random_vec(m * ldc, seed + 2);
  constexpr float kSentinel = 12345.0f;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j)
      if (j >= n) {
        c0[i * ldc + j] = kSentinel;
      } else if (tc.c_nan) {
        c0[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
      }

  DeviceBuffer<float> da(a, stream), db(b, stream), dc(c0, stream);
  gemm(handle, tc.ta, tc.tb, m, n, k, tc.alpha, da.get(), lda, db.get(), ldb, tc.beta, dc.get(), ldc, stream);
  TB_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> gpu = dc.download();
  std::vector<float> cpu = c0;
  tb::cpu::gemm(tc.ta, tc.tb, m, n, k, tc.alpha, a.data(), lda, b.data(), ldb, tc.beta, cpu.data(), ldc);

  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const int64_t e = i * ldc + j;
      if (j >= n) {
        if (gpu[e] != kSentinel && failures++ < 5) ADD_FAILURE() << "padding C(" << i << "," << j << ") written";
        continue;
      }
      double dot = 0.0, mag = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = tc.ta ? a[p * lda + i] : a[i * lda + p];
        const double y = tc.tb ? b[j * ldb + p] : b[p * ldb + j];
        dot += x * y;
        mag += std::fabs(x * y);
      }
      double ref = double(tc.alpha) * dot, scale = std::fabs(double(tc.alpha)) * mag;
      if (tc.beta != 0.0f) {
        ref += double(tc.beta) * double(c0[e]);
        scale += std::fabs(double(tc.beta) * double(c0[e]));
      }
      const double tol = (double(k + 8) * std::ldexp(1.0, -23) + (tf32 ? std::ldexp(1.0, -8) : 0.0)) * scale + 1e-30;
      if (!(std::fabs(double(gpu[e]) - ref) <= tol) && failures++ < 5)
        ADD_FAILURE() << "GPU C(" << i << "," << j << ") = " << gpu[e] << ", expected " << ref << " (tol " << tol
                      << ")";
      // The CPU twin satisfies its own bound, so the two agree within twice it.
      if (!tf32 && !(std::fabs(double(gpu[e]) - double(cpu[e])) <= 2 * tol) && failures++ < 5)
        ADD_FAILURE() << "GPU C(" << i << "," << j << ") = " << gpu[e] << ", tb::cpu::gemm " << cpu[e];
    }
  }
}

using Mnk = std::array<int64_t, 3>;
const std::vector<Mnk> kGemmShapes = {
    {1, 1, 1},     {5, 7, 3},      {17, 33, 9},    {13, 1, 29},    {1, 19, 31},     {1024, 1, 64},
    {1, 64, 1024}, {65, 129, 257}, {256, 10, 256}, {10, 256, 256}, {256, 256, 784}, {200, 70, 530},
};

TEST_F(CudaKernels, GemmFp32MatchesCpuAllTransposes) {
  uint32_t seed = 1;
  for (const auto& [m, n, k] : kGemmShapes)
    for (int t = 0; t < 4; ++t)
      for (const auto& [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{-1.5f, 0.5f}})
        check_gemm(handle_, stream_, {(t & 1) != 0, (t & 2) != 0, m, n, k, 0, alpha, beta, false}, seed += 3, false);
}

TEST_F(CudaKernels, GemmPaddedLeadingDimensionsAndBetaZeroOverNaN) {
  uint32_t seed = 1000;
  for (const auto& [m, n, k] : std::vector<Mnk>{{17, 33, 9}, {65, 129, 257}, {1, 64, 100}, {100, 1, 64}})
    for (int t = 0; t < 4; ++t) {
      check_gemm(handle_, stream_, {(t & 1) != 0, (t & 2) != 0, m, n, k, 5, 0.75f, 0.5f, false}, seed += 3, false);
      check_gemm(handle_, stream_, {(t & 1) != 0, (t & 2) != 0, m, n, k, 3, 2.0f, 0.0f, true}, seed += 3, false);
    }
}

// k == 0 and alpha == 0 are C = beta * C without reading A or B (null here), as on the CPU.
TEST_F(CudaKernels, GemmKZeroAndAlphaZeroScaleC) {
  const int64_t m = 37, n = 19, ldc = 23;
  const std::vector<float> c0 = random_vec(m * ldc, 7);
  for (const auto& [k, alpha, beta] : {std::tuple{int64_t{0}, 1.0f, 0.5f}, std::tuple{int64_t{0}, 1.0f, 0.0f},
                                       std::tuple{int64_t{8}, 0.0f, -2.0f}, std::tuple{int64_t{0}, 1.0f, 1.0f}}) {
    std::vector<float> start = c0;
    if (beta == 0.0f) std::fill(start.begin(), start.end(), std::numeric_limits<float>::quiet_NaN());
    DeviceBuffer<float> dc(start, stream_);
    gemm(handle_, false, false, m, n, k, alpha, nullptr, 0, nullptr, 0, beta, dc.get(), ldc, stream_);
    sync();
    const std::vector<float> got = dc.download();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const float was = start[i * ldc + j], now = got[i * ldc + j];
        if (j >= n) {  // padding: untouched, bit for bit (it holds NaN when beta == 0)
          ASSERT_EQ(std::memcmp(&now, &was, sizeof now), 0)
              << "padding changed: k=" << k << " alpha=" << alpha << " beta=" << beta << " at " << i << "," << j;
        } else {
          ASSERT_EQ(now, beta == 0.0f ? 0.0f : beta * was)
              << "k=" << k << " alpha=" << alpha << " beta=" << beta << " at " << i << "," << j;
        }
      }
  }
}

TEST_F(CudaKernels, GemmTf32WithinTf32BoundThenBackToFp32) {
  set_tf32(handle_, true);
  uint32_t seed = 2000;
  for (const auto& [m, n, k] : std::vector<Mnk>{{256, 256, 784}, {128, 96, 1000}, {33, 17, 40}})
    for (int t = 0; t < 4; ++t)
      check_gemm(handle_, stream_, {(t & 1) != 0, (t & 2) != 0, m, n, k, 0, 1.0f, 0.0f, false}, seed += 3, true);
  set_tf32(handle_, false);
  check_gemm(handle_, stream_, {false, true, 256, 256, 784, 0, 1.0f, 0.0f, false}, seed + 3, false);
}

// ---- elementwise ---------------------------------------------------------------------------

// Exact: one float add (and a max with 0) per element, the same expression as the CPU.
TEST_F(CudaKernels, BiasActForwardEqualsCpu) {
  uint32_t seed = 1;
  for (const auto [rows, cols] : kDims)
    for (bool relu : {false, true}) {
      std::vector<float> z = random_vec(rows * cols, seed++);
      const std::vector<float> bias = random_vec(cols, seed++);
      DeviceBuffer<float> dz(z, stream_), dbias(bias, stream_);
      bias_act_forward(dz.get(), dbias.get(), rows, cols, relu, stream_);
      sync();
      tb::cpu::bias_act_forward(z.data(), bias.data(), rows, cols, relu);
      ASSERT_EQ(dz.download(), z) << rows << "x" << cols << " relu=" << relu;
    }
}

// Exact: a selection per element.
TEST_F(CudaKernels, ReluBackwardEqualsCpu) {
  uint32_t seed = 100;
  for (const auto [rows, cols] : kDims) {
    std::vector<float> a = random_vec(rows * cols, seed++);
    for (float& v : a) v = tb::relu(v);  // a ReLU output: zeros and positives
    std::vector<float> g = random_vec(rows * cols, seed++);
    DeviceBuffer<float> dg(g, stream_), da(a, stream_);
    relu_backward(dg.get(), da.get(), rows, cols, stream_);
    sync();
    tb::cpu::relu_backward(g.data(), a.data(), rows, cols);
    ASSERT_EQ(dg.download(), g) << rows << "x" << cols;
  }
}

// Both twins sum each column in double and round once to float, in different orders:
// the doubles differ by at most ~rows 2^-53 sum|g|, so the floats are equal or one
// float rounding apart: |gpu - cpu| <= 2^-23 |cpu| + rows 2^-50 sum|g|. Also bitwise
// deterministic across runs, and rows == 0 gives zeros. Shapes include the
// micro-benchmarks' 1M x 1, 4096 x 16 and 256 x 1000, which split the rows over
// slices (two launches through the workspace).
TEST_F(CudaKernels, ColumnSumMatchesCpuAndIsDeterministic) {
  uint32_t seed = 200;
  std::vector<Dims> dims = kDims;
  dims.push_back({5000, 3});    // tall: many rows per lane
  dims.push_back({3, 140000});  // wide: beyond the 4096-block grid cap (x 32 columns)
  dims.push_back({1 << 20, 1});
  dims.push_back({4096, 16});
  dims.push_back({256, 1000});
  for (const auto [rows, cols] : dims) {
    const std::vector<float> g = random_vec(rows * cols, seed++, -100.0f, 100.0f);
    DeviceBuffer<float> dg(g, stream_), ddb(cols, stream_);
    const int64_t ws_elems = column_sum_workspace_elems(rows, cols);
    DeviceBuffer<double> ws(ws_elems, stream_);
    column_sum(dg.get(), rows, cols, ddb.get(), ws.get(), ws_elems, stream_);
    const std::vector<float> first = ddb.download();
    column_sum(dg.get(), rows, cols, ddb.get(), ws.get(), ws_elems, stream_);
    ASSERT_EQ(ddb.download(), first) << "not deterministic at " << rows << "x" << cols;
    std::vector<float> cpu(static_cast<size_t>(cols));
    tb::cpu::column_sum(g.data(), rows, cols, cpu.data());
    for (int64_t c = 0; c < cols; ++c) {
      double mag = 0.0;
      for (int64_t r = 0; r < rows; ++r) mag += std::fabs(g[r * cols + c]);
      ASSERT_NEAR(first[c], cpu[c], std::ldexp(std::fabs(double(cpu[c])), -23) + double(rows) * std::ldexp(mag, -50))
          << rows << "x" << cols << " col " << c;
    }
  }
  DeviceBuffer<float> ddb(std::vector<float>(9, -7.0f), stream_);
  column_sum(nullptr, 0, 9, ddb.get(), nullptr, 0, stream_);
  EXPECT_EQ(ddb.download(), std::vector<float>(9, 0.0f));
}

// The fused linear-regression step (linear_step.cu) against its CPU twin: both are
// within 1e-5 of the sum of magnitudes of a double loop (tests/kernels/
// test_linear_step_cpu.cpp), so within twice that of each other. One output, odd sizes,
// fewer rows than a tile, several blocks, O = 16 at D = 512, D = 2048; the loss is
// added into *loss_sum (starts at 0.25); two runs are bitwise equal.
TEST_F(CudaKernels, LinearMseStepMatchesCpuTwinAndIsDeterministic) {
  struct Shape {
    int64_t rows, d, o;
  };
  uint32_t seed = 250;
  for (const Shape& s : {Shape{1, 1, 1}, Shape{5, 7, 1}, Shape{1000, 64, 1}, Shape{257, 19, 3}, Shape{4096, 512, 16},
                         Shape{300, 2048, 1}, Shape{100000, 33, 2}}) {
    const std::string at = std::to_string(s.rows) + "x" + std::to_string(s.d) + "->" + std::to_string(s.o);
    const std::vector<float> x = random_vec(s.rows * s.d, seed++), t = random_vec(s.rows * s.o, seed++);
    const std::vector<float> w = random_vec(s.o * s.d, seed++), b = random_vec(s.o, seed++);
    const float inv = 1.0f / static_cast<float>(s.rows * s.o);
    std::vector<float> cpu_dw(s.o * s.d), cpu_db(s.o);
    const double cpu_loss = tb::cpu::linear_mse_step(x.data(), t.data(), s.rows, s.d, s.o, w.data(), b.data(), inv,
                                                     cpu_dw.data(), cpu_db.data());
    std::vector<double> mag_dw(s.o * s.d, 0.0), mag_db(s.o, 0.0);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t j = 0; j < s.o; ++j) {
        double z = b[j];
        for (int64_t p = 0; p < s.d; ++p) z += double(x[r * s.d + p]) * w[j * s.d + p];
        const double g = std::fabs(2 * (z - t[r * s.o + j]) * inv);
        mag_db[j] += g;
        for (int64_t p = 0; p < s.d; ++p) mag_dw[j * s.d + p] += g * std::fabs(x[r * s.d + p]);
      }
    const int64_t ws_bytes = linear_mse_step_workspace_bytes(s.rows, s.d, s.o);
    DeviceBuffer<float> dx(x, stream_), dt(t, stream_), dw(w, stream_), dbias(b, stream_);
    DeviceBuffer<float> gw(s.o * s.d, stream_), gb(s.o, stream_);
    DeviceBuffer<double> loss(std::vector<double>{0.25}, stream_);
    DeviceBuffer<char> ws(ws_bytes, stream_);
    linear_mse_step(dx.get(), dt.get(), s.rows, s.d, s.o, dw.get(), dbias.get(), inv, gw.get(), gb.get(), loss.get(),
                    ws.get(), ws_bytes, stream_);
    const std::vector<float> got_dw = gw.download(), got_db = gb.download();
    EXPECT_NEAR(loss.download()[0] - 0.25, cpu_loss, 2e-5 * cpu_loss) << at;
    for (int64_t i = 0; i < s.o * s.d; ++i)
      ASSERT_NEAR(got_dw[i], cpu_dw[i], 2e-5 * mag_dw[i] + 1e-30) << at << " dW[" << i << "]";
    for (int64_t j = 0; j < s.o; ++j) ASSERT_NEAR(got_db[j], cpu_db[j], 2e-5 * mag_db[j] + 1e-30) << at << " db";
    linear_mse_step(dx.get(), dt.get(), s.rows, s.d, s.o, dw.get(), dbias.get(), inv, gw.get(), gb.get(), loss.get(),
                    ws.get(), ws_bytes, stream_);
    EXPECT_EQ(gw.download(), got_dw) << at << ": not deterministic";
    EXPECT_EQ(gb.download(), got_db) << at;
  }
}

// DeviceBuffer copies on the stream it was given (tests/cuda_trace asserts it from the
// trace of this test): an upload is ordered after the kernels queued there, a download
// after the kernels that wrote the data.
TEST_F(CudaKernels, DeviceBufferCopiesOnItsStream) {
  const std::vector<float> a = random_vec(1000, 260), b = random_vec(1000, 261);
  DeviceBuffer<float> dst(a, stream_), src(b, stream_);
  EXPECT_EQ(dst.stream(), stream_);
  add_inplace(dst.get(), src.get(), 1000, stream_);
  dst.upload(b);  // after the kernel: dst = b, not a + b + ...
  add_inplace(dst.get(), src.get(), 1000, stream_);
  std::vector<float> want = b;
  tb::cpu::add_inplace(want.data(), b.data(), 1000);
  EXPECT_EQ(dst.download(), want);
}

// grad: tb::mse_element in float on both sides (two products, nothing to contract):
// equal up to 2u |grad| in any case. Loss: both sum the same float squares in double, in different
// orders: relative 1e-10 (the random-walk error is ~sqrt(n) 2^-53 ~ 1e-13). The op adds into *loss_sum (starts at 0.25
// here).
TEST_F(CudaKernels, MseLossGradMatchesCpu) {
  uint32_t seed = 300;
  std::vector<Dims> dims = kDims;
  dims.push_back({3000, 1000});  // 3M elements: 1024 blocks, each loops
  for (const auto [rows, cols] : dims) {
    const int64_t n = rows * cols;
    const std::vector<float> y = random_vec(n, seed++, -3.0f, 3.0f), t = random_vec(n, seed++, -3.0f, 3.0f);
    const float inv_count = 1.0f / float(4 * n);
    std::vector<float> cpu_grad(static_cast<size_t>(n));
    const double cpu_loss = tb::cpu::mse_loss_grad(y.data(), t.data(), rows, cols, inv_count, cpu_grad.data());
    DeviceBuffer<float> dy(y, stream_), dt(t, stream_), dgrad(n, stream_);
    DeviceBuffer<double> dloss(std::vector<double>{0.25}, stream_);
    mse_loss_grad(dy.get(), dt.get(), rows, cols, inv_count, dgrad.get(), dloss.get(), stream_);
    mse_loss_grad(dy.get(), dt.get(), rows, cols, inv_count, nullptr, dloss.get(), stream_);  // loss only
    sync();
    const std::vector<float> grad = dgrad.download();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(grad[i], cpu_grad[i], 2 * kU * std::fabs(cpu_grad[i])) << rows << "x" << cols << " at " << i;
    const double want = 0.25 + 2 * cpu_loss;
    EXPECT_NEAR(dloss.download()[0], want, 1e-10 * want) << rows << "x" << cols;
  }
}

// Device expf/logf differ from glibc's by a few ulps, and the row's float arithmetic
// (z - zmax - log_sum, |.| <= ~20) rounds at 2^-19 absolute, so each probability is
// within ~4e-6 relative of the CPU's; the warp also adds the K exponentials in another
// order than the CPU's loop (log_sum within (K + 1) 2^-24): dz within (1e-5 + p (K + 9)
// 2^-24) * inv_rows absolute; a wrong index or scale fails by orders of magnitude. Row losses agree to ~1e-5, so
// |loss - cpu| <= 1e-5 * rows. argmax uses comparisons only: correct is exact.
// The op adds into *loss_sum (starts at 0.25) and *correct (starts at 3).
TEST_F(CudaKernels, SoftmaxXentMatchesCpu) {
  uint32_t seed = 400;
  const Dims dims[] = {{1, 1}, {5, 10}, {256, 10}, {1024, 1000}, {3000, 7}, {600000, 2}};
  for (const auto [rows, k] : dims) {
    const std::vector<float> z = random_vec(rows * k, seed++, -4.0f, 4.0f);
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    std::mt19937 rng(seed++);
    for (int32_t& l : labels) l = static_cast<int32_t>(rng() % static_cast<uint32_t>(k));
    const float inv_rows = 1.0f / float(rows);
    std::vector<float> cpu_dz(static_cast<size_t>(rows * k));
    int64_t cpu_correct = -1;
    const double cpu_loss =
        tb::cpu::softmax_xent_loss_grad(z.data(), labels.data(), rows, k, inv_rows, cpu_dz.data(), &cpu_correct);

    DeviceBuffer<float> dz(z, stream_), ddz(rows * k, stream_);
    DeviceBuffer<int32_t> dlabels(labels, stream_);
    DeviceBuffer<double> dloss(std::vector<double>{0.25}, stream_);
    DeviceBuffer<unsigned long long> dcorrect(std::vector<unsigned long long>{3}, stream_);
    softmax_xent_loss_grad(dz.get(), dlabels.get(), rows, k, inv_rows, ddz.get(), dloss.get(), dcorrect.get(), stream_);
    // Evaluation form: no dz, no correct; only the loss is added again.
    softmax_xent_loss_grad(dz.get(), dlabels.get(), rows, k, inv_rows, nullptr, dloss.get(), nullptr, stream_);
    sync();
    const std::vector<float> dzv = ddz.download();
    for (int64_t i = 0; i < rows * k; ++i) {
      const double p = cpu_dz[i] / double(inv_rows) + (labels[i / k] == i % k ? 1.0 : 0.0);
      ASSERT_NEAR(dzv[i], cpu_dz[i], (1e-5 + p * double(k + 9) * kU) * double(inv_rows))
          << rows << "x" << k << " at " << i;
    }
    EXPECT_NEAR(dloss.download()[0], 0.25 + 2 * cpu_loss, 2e-5 * double(rows)) << rows << "x" << k;
    EXPECT_EQ(dcorrect.download()[0], 3u + static_cast<unsigned long long>(cpu_correct)) << rows << "x" << k;
  }
}

// A label outside [0, K) cannot throw from the device: its row adds NaN to the loss
// and fills its dz row with NaN; the other rows are unaffected.
TEST_F(CudaKernels, SoftmaxXentBadLabelGivesNaN) {
  const int64_t rows = 4, k = 5;
  const std::vector<float> z = random_vec(rows * k, 450);
  const std::vector<int32_t> labels = {0, 5, 4, -1};
  DeviceBuffer<float> dz(z, stream_), ddz(rows * k, stream_);
  DeviceBuffer<int32_t> dlabels(labels, stream_);
  DeviceBuffer<double> dloss(std::vector<double>{0.0}, stream_);
  softmax_xent_loss_grad(dz.get(), dlabels.get(), rows, k, 0.25f, ddz.get(), dloss.get(), nullptr, stream_);
  sync();
  EXPECT_TRUE(std::isnan(dloss.download()[0]));
  const std::vector<float> dzv = ddz.download();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) EXPECT_EQ(std::isnan(dzv[r * k + j]), r == 1 || r == 3) << r << "," << j;
}

// Three steps with momentum and weight decay (then without momentum, v untouched and
// allowed null). Both sides evaluate tb::sgd_element in float; host and device
// compilers may contract different a * b + c into FMAs, so allowed: a few roundings
// of O(1) values (|p| <= ~1, |v| <= ~3) per step, over 3 steps: 4e-6 absolute.
// lr * wd * p ~ 5e-4 per step, so a dropped weight decay fails.
TEST_F(CudaKernels, SgdUpdateMatchesCpu) {
  for (const int64_t n : {int64_t{1}, int64_t{1000}, int64_t{269322}, int64_t{3} << 20}) {
    std::vector<float> p = random_vec(n, 500 + uint32_t(n % 97)), v(static_cast<size_t>(n), 0.0f);
    DeviceBuffer<float> dp(p, stream_), dv(v, stream_), dg(n, stream_);
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> g = random_vec(n, 600 + uint32_t(step));
      dg.upload(g);
      sgd_update(dp.get(), dg.get(), dv.get(), n, 0.1f, 0.9f, 0.01f, stream_);
      tb::cpu::sgd_update(p.data(), g.data(), v.data(), n, 0.1f, 0.9f, 0.01f);
    }
    sync();
    const std::vector<float> gp = dp.download(), gv = dv.download();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(gp[i], p[i], 4e-6) << "p, n=" << n << " at " << i;
      ASSERT_NEAR(gv[i], v[i], 4e-6) << "v, n=" << n << " at " << i;
    }
    const std::vector<float> g = random_vec(n, 700);
    dg.upload(g);
    sgd_update(dp.get(), dg.get(), nullptr, n, 0.05f, 0.0f, 0.001f, stream_);
    tb::cpu::sgd_update(p.data(), g.data(), nullptr, n, 0.05f, 0.0f, 0.001f);
    sync();
    const std::vector<float> gp2 = dp.download();
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(gp2[i], p[i], 4e-6) << "no momentum, n=" << n << " at " << i;
    ASSERT_EQ(dv.download(), gv) << "v changed without momentum";
  }
}

// Exact copies: a shuffled batch (a permutation slice, plus repeated rows).
TEST_F(CudaKernels, GatherRowsAndLabels) {
  const int64_t n = 5000;
  for (const int64_t width : {int64_t{1}, int64_t{64}, int64_t{784}}) {
    const std::vector<float> src = random_vec(n * width, 800 + uint32_t(width));
    std::vector<int32_t> labels(static_cast<size_t>(n));
    std::iota(labels.begin(), labels.end(), 0);
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937(uint32_t(width)));
    std::vector<int64_t> rows(perm.begin(), perm.begin() + 1000);
    rows.push_back(rows[0]);
    rows.push_back(n - 1);
    const int64_t count = static_cast<int64_t>(rows.size());

    DeviceBuffer<float> dsrc(src, stream_), ddst(count * width, stream_);
    DeviceBuffer<int32_t> dlabels(labels, stream_), dlab_out(count, stream_);
    DeviceBuffer<int64_t> drows(rows, stream_);
    gather_rows(dsrc.get(), drows.get(), count, width, ddst.get(), stream_);
    gather_labels(dlabels.get(), drows.get(), count, dlab_out.get(), stream_);
    sync();
    const std::vector<float> dst = ddst.download();
    const std::vector<int32_t> lab = dlab_out.download();
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(lab[i], labels[rows[i]]) << "label " << i;
      for (int64_t j = 0; j < width; ++j)
        ASSERT_EQ(dst[i * width + j], src[rows[i] * width + j]) << "width " << width << " at " << i << "," << j;
    }
  }
}

// The ops are stream-ordered and allocation-free, so a training step made of them
// (cuBLAS with a user workspace, as CUDA graphs require) can be captured and
// replayed; the replay must give the same parameters as direct calls.
TEST_F(CudaKernels, StepCapturesIntoACudaGraph) {
  const int64_t rows = 64, in = 32, out = 16;
  const std::vector<float> x = random_vec(rows * in, 900), w0 = random_vec(out * in, 901), b0 = random_vec(out, 902),
                           t = random_vec(rows * out, 903);
  DeviceBuffer<float> dx(x, stream_), dt(t, stream_), dy(rows * out, stream_), dgrad(rows * out, stream_),
      dgw(out * in, stream_), dgb(out, stream_);
  DeviceBuffer<double> dloss(std::vector<double>{0.0}, stream_);
  // The stream first: cublasSetStream resets the workspace (tb::cuda::gemm calls it only
  // when the stream changes, so the workspace stays).
  DeviceBuffer<char> workspace(int64_t{32} << 20, stream_);
  TB_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
  TB_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace.get(), size_t{32} << 20));
  auto step = [&](float* w, float* b) {
    gemm(handle_, false, true, rows, out, in, 1.0f, dx.get(), in, w, in, 0.0f, dy.get(), out, stream_);
    bias_act_forward(dy.get(), b, rows, out, false, stream_);
    mse_loss_grad(dy.get(), dt.get(), rows, out, 1.0f / float(rows * out), dgrad.get(), dloss.get(), stream_);
    gemm(handle_, true, false, out, in, rows, 1.0f, dgrad.get(), out, dx.get(), in, 0.0f, dgw.get(), in, stream_);
    column_sum(dgrad.get(), rows, out, dgb.get(), nullptr, 0, stream_);  // one slice: no workspace
    sgd_update(w, dgw.get(), nullptr, out * in, 0.1f, 0.0f, 0.0f, stream_);
    sgd_update(b, dgb.get(), nullptr, out, 0.1f, 0.0f, 0.0f, stream_);
  };
  DeviceBuffer<float> w_direct(w0, stream_), b_direct(b0, stream_), w_graph(w0, stream_), b_graph(b0, stream_);
  for (int i = 0; i < 3; ++i) step(w_direct.get(), b_direct.get());
  sync();

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  TB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  step(w_graph.get(), b_graph.get());
  TB_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  TB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) TB_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
  sync();
  TB_CUDA_WARN(cudaGraphExecDestroy(exec));
  TB_CUDA_WARN(cudaGraphDestroy(graph));
  EXPECT_EQ(w_graph.download(), w_direct.download());
  EXPECT_EQ(b_graph.download(), b_direct.download());
  TB_CUBLAS_CHECK(cublasSetStream(handle_, stream_));  // back to the default pool before the buffer goes
}

}  // namespace
}  // namespace tb::cuda
