// tests/mpi/nccl_id_exchange.cpp — run under mpirun by ctest: the NCCL unique id
// that rank 0 creates (no GPU needed) reaches every rank byte for byte, and the
// GPU-per-rank rule refuses more ranks than GPUs. Exit 0 only if all ranks agree.
#include <cstdio>
#include <cstring>
#include <vector>

#include "harness/comm/mpi_session.h"
#include "harness/comm/nccl_bootstrap.h"

int main() {
  auto world = tb::mpi_world(30);
  int failures = 0;
  const std::string id = tb::nccl_unique_id_bytes(*world);
  // Every rank contributes its bytes; each checks all copies against rank 0's.
  std::vector<float> mine(id.size()), all(id.size() * static_cast<size_t>(world->size()));
  for (size_t i = 0; i < id.size(); ++i) mine[i] = static_cast<unsigned char>(id[i]);
  world->allgather(mine.data(), static_cast<int64_t>(mine.size()), all.data());
  int nonzero = 0;
  for (size_t i = 0; i < id.size(); ++i) nonzero += mine[i] != 0;
  if (nonzero == 0) ++failures;
  for (int r = 1; r < world->size(); ++r) {
    if (std::memcmp(all.data(), all.data() + r * id.size(), id.size() * sizeof(float)) != 0) ++failures;
  }
  bool refused = false;
  try {
    tb::gpu_for_rank(*world, {});  // a node with no GPU: every rank is one too many
  } catch (const std::runtime_error&) {
    refused = true;
  }
  if (!refused) ++failures;
  double f = failures;
  world->allreduce_sum(&f, 1);
  if (world->rank() == 0) std::printf("nccl id exchange over %d ranks: %s\n", world->size(), f == 0 ? "ok" : "FAILED");
  tb::mpi_finalize_if_initialised();
  return f == 0 ? 0 : 1;
}
