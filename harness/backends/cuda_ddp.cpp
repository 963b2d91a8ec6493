// harness/backends/cuda_ddp.cpp — `cuda-ddp`: DistributedDataParallel semantics over
// NCCL, one process per GPU, launched by MPI: the `cuda` trainer (backends/cuda.cpp, a
// CudaModel on this rank's shard of every global batch) + the NCCL GradReducer
// (nccl_grad_reducer.cpp). GPU = node-local rank (or the one GPU a rank sees); two
// ranks on one GPU are refused by every rank at once.
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/backends/cuda_parallel.h"
#include "harness/backends/grad_reducer.h"
#include "harness/comm/mpi_session.h"
#include "harness/comm/nccl_bootstrap.h"
#include "harness/host_info.h"
#include "kernels/error.h"

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
    t.knobs = kKnobTf32 | kKnobHostPlacement | kKnobBucket | kKnobNoOverlap;
    t.scaling_base = "cuda";
    return t;
  }
  Availability availability() const override {
    const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
    if (!g.usable) return {false, g.reason};
    return {true, ""};
  }
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& cfg_in, Job& job) const override {
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
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_ddp_backend() { return std::make_unique<CudaDdpBackend>(); }

}  // namespace tb
