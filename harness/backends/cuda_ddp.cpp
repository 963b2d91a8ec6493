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
#include <vector>

#include "harness/backends/cuda_parallel.h"
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
    CudaParallel par;
    par.world = world;
    par.reducer = make_nccl_grad_reducer(*world, cfg.device, cfg);
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
