// harness/comm/nccl_bootstrap.h — how the ranks of a cuda-ddp job agree on one
// NCCL communicator: rank 0 makes the ncclUniqueId (needs no GPU) and MPI_Bcast
// shares its 128 bytes; each rank then picks its GPU from its node-local rank.
// Built when both MPI and NCCL are found.
#pragma once

#include <string>

#include "harness/comm/communicator.h"

namespace tb {

// The unique id's bytes, identical on every rank of `world`. Throws with NCCL's
// message if rank 0 cannot create it.
std::string nccl_unique_id_bytes(Communicator& world);

// The GPU a rank uses: its node-local rank. Throws when more ranks share a node
// than it has GPUs (two NCCL ranks on one GPU is unsupported).
int gpu_for_rank(const Communicator& world, int gpus_on_node);

}  // namespace tb
