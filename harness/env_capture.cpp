// harness/env_capture.cpp — env.json: where, with what, from which commit.
#include "harness/env_capture.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <unistd.h>

#include "harness/build_provenance.h"
#include "harness/host_info.h"
#include "harness/host_topology.h"
#include "harness/mpi_library.h"
#include "harness/nvml_env.h"
#include "harness/json_out.h"
#include "harness/result_row.h"
#include "kernels/cpu/cpu_props.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear_step.h"

namespace tb {
namespace {

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
  // The process id makes the id unique on this host: two runs started in the same second
  // (two terminals, two CI jobs on one runner) would otherwise share one id, one default
  // folder, and be merged as one run by the reports.
  id.run_id = std::string(rid) + "-" + id.host + "-" + std::to_string(::getpid());
  return id;
}

std::string host_record_json() {
  const HostInfo h = host_info();
  const HostTopology t = host_topology();
  const CpuFrequency f = cpu_frequency();
  Json caches = Json::array();
  for (const CacheLevel& c : t.caches) {
    caches.push_back({{"level", c.level},
                      {"type", c.type},
                      {"size_bytes", c.size_bytes},
                      {"line_bytes", c.line_bytes},
                      {"instances", c.instances}});
  }
  Json topo = t.available ? Json{{"hwloc", t.hwloc_version},  {"sockets", t.sockets},
                                 {"physical_cores", t.cores},  {"logical_cpus", t.pus},
                                 {"threads_per_core", t.threads_per_core}, {"numa_nodes", t.numa_nodes},
                                 {"allowed_cpus", t.allowed_pus}, {"caches", caches}}
                          : Json{{"unavailable", t.why_not}};
  Json j = {{"hostname", h.hostname},           {"os", h.os},
            {"kernel", h.kernel},               {"cpu_model", h.cpu_model},
            {"logical_cores", h.logical_cores}, {"memory_bytes", h.memory_bytes},
            {"topology", topo},
            {"cpu_frequency", {{"governor", or_null(f.governor)},
                               {"current_mhz", f.cur_mhz < 0 ? Json(nullptr) : Json(f.cur_mhz)},
                               {"max_mhz", f.max_mhz < 0 ? Json(nullptr) : Json(f.max_mhz)},
                               {"source", f.source}}}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string env_json(const RunIdentity& id, const std::string& command_line, uint64_t seed,
                     const std::vector<std::string>& hosts, const std::string& ceilings) {
  const GpuInventory g = gpu_inventory(FreeMemory::kNotRead);
  // The commit the binary was built from, captured at build time (build_provenance.h):
  // editing the tree afterwards neither marks this run dirty nor cleans it.
  const BuildProvenance b = build_provenance();
#if defined(TB_HAVE_CUDA)
  const char* cuda = TB_CUDA_ARCHS;
#else
  const char* cuda = nullptr;
#endif
#if defined(TB_MPI_FOUND)
  const char* mpi_standard = TB_MPI_FOUND;
#else
  const char* mpi_standard = nullptr;
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
  j["git"] = {{"commit", or_null(b.commit)}, {"dirty", b.dirty}, {"describe", b.describe}, {"captured", "at build time"}};
  j["build"] = {{"type", TB_BUILD_TYPE},
                {"compiler", TB_CXX_COMPILER},
                {"flags", TB_CXX_FLAGS},
                {"cuda_architectures", or_null(cuda)},
                {"cuda_toolkit", or_null(cuda_toolkit_version())},  // what it was built with
                {"cuda_runtime", or_null(g.runtime_version)},       // what it found at run time
                {"mpi", mpi_library()},
                {"mpi_standard", or_null(mpi_standard)},
                {"mpi_launcher_flags", mpi_launcher_flags()},
                {"nccl", or_null(nccl)},
                {"cpu_gemm", cpu::gemm_implementation()}};
  // This host (the writer's), and every node of a multi-process run.
  Json all = Json::array();
  std::vector<std::string> seen;
  for (const std::string& text : hosts.empty() ? std::vector<std::string>{host_record_json()} : hosts) {
    Json rec = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (rec.is_discarded() || !rec.contains("hostname")) continue;
    const std::string name = rec["hostname"].get<std::string>();
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    all.push_back(rec);
  }
  if (all.empty()) all.push_back(Json::parse(host_record_json()));
  j["host"] = all.front();
  j["hosts"] = all;
  j["openmp"] = {{"version", _OPENMP},
                 {"max_threads", omp_get_max_threads()},
                 {"omp_num_threads", env_or_empty("OMP_NUM_THREADS")},
                 {"proc_bind", env_or_empty("OMP_PROC_BIND")},
                 {"places", env_or_empty("OMP_PLACES")}};
  {
    // Which GEMM micro-kernel and blocking cpu-omp, cpu-ddp and cpu-hogwild run here,
    // and the CPU properties they were chosen from (kernels/cpu/gemm.h, cpu_props.h).
    const cpu::GemmConfig& g_cfg = cpu::gemm_config();
    const cpu::CpuProps& p = cpu::cpu_props();
    j["cpu_gemm"] = {{"kernel", g_cfg.kernel},
                     {"micro_tile", std::to_string(g_cfg.mr) + "x" + std::to_string(g_cfg.nr)},
                     {"kc", g_cfg.kc},
                     {"nc", g_cfg.nc},
                     {"vector_unit", g_cfg.vector_unit},
                     {"chosen_by", g_cfg.chosen_by},
                     {"linear_step", cpu::linear_step_implementation()},
                     {"cpu", {{"vendor", p.vendor},
                              {"family", p.family},
                              {"model", p.model},
                              {"avx512", p.avx512},
                              {"avx512_double_pumped", p.avx512_double_pumped},
                              {"avx2_fma", p.avx2_fma},
                              {"amx", p.amx},
                              {"l1d_bytes", p.l1d_bytes},
                              {"l2_bytes", p.l2_bytes},
                              {"l3_bytes", p.l3_bytes},
                              {"cache_source", p.cache_source}}}};
  }
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
  // NVML (loaded at run time): driver, clocks, power limit, ECC, PCIe, GPU links; or why not.
  j["nvml"] = nvml_environment(g);
  j["seed"] = seed;
  if (!ceilings.empty()) j["ceilings"] = Json::parse(ceilings);  // measured by harness/ceilings.cpp
  return json_text(j);
}

namespace {

// A value for a one-line message: compact JSON, cut to a readable length.
std::string brief(const Json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return "'" + s + "'";
}

// The hosts' names in order (a multi-process run's nodes), for comparing "hosts" without
// their clocks and free memory.
Json host_names(const Json& env) {
  Json names = Json::array();
  if (env.contains("hosts") && env["hosts"].is_array()) {
    for (const Json& h : env["hosts"]) {
      names.push_back(h.is_object() && h.contains("hostname") ? h["hostname"] : Json());
    }
  }
  return names;
}

}  // namespace

std::string env_difference(const std::string& earlier, const std::string& now) {
  const Json a = Json::parse(earlier, nullptr, /*allow_exceptions=*/false);
  const Json b = Json::parse(now, nullptr, /*allow_exceptions=*/false);
  if (a.is_discarded() || !a.is_object()) return "cannot be read (not a JSON object: edited or truncated?)";
  if (b.is_discarded() || !b.is_object()) return "cannot be compared (internal: this run's is not a JSON object)";
  // The build and the machine. What a run may set for itself (the variables of
  // kRunSettings, recorded per appended run) and what changes from run to run (time,
  // command line, the CPU clock read at start, measured ceilings) are not compared.
  static const char* const kFacts[] = {
      "/schema_version", "/trainbench_version", "/git/commit", "/git/dirty", "/build",  "/host/hostname",
      "/host/os",        "/host/kernel",        "/host/cpu_model", "/host/logical_cores", "/driver",
      "/cuda_runtime",   "/cublas",             "/nccl_runtime"};
  for (const char* fact : kFacts) {
    const Json::json_pointer at(fact);
    const Json then = a.contains(at) ? a.at(at) : Json();
    const Json here = b.contains(at) ? b.at(at) : Json();
    if (then != here) {
      std::string name = std::string(fact).substr(1);
      std::replace(name.begin(), name.end(), '/', '.');
      return "differs from this run's (" + name + ": " + brief(then) + " then, " + brief(here) + " now)";
    }
  }
  if (host_names(a) != host_names(b)) {
    return "differs from this run's (hosts: " + brief(host_names(a)) + " then, " + brief(host_names(b)) + " now)";
  }
  return "";
}

std::string env_with_appended_run(const std::string& earlier, const std::string& now) {
  Json j = Json::parse(earlier);
  const Json b = Json::parse(now);
  if (!j.contains("appended_runs") || !j["appended_runs"].is_array()) j["appended_runs"] = Json::array();
  // Its identity, and the settings a run may choose for itself through the environment
  // (threads and binding, the GEMM kernel, BLAS variables, which GPUs it sees).
  Json run = Json::object();
  for (const char* key : {"run_id", "timestamp", "command_line", "seed", "openmp", "cpu_gemm", "blas_env",
                          "cuda_visible_devices", "gpus"}) {
    run[key] = b.contains(key) ? b[key] : Json();
  }
  j["appended_runs"].push_back(run);
  return json_text(j);
}

}  // namespace tb
