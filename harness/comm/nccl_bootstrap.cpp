// harness/comm/nccl_bootstrap.cpp — see nccl_bootstrap.h.
#include "harness/comm/nccl_bootstrap.h"

#include <nccl.h>
#include <unistd.h>

#include <cstdint>
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

namespace {
// A 32-bit FNV-1a hash (exact in a double, so it can travel through allgather).
uint32_t key_of(const std::string& text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}
}  // namespace

int gpu_for_rank(Communicator& world, const std::vector<std::string>& pci_bus_ids) {
  const int visible = static_cast<int>(pci_bus_ids.size());
  const int local = world.local_rank();
  const int device = local < visible ? local : visible == 1 ? 0 : -1;
  // Per rank: host key, GPU key (-1: none to take), node-local rank, GPUs it sees.
  const double mine[4] = {static_cast<double>(key_of(this_host())),
                          device < 0 ? -1.0 : static_cast<double>(key_of(pci_bus_ids[static_cast<size_t>(device)])),
                          static_cast<double>(local), static_cast<double>(visible)};
  std::vector<double> all(static_cast<size_t>(4 * world.size()));
  world.allgather(mine, 4, all.data());
  auto at = [&](int r, int k) { return all[static_cast<size_t>(4 * r + k)]; };
  for (int r = 0; r < world.size(); ++r) {
    if (at(r, 1) < 0) {
      throw std::runtime_error("rank " + std::to_string(r) + " is node-local rank " +
                               std::to_string(static_cast<int>(at(r, 2))) + " but sees " +
                               std::to_string(static_cast<int>(at(r, 3))) +
                               " GPU(s): start at most one rank per GPU");
    }
  }
  for (int a = 0; a < world.size(); ++a) {
    for (int b = a + 1; b < world.size(); ++b) {
      if (at(a, 0) == at(b, 0) && at(a, 1) == at(b, 1)) {
        throw std::runtime_error("ranks " + std::to_string(a) + " and " + std::to_string(b) +
                                 " would share one GPU on one node: start at most one rank per GPU "
                                 "(two NCCL ranks on one GPU are not supported)");
      }
    }
  }
  return device;
}

}  // namespace tb
