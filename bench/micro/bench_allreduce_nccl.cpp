// bench/micro/bench_allreduce_nccl.cpp — the all-reduce bandwidth sweep over NCCL, one
// MPI rank per GPU, printed like nccl-tests' all_reduce_perf (the sweep, its flags, check
// and table: allreduce_sweep.h, shared with the MPI sweep bench_allreduce.cpp).
// Set-up as cuda-ddp does it (harness/comm/nccl_bootstrap.h): GPU = node-local rank,
// rank 0's ncclUniqueId shared over MPI_Bcast, then ncclCommInitRank. Buffers are float
// device memory; each all-reduce is ncclAllReduce(sum) in place on one stream. Timing:
// `warmup` calls, stream synchronised, an MPI barrier, then `iters` calls between two
// CUDA events recorded on the stream; a rank's time = elapsed / iters, the table's the
// max over ranks. The check copies the pattern to the device, all-reduces it once and
// copies it back. Without a usable GPU for every rank (no device, or more ranks on a
// node than GPUs) rank 0 prints "tb_bench_allreduce_nccl: skipped: <reason>" and every
// rank exits 0.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/micro/allreduce_sweep.h"
#include "harness/comm/mpi_session.h"
#include "harness/comm/nccl_bootstrap.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/nccl_check.h"

namespace {

constexpr tb::bench::SweepProgram kProgram = {"tb_bench_allreduce_nccl", /*has_mode=*/false};

std::string version_string(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// Why this rank has no GPU to use ("" when it has one: *device). Collective: every rank
// reaches gpu_for_rank, with or without a GPU, so none waits for another in it.
std::string gpu_unusable_reason(tb::Communicator& world, int* device) {
  int count = 0;
  std::string why;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    count = 0;
    why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  } else if (count == 0) {
    why = "no usable CUDA device: cudaGetDeviceCount returned 0";
  }
  std::vector<std::string> pci;
  for (int i = 0; i < count; ++i) {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) != cudaSuccess) cudaGetLastError();
    pci.push_back(bus);
  }
  try {
    *device = tb::gpu_for_rank(world, pci);  // refuses 2 ranks on one GPU
  } catch (const std::exception& e) {
    if (why.empty()) why = e.what();
  }
  return why;
}

// Collective: "" when every rank has a GPU, else the reason of the lowest rank without.
std::string any_rank_unusable(tb::Communicator& world, const std::string& mine) {
  double lowest_bad = mine.empty() ? -world.size() : -world.rank();  // max of -rank = lowest rank
  world.allreduce_max(&lowest_bad, 1);
  if (lowest_bad == -world.size()) return "";
  char text[512] = {};
  std::snprintf(text, sizeof text, "%s", mine.c_str());
  world.broadcast(text, sizeof text, static_cast<int>(-lowest_bad));
  return text;
}

class NcclTarget final : public tb::bench::SweepTarget {
 public:
  NcclTarget(tb::Communicator& world, int device, int64_t max_count)
      : world_(world), device_(device), host_(static_cast<size_t>(max_count)) {
    const std::string id_bytes = tb::nccl_unique_id_bytes(world);
    ncclUniqueId id;
    std::memcpy(id.internal, id_bytes.data(), sizeof id.internal);
    TB_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    TB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    char bus[32] = {};
    TB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
    detail_ = " GPU " + std::to_string(device) + " [" + bus + "] " + prop.name;
    TB_NCCL_CHECK(ncclCommInitRank(&comm_, world.size(), id, world.rank()));
    TB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TB_CUDA_CHECK(cudaEventCreate(&start_));
    TB_CUDA_CHECK(cudaEventCreate(&stop_));
    TB_CUDA_CHECK(cudaMalloc(&dev_, static_cast<size_t>(max_count) * sizeof(float)));
  }

  ~NcclTarget() override {
    cudaSetDevice(device_);
    // Unwinding after an error, a peer may be gone: abort (which releases kernels waiting
    // on it) rather than destroy (which waits for them), and before freeing the buffer.
    if (comm_) (std::uncaught_exceptions() > 0 ? ncclCommAbort : ncclCommDestroy)(comm_);
    if (dev_) TB_CUDA_WARN(cudaFree(dev_));
    if (stop_) TB_CUDA_WARN(cudaEventDestroy(stop_));
    if (start_) TB_CUDA_WARN(cudaEventDestroy(start_));
    if (stream_) TB_CUDA_WARN(cudaStreamDestroy(stream_));
  }
  NcclTarget(const NcclTarget&) = delete;
  NcclTarget& operator=(const NcclTarget&) = delete;

  std::string title() const override {
    return "over NCCL (ncclAllReduce on a stream, device buffers, one GPU per rank)";
  }
  std::string library() const override {
    int nccl = 0, rt = 0, drv = 0;
    ncclGetVersion(&nccl);
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    char text[160];
    std::snprintf(text, sizeof text, "NCCL %d.%d.%d, CUDA runtime %s, driver %s", nccl / 10000, (nccl / 100) % 100,
                  nccl % 100, version_string(rt).c_str(), drv ? version_string(drv).c_str() : "none");
    return text;
  }
  std::string rank_detail() const override { return detail_; }
  std::string time_definition() const override {
    return "CUDA-event time on the stream of `iters` calls after a barrier";
  }
  std::string backend() const override { return "nccl"; }

  int64_t checked_allreduce(int64_t count) override {
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    tb::bench::fill_pattern(host_.data(), count, world_.rank());
    TB_CUDA_CHECK(cudaMemcpyAsync(dev_, host_.data(), bytes, cudaMemcpyHostToDevice, stream_));
    once(count);
    TB_CUDA_CHECK(cudaMemcpyAsync(host_.data(), dev_, bytes, cudaMemcpyDeviceToHost, stream_));
    TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return tb::bench::count_wrong(host_.data(), count, world_.size());
  }

  double timed_allreduce(int64_t count, int64_t warmup, int64_t iters) override {
    for (int64_t w = 0; w < warmup; ++w) once(count);
    TB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    world_.barrier();
    TB_CUDA_CHECK(cudaEventRecord(start_, stream_));
    for (int64_t it = 0; it < iters; ++it) once(count);
    TB_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    TB_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    TB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) * 1e-3 / static_cast<double>(iters);
  }

 private:
  void once(int64_t count) {
    TB_NCCL_CHECK(ncclAllReduce(dev_, dev_, static_cast<size_t>(count), ncclFloat, ncclSum, comm_, stream_));
  }

  tb::Communicator& world_;
  int device_;
  std::string detail_;
  std::vector<float> host_;
  float* dev_ = nullptr;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// One rank per GPU; without a GPU on some rank, rank 0 says why and every rank exits 0.
int nccl_sweep(tb::Communicator& comm, const tb::bench::SweepOptions& opts, const std::string& command_line) {
  int device = -1;
  const std::string why_not = any_rank_unusable(comm, gpu_unusable_reason(comm, &device));
  if (!why_not.empty()) {
    if (comm.rank() == 0) std::printf("%s: skipped: %s\n", kProgram.name, why_not.c_str());
    return 0;
  }
  NcclTarget target(comm, device, tb::bench::sweep_counts(opts).back());
  return tb::bench::run_sweep(comm, target, opts, kProgram.name, command_line);
}

}  // namespace

int main(int argc, char** argv) { return tb::bench::sweep_main(argc, argv, kProgram, nccl_sweep); }
