// harness/env_capture.cpp — env.json: where, with what, from which commit.
#include "harness/env_capture.h"

#include <omp.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "harness/host_info.h"
#include "harness/json_out.h"
#include "harness/result_row.h"
#include "kernels/cpu/gemm.h"

namespace tb {
namespace {

// Runs a short command and returns its first output line ("" on failure).
std::string first_line_of(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  std::array<char, 512> buf{};
  if (std::fgets(buf.data(), buf.size(), p)) out = buf.data();
  ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
// A string, or null when absent.
Json or_null(const char* s) { return s ? Json(s) : Json(nullptr); }
Json or_null(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

RunIdentity make_run_identity() {
  RunIdentity id;
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char ts[32], rid[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::strftime(rid, sizeof rid, "%Y%m%d-%H%M%S", &tm);
  id.timestamp = ts;
  id.host = host_info().hostname;
  id.run_id = std::string(rid) + "-" + id.host;
  return id;
}

std::string env_json(const RunIdentity& id, const std::string& command_line, uint64_t seed) {
  const HostInfo h = host_info();
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  const std::string src = TB_SOURCE_DIR;
  const std::string commit = first_line_of("git -C '" + src + "' rev-parse HEAD");
  const bool dirty = !first_line_of("git -C '" + src + "' status --porcelain --untracked-files=no").empty();
#if defined(TB_HAVE_CUDA)
  const char* cuda = TB_CUDA_ARCHS;
#else
  const char* cuda = nullptr;
#endif
#if defined(TB_MPI_FOUND)
  const char* mpi = TB_MPI_FOUND;
#else
  const char* mpi = nullptr;
#endif
#if defined(TB_NCCL_FOUND)
  const char* nccl = TB_NCCL_FOUND;
#else
  const char* nccl = nullptr;
#endif
  Json j;
  j["schema_version"] = kSchemaVersion;
  j["run_id"] = id.run_id;
  j["timestamp"] = id.timestamp;
  j["command_line"] = command_line;
  j["trainbench_version"] = TB_VERSION;
  j["git"] = {{"commit", or_null(commit)}, {"dirty", dirty}};
  j["build"] = {{"type", TB_BUILD_TYPE},       {"compiler", TB_CXX_COMPILER},
                {"flags", TB_CXX_FLAGS},       {"cuda_architectures", or_null(cuda)},
                {"cuda", or_null(g.runtime_version)}, {"mpi", or_null(mpi)},
                {"nccl", or_null(nccl)},       {"cpu_gemm", cpu::gemm_implementation()}};
  j["host"] = {{"hostname", h.hostname},           {"os", h.os},
               {"kernel", h.kernel},               {"cpu_model", h.cpu_model},
               {"logical_cores", h.logical_cores}, {"memory_bytes", h.memory_bytes}};
  j["openmp"] = {{"version", _OPENMP},
                 {"max_threads", omp_get_max_threads()},
                 {"omp_num_threads", env_or_empty("OMP_NUM_THREADS")},
                 {"proc_bind", env_or_empty("OMP_PROC_BIND")},
                 {"places", env_or_empty("OMP_PLACES")}};
  j["blas_env"] = {{"OPENBLAS_CORETYPE", env_or_empty("OPENBLAS_CORETYPE")},
                   {"OPENBLAS_L2_SIZE", env_or_empty("OPENBLAS_L2_SIZE")}};
  // GPUs as `trainbench devices` lists them, but free memory: reading it would open a
  // context on every GPU (harness/host_info.h, FreeMemory), so it is null here.
  j["driver"] = or_null(g.driver_version);
  j["cuda_runtime"] = or_null(g.runtime_version);
  j["cublas"] = or_null(g.cublas_version);
  j["nccl_runtime"] = or_null(g.nccl_version);
  j["cuda_visible_devices"] = or_null(std::getenv("CUDA_VISIBLE_DEVICES"));
  Json gpus = Json::array();
  for (const GpuInfo& d : g.gpus) {
    gpus.push_back({{"index", d.index},
                    {"name", d.name},
                    {"compute_capability", d.compute_capability},
                    {"sm_count", d.sm_count},
                    {"memory_bytes", d.memory_total_bytes},
                    {"memory_free_bytes", d.memory_free_bytes < 0 ? Json(nullptr) : Json(d.memory_free_bytes)},
                    {"clock_mhz", d.clock_mhz},
                    {"memory_clock_mhz", d.memory_clock_mhz},
                    {"pci_bus_id", d.pci_bus_id}});
  }
  j["gpus"] = gpus;
  j["peer_access"] = g.peer_access;  // [i][j] = 1: GPU i can access GPU j's memory
  j["gpu_unavailable_reason"] = g.usable ? Json(nullptr) : Json(g.reason);
  j["seed"] = seed;
  return json_text(j);
}

}  // namespace tb
