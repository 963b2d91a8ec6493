// harness/backends/cuda_ddp.cpp — `cuda-ddp`: DistributedDataParallel semantics over
// NCCL, one process per GPU, launched by MPI: the `cuda` trainer (backends/cuda.cpp, a
// CudaModel on this rank's shard of every global batch) + the NCCL GradReducer
// (nccl_grad_reducer.cpp). GPU = node-local rank (or the one GPU a rank sees); two
// ranks on one GPU are refused by every rank at once.
#include <memory>
#include <stdexcept>
#include <string>

#include "harness/backend.h"
#include "harness/host_info.h"

#if defined(TB_HAVE_CUDA_DDP)  // the trainer's pieces: compiled with CUDA, NCCL and MPI only
#include <cstdio>
#include <vector>

#include "kernels/error.h"

#include "harness/backends/cuda_parallel.h"
#include "harness/backends/device_memory.h"
#include "harness/backends/grad_reducer.h"
#include "harness/comm/mpi_session.h"
#include "harness/comm/nccl_bootstrap.h"
#endif

namespace tb {
namespace {

class CudaDdpBackend final : public Backend {
 public:
  std::string name() const override { return "cuda-ddp"; }
  std::string description() const override { return "N processes x 1 GPU, NCCL, DDP semantics"; }
  BackendTraits traits() const override {
    BackendTraits t;
    t.device = DeviceKind::kGpu;
    t.parallelism = Parallelism::kDistributed;
    t.one_gpu_per_rank = true;
    t.knobs = kKnobTf32 | kKnobHostPlacement | kKnobBucket | kKnobNoOverlap | kKnobNoPhaseTiming;
    t.scaling_base = "cuda";
    return t;
  }
  // The most basic missing piece first: a GPU, then the build.
  Availability availability() const override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    if (!g.usable) return {false, g.reason};
#if defined(TB_HAVE_CUDA_DDP)
    return {true, ""};
#else
    return {false, "built without NCCL or MPI (cuda-ddp needs CUDA, NCCL and MPI at build time)"};
#endif
  }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg_in, Job& job) const override {
#if defined(TB_HAVE_CUDA_DDP)
    std::shared_ptr<Communicator> world = job.world();
    if (!world) throw std::logic_error("cuda-ddp needs an MPI job (make_job)");
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    RunConfig cfg = cfg_in;
    std::vector<std::string> pci;
    for (const GpuInfo& d : g.gpus) pci.push_back(d.pci_bus_id);
    cfg.device = gpu_for_rank(*world, pci);  // collective; refuses 2 ranks on one GPU
    // Code for this rank's GPU: our kernel probed there, only now that the GPU is picked
    // (availability() runs before, on every rank and in the suite: a probe there would
    // make a context on GPU 0 for each). Every rank learns whether all have it.
    const std::string code = gpu_code_problem(cfg.device);
    if (!code.empty()) std::fprintf(stderr, "trainbench: rank %d: %s\n", world->rank(), code.c_str());
    if (!job.all_ok(code.empty())) {
      throw Error(!code.empty() ? code
                                : "another rank's GPU cannot run this build's kernels (its reason is on stderr)");
    }
    CudaParallel par;
    par.world = world;
    TB_CUDA_CHECK(cudaSetDevice(cfg.device));
    par.device_free_at_start = DeviceMemoryMeter::free_now();  // before NCCL's buffers
    cuda::set_expected_device_bytes(cuda_trainer_device_bytes(data, cfg));  // "needs" if NCCL runs out
    try {
      par.reducer = make_nccl_grad_reducer(*world, cfg.device, cfg);
    } catch (...) {
      cuda::set_expected_device_bytes(0);
      throw;
    }
    return make_cuda_trainer(data, cfg, std::move(par));
#else
    (void)data;
    (void)cfg_in;
    (void)job;
    throw std::logic_error("cuda-ddp: " + availability().reason);
#endif
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_ddp_backend() { return std::make_unique<CudaDdpBackend>(); }

}  // namespace tb
