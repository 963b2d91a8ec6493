// harness/backends/unavailable.cpp — backends named by the suite that this build
// cannot run yet, each with the honest reason. `trainbench backends` lists them
// and suites record their rows as `skipped: <reason>`; they never train.
// The reason states the most basic missing piece first (hardware, then build,
// then the code itself), so a user knows what would change the answer.
#include <stdexcept>

#include "harness/backend.h"
#include "harness/host_info.h"

namespace tb {
namespace {

class UnavailableBackend final : public Backend {
 public:
  UnavailableBackend(std::string name, std::string desc, int min_gpus, bool needs_mpi, std::string issue)
      : name_(std::move(name)), desc_(std::move(desc)), min_gpus_(min_gpus), needs_mpi_(needs_mpi),
        issue_(std::move(issue)) {}

  std::string name() const override { return name_; }
  std::string description() const override { return desc_; }
  BackendTraits traits() const override { return traits_; }

  Availability availability() const override {
    if (min_gpus_ > 0) {
      const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
      if (!g.usable) return {false, g.reason};
      if (static_cast<int>(g.gpus.size()) < min_gpus_) {
        return {false, "needs " + std::to_string(min_gpus_) + " GPUs, found " + std::to_string(g.gpus.size())};
      }
    }
#if !defined(TB_MPI_FOUND)
    if (needs_mpi_) return {false, "built without MPI (install openmpi-bin libopenmpi-dev and rebuild)"};
#endif
    return {false, "not implemented in this version (" + issue_ + ")"};
  }

  std::unique_ptr<Trainer> make_trainer(const Dataset&, const RunConfig&, Job&) const override {
    throw std::logic_error(name_ + " is unavailable: " + availability().reason);
  }

 private:
  std::string name_, desc_;
  int min_gpus_;
  bool needs_mpi_;
  std::string issue_;

 public:
  BackendTraits traits_;  // TEMPORARY until the backend files always compile (merge of the model branch)
};

}  // namespace

std::unique_ptr<Backend> make_unavailable_backend(const std::string& name) {
  if (name == "cuda") {  // only in builds without the CUDA toolkit
    return std::make_unique<UnavailableBackend>(name, "1 GPU, cuBLAS + fused kernels", 1, false,
                                                "built without CUDA");
  }
  if (name == "cuda-dp") {
    return std::make_unique<UnavailableBackend>(name, "1 process, N GPUs, DataParallel semantics", 2, false,
                                                "issue #5");
  }
  if (name == "cuda-ddp") {  // only in builds without CUDA, NCCL or MPI
    return std::make_unique<UnavailableBackend>(name, "N processes x 1 GPU, NCCL, DDP semantics", 1, true,
                                                "needs CUDA, NCCL and MPI at build time");
  }
  return std::make_unique<UnavailableBackend>(name, "N processes x T threads, MPI, DDP semantics", 0, true,
                                              "issue #4");
}

}  // namespace tb
