// harness/env_capture.cpp — env.json: where, with what, from which commit.
#include "harness/env_capture.h"

#include <omp.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>

#include "harness/host_info.h"
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

// Quoted JSON string. Built with += (GCC 12 warns falsely on "\"" + std::string).
std::string q(const std::string& s) {
  std::string r(1, '"');
  r += json_escape(s);
  r += '"';
  return r;
}
std::string q_or_null(const char* s) { return s ? q(s) : "null"; }
std::string q_or_null(const std::string& s) { return s.empty() ? "null" : q(s); }
std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

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
  std::ostringstream j;
  j << "{\n";
  j << "  \"schema_version\": 1,\n";
  j << "  \"run_id\": " << q(id.run_id) << ",\n";
  j << "  \"timestamp\": " << q(id.timestamp) << ",\n";
  j << "  \"command_line\": " << q(command_line) << ",\n";
  j << "  \"trainbench_version\": " << q(TB_VERSION) << ",\n";
  j << "  \"git\": {\"commit\": " << (commit.empty() ? "null" : q(commit)) << ", \"dirty\": " << (dirty ? "true" : "false")
    << "},\n";
  j << "  \"build\": {\"type\": " << q(TB_BUILD_TYPE) << ", \"compiler\": " << q(TB_CXX_COMPILER)
    << ", \"flags\": " << q(TB_CXX_FLAGS) << ", \"cuda_architectures\": " << q_or_null(cuda)
    << ", \"cuda\": " << q_or_null(g.runtime_version)
    << ", \"mpi\": " << q_or_null(mpi) << ", \"nccl\": " << q_or_null(nccl)
    << ", \"cpu_gemm\": " << q(cpu::gemm_implementation()) << "},\n";
  j << "  \"host\": {\"hostname\": " << q(h.hostname) << ", \"os\": " << q(h.os) << ", \"kernel\": " << q(h.kernel)
    << ", \"cpu_model\": " << q(h.cpu_model) << ", \"logical_cores\": " << h.logical_cores
    << ", \"memory_bytes\": " << h.memory_bytes << "},\n";
  j << "  \"openmp\": {\"version\": " << _OPENMP << ", \"max_threads\": " << omp_get_max_threads()
    << ", \"omp_num_threads\": " << q(env_or_empty("OMP_NUM_THREADS")) << ", \"proc_bind\": "
    << q(env_or_empty("OMP_PROC_BIND")) << ", \"places\": " << q(env_or_empty("OMP_PLACES")) << "},\n";
  j << "  \"blas_env\": {\"OPENBLAS_CORETYPE\": " << q(env_or_empty("OPENBLAS_CORETYPE"))
    << ", \"OPENBLAS_L2_SIZE\": " << q(env_or_empty("OPENBLAS_L2_SIZE")) << "},\n";
  // GPUs as `trainbench devices` lists them, but free memory: reading it would open a
  // context on every GPU (harness/host_info.h, FreeMemory), so it is null here.
  j << "  \"driver\": " << q_or_null(g.driver_version) << ",\n";
  j << "  \"cuda_runtime\": " << q_or_null(g.runtime_version) << ",\n";
  j << "  \"cublas\": " << q_or_null(g.cublas_version) << ",\n";
  j << "  \"nccl_runtime\": " << q_or_null(g.nccl_version) << ",\n";
  j << "  \"cuda_visible_devices\": " << q_or_null(std::getenv("CUDA_VISIBLE_DEVICES")) << ",\n";
  j << "  \"gpus\": [";
  for (size_t i = 0; i < g.gpus.size(); ++i) {
    const GpuInfo& d = g.gpus[i];
    j << (i ? ", " : "") << "{\"index\": " << d.index << ", \"name\": " << q(d.name)
      << ", \"compute_capability\": " << q(d.compute_capability) << ", \"sm_count\": " << d.sm_count
      << ", \"memory_bytes\": " << d.memory_total_bytes << ", \"memory_free_bytes\": "
      << (d.memory_free_bytes < 0 ? "null" : std::to_string(d.memory_free_bytes)) << ", \"clock_mhz\": " << d.clock_mhz
      << ", \"memory_clock_mhz\": " << d.memory_clock_mhz << ", \"pci_bus_id\": " << q(d.pci_bus_id) << "}";
  }
  j << "],\n";
  j << "  \"peer_access\": [";  // [i][j] = 1: GPU i can access GPU j's memory
  for (size_t r = 0; r < g.peer_access.size(); ++r) {
    j << (r ? ", " : "") << "[";
    for (size_t c = 0; c < g.peer_access[r].size(); ++c) j << (c ? ", " : "") << g.peer_access[r][c];
    j << "]";
  }
  j << "],\n";
  j << "  \"gpu_unavailable_reason\": " << (g.usable ? "null" : q(g.reason)) << ",\n";
  j << "  \"seed\": " << seed << "\n";
  j << "}\n";
  return j.str();
}

}  // namespace tb
