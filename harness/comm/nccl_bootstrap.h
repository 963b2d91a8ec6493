// harness/comm/nccl_bootstrap.h — how the ranks of a cuda-ddp job agree on one
// NCCL communicator: rank 0 makes the ncclUniqueId (needs no GPU) and MPI_Bcast
// shares its 128 bytes; each rank then picks its GPU from its node-local rank.
// Built when both MPI and NCCL are found.
#pragma once

#include <string>
#include <vector>

#include "harness/comm/communicator.h"

namespace tb {

// The unique id's bytes, identical on every rank of `world`. Throws with NCCL's
// message if rank 0 cannot create it.
std::string nccl_unique_id_bytes(Communicator& world);

// The GPU a rank uses among those it sees, `pci_bus_ids` (one per visible GPU): its
// node-local rank, or GPU 0 when it sees exactly one (a launcher that binds one GPU per
// task: srun --gpus-per-task=1, a per-rank CUDA_VISIBLE_DEVICES). Collective: every
// rank calls it, and all throw the same message when some rank has no GPU to take or
// two ranks on one host would share a GPU (same PCI bus id): two NCCL ranks on one
// GPU are unsupported.
int gpu_for_rank(Communicator& world, const std::vector<std::string>& pci_bus_ids);

}  // namespace tb
