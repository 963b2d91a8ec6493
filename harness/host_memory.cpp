// harness/host_memory.cpp — see host_memory.h.
#include "harness/host_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "harness/backend.h"
#include "harness/model.h"

namespace tb {

int64_t host_bytes_needed(const RunConfig& c, int world_size) {
  const int64_t n = c.data.n, d = c.model.in_dim(), o = c.model.out_dim();
  const int64_t world = world_size > 0 ? world_size : 1;
  const bool synthetic = c.data.kind != "csv" && c.data.kind != "idx";
  // A synthetic DDP rank generates only its rows (harness/rank_data.h): about N / W.
  const int64_t rows = synthetic ? (n + world - 1) / world : n;
  const int64_t per_row = c.data.task == Task::kClassification ? d * 4 + 4 : (d + o) * 4;
  const bool oracle = find_backend(c.backend) && traits_of(c.backend).oracle;
  const int64_t value = oracle ? 8 : 4;
  const int64_t params = make_layout(c.model).total;
  int64_t widths = 0;
  for (int64_t w : c.model.layers) widths += w;
  // A CPU backend's linear regression step (kernels/cpu/linear_step_blocked.cpp) keeps
  // [W^T; b] packed and [dW db], about (D + 1) x O each (O rounded up to 32), per process: a
  // cpu-hogwild worker is a process of its own.
  int64_t step_scratch = 0;
  if (!oracle && find_backend(c.backend) && traits_of(c.backend).device == DeviceKind::kCpu &&
      c.model.num_layers() == 1 && c.data.task == Task::kRegression) {
    const int64_t procs = traits_of(c.backend).asynchronous ? std::max(1, c.workers) : 1;
    step_scratch = procs * 2 * (d + 1) * ((o + 31) / 32 * 32) * 4;
  }
  return rows * per_row + 3 * params * value + 2 * c.batch * widths * value + step_scratch;
}

int64_t host_bytes_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream f(line.substr(13));
    int64_t kib = -1;
    f >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

std::string host_memory_shortfall(const RunConfig& c, int world_size, int ranks_here) {
  const int64_t avail = host_bytes_available();
  if (avail < 0) return "";
  const int64_t need = host_bytes_needed(c, world_size) * (ranks_here > 0 ? ranks_here : 1);
  if (need <= avail) return "";
  constexpr int64_t kMiB = 1 << 20;
  return "out of host memory (needs ~" + std::to_string((need + kMiB - 1) / kMiB) + " MiB, available " +
         std::to_string(avail / kMiB) + " MiB)";
}

}  // namespace tb
