// harness/comm/nccl_bootstrap.cpp — see nccl_bootstrap.h.
#include "harness/comm/nccl_bootstrap.h"

#include <nccl.h>

#include <cstring>
#include <stdexcept>

namespace tb {

std::string nccl_unique_id_bytes(Communicator& world) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  char ok = 1;
  std::string error;
  if (world.rank() == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      ok = 0;
      error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r);
    }
  }
  world.broadcast(&ok, 1, 0);  // every rank learns whether rank 0 succeeded
  if (!ok) throw std::runtime_error(error.empty() ? "ncclGetUniqueId failed on rank 0" : error);
  world.broadcast(id.internal, sizeof id.internal, 0);
  return std::string(id.internal, sizeof id.internal);
}

int gpu_for_rank(const Communicator& world, int gpus_on_node) {
  if (world.local_rank() >= gpus_on_node) {
    throw std::runtime_error("rank " + std::to_string(world.rank()) + " is node-local rank " +
                             std::to_string(world.local_rank()) + " but the node has " + std::to_string(gpus_on_node) +
                             " GPU(s): start at most one rank per GPU");
  }
  return world.local_rank();
}

}  // namespace tb
