// tests/nvml/test_nvml_fake_run.cpp — trainbench with the fake NVML (fake_nvml.cpp,
// named by TB_NVML_LIBRARY): env.json's "nvml" record against the fake's fixed facts;
// and, on fake GPUs that compute on the host (tests/cuda_trace, TB_FAKE_EXECUTE=1), a
// GPU run's gpu_* columns against the scripted clock, power, temperature, reason and
// energy series; a missing or failing NVML leaves the columns empty and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "harness/csv_writer.h"
#include "harness/json_out.h"
#include "tests/nvml/fake_nvml_values.h"
#include "tests/json_file.h"
#include "tests/shell.h"

namespace {

namespace fake = tb::fake_nvml;
using Row = std::map<std::string, std::string>;

std::vector<Row> read_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<Row> rows;
  if (!std::getline(in, line)) return rows;
  const std::vector<std::string> header = tb::csv_fields(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = tb::csv_fields(line);
    Row r;
    for (size_t i = 0; i < header.size() && i < f.size(); ++i) r[header[i]] = f[i];
    rows.push_back(r);
  }
  return rows;
}

tb::Json read_json(const std::string& path) { return tb::test::read_json_file<tb::Json>(path); }

struct RunOutput {
  tb::test::ShellResult shell;
  std::vector<Row> rows;
  tb::Json env;
};

// `trainbench run ARGS --out NAME.csv` with `env` (VAR=VALUE words) before it.
RunOutput run_tb(const std::string& name, const std::string& env, const std::string& args) {
  const std::string out = tb::test::tmp(name) + ".csv";
  std::filesystem::remove(out);
  std::filesystem::remove(out + ".env.json");
  RunOutput r;
  r.shell = tb::test::shell("env " + env + " " + TB_TRAINBENCH_EXE + " run " + args + " --out " + out);
  r.rows = read_rows(out);
  if (std::filesystem::exists(out + ".env.json")) r.env = read_json(out + ".env.json");
  return r;
}

const std::string kFakeNvml = std::string("TB_NVML_LIBRARY=") + TB_FAKE_NVML;
const std::string kCpuRun = "--backend cpu-omp --model linear --layers 4,1 --samples 256 --batch 64 --epochs 1 --reps 1";

const char* kGpuColumns[] = {"gpu_energy_j",    "gpu_telemetry_samples", "gpu_sm_clock_min_mhz", "gpu_sm_clock_median_mhz",
                             "gpu_power_mean_w", "gpu_power_max_w",       "gpu_temp_max_c",       "gpu_throttle_reasons"};

TEST(NvmlEnv, RecordsDriverClocksPowerEccPcieAndTheLinkMatrix) {
  const RunOutput r = run_tb("nvml-env", kFakeNvml + " TB_FAKE_NVML_GPUS=4 TB_FAKE_NVML_NVLINKS=0-1:4", kCpuRun);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const tb::Json& n = r.env["nvml"];
  ASSERT_TRUE(n["available"].get<bool>()) << n.dump();
  EXPECT_EQ(n["driver_version"], fake::kDriverVersion);
  EXPECT_EQ(n["nvml_version"], fake::kNvmlVersion);
  ASSERT_EQ(n["gpus"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const tb::Json& g = n["gpus"][static_cast<size_t>(i)];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g["nvml_index"], i);
    EXPECT_EQ(g["name"], std::string(fake::kName) + " " + std::to_string(i));
    char bus[16];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", i);
    EXPECT_EQ(g["pci_bus_id"], bus);
    EXPECT_TRUE(g["cuda_index"].is_null());  // no CUDA device in this run
    EXPECT_EQ(g["max_clocks_mhz"]["sm"], fake::kMaxSmMhz);
    EXPECT_EQ(g["max_clocks_mhz"]["graphics"], fake::kMaxGraphicsMhz);
    EXPECT_EQ(g["max_clocks_mhz"]["memory"], fake::kMaxMemMhz);
    EXPECT_EQ(g["application_clocks_mhz"]["graphics"], fake::kAppGraphicsMhz);
    EXPECT_EQ(g["application_clocks_mhz"]["memory"], fake::kAppMemMhz);
    EXPECT_DOUBLE_EQ(g["power_limit_w"].get<double>(), fake::kPowerLimitMw / 1000.0);
    EXPECT_DOUBLE_EQ(g["enforced_power_limit_w"].get<double>(), fake::kEnforcedPowerLimitMw / 1000.0);
    EXPECT_EQ(g["ecc"]["current"], fake::kEccCurrent == 1);
    EXPECT_EQ(g["ecc"]["pending"], fake::kEccPending == 1);
    EXPECT_EQ(g["pcie"]["max_generation"], fake::kMaxPcieGen);
    EXPECT_EQ(g["pcie"]["max_width"], fake::kMaxPcieWidth);
    EXPECT_EQ(g["pcie"]["current_generation"], fake::kPcieGen);
    EXPECT_EQ(g["pcie"]["current_width"], fake::kPcieWidth);
    EXPECT_EQ(g["energy_counter"], true);
  }
  // The fake: 4 NVLinks join 0 and 1; PCIe: PXB within {0,1} and {2,3}, SYS across.
  const std::vector<std::vector<std::string>> want = {
      {"X", "NV4", "SYS", "SYS"}, {"NV4", "X", "SYS", "SYS"}, {"SYS", "SYS", "X", "PXB"}, {"SYS", "SYS", "PXB", "X"}};
  EXPECT_EQ(n["topology"]["matrix"].get<std::vector<std::vector<std::string>>>(), want) << n["topology"].dump();
}

TEST(NvmlEnv, LinksThroughAnNvSwitchJoinEveryPair) {
  const RunOutput r = run_tb("nvml-env-switch", kFakeNvml + " TB_FAKE_NVML_GPUS=3 TB_FAKE_NVML_NVSWITCH=18", kCpuRun);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const std::vector<std::vector<std::string>> want = {{"X", "NV18", "NV18"}, {"NV18", "X", "NV18"}, {"NV18", "NV18", "X"}};
  EXPECT_EQ(r.env["nvml"]["topology"]["matrix"].get<std::vector<std::vector<std::string>>>(), want);
}

TEST(NvmlEnv, MissingOrFailingNvmlIsExplained) {
  const RunOutput missing = run_tb("nvml-missing", "TB_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1", kCpuRun);
  ASSERT_EQ(missing.shell.code, 0) << missing.shell.out;
  EXPECT_EQ(missing.env["nvml"]["available"], false);
  EXPECT_EQ(missing.env["nvml"]["reason"], "NVML not found: /nonexistent/libnvidia-ml.so.1");
  const RunOutput failing = run_tb("nvml-init-fails", kFakeNvml + " TB_FAKE_NVML_INIT_FAIL=1", kCpuRun);
  ASSERT_EQ(failing.shell.code, 0) << failing.shell.out;
  EXPECT_EQ(failing.env["nvml"]["reason"], "NVML init failed: Driver Not Loaded");
  // Where the driver's library is absent (this development machine), the default name is the reason.
  if (!std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1") &&
      tb::test::shell("ldconfig -p | grep -q 'libnvidia-ml.so.1 '").code != 0) {
    const RunOutput plain = run_tb("nvml-default", "-u TB_NVML_LIBRARY", kCpuRun);
    EXPECT_EQ(plain.env["nvml"]["reason"], "NVML not found: libnvidia-ml.so.1");
  }
  // A CPU backend's telemetry cells are empty whatever NVML says.
  const RunOutput cpu = run_tb("nvml-cpu-row", kFakeNvml + " TB_FAKE_NVML_SM_MHZ=1500 TB_FAKE_NVML_ENERGY_STEP_MJ=100", kCpuRun);
  ASSERT_EQ(cpu.rows.size(), 1u);
  for (const char* c : kGpuColumns) EXPECT_EQ(cpu.rows[0].at(c), "") << c;
}

#if TB_NVML_HAVE_FAKE_GPU
// A scripted series of n values: "v0,v1,..." and the values.
std::string script(std::vector<unsigned long long>* v, unsigned long long lo, unsigned long long hi, int n, unsigned seed) {
  std::string s;
  for (int k = 0; k < n; ++k) {
    const unsigned long long x = lo + (static_cast<unsigned long long>(k) * 7919 + seed * 104729) % (hi - lo + 1);
    v->push_back(x);
    s += (k ? "," : "") + std::to_string(x);
  }
  return s;
}

const std::string kFakeGpu = std::string("LD_PRELOAD=") + TB_TRACE_SHIM + " TB_FAKE_EXECUTE=1 TB_TRACE_FILE=/dev/null ";
// Long enough on the host for several 2 ms samples per repetition.
const std::string kGpuWorkload =
    " --model mlp --layers 16,64,64,4 --samples 8192 --batch 128 --epochs 4 --warmup 1 --reps 2 --lr 0.05";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One GPU: each repetition's figures are the scripted values its samples read, in order
// (the fake hands out one value per call; repetition 2 continues where 1 stopped).
TEST(NvmlFakeGpu, ACudaRowCarriesTheScriptedSeriesFigures) {
  constexpr int kLen = 4000;
  std::vector<unsigned long long> sm, mw, temp, reasons;
  std::string env = kFakeGpu + kFakeNvml + " TB_FAKE_GPUS=1 TB_FAKE_NVML_GPUS=1 TB_NVML_SAMPLE_MS=2";
  env += " TB_FAKE_NVML_SM_MHZ=" + script(&sm, 300, 1980, kLen, 1);
  env += " TB_FAKE_NVML_POWER_MW=" + script(&mw, 60000, 700000, kLen, 2);
  env += " TB_FAKE_NVML_TEMP_C=" + script(&temp, 30, 95, kLen, 3);
  std::string r;  // reasons: mostly none, sometimes the SW power cap
  for (int k = 0; k < kLen; ++k) {
    reasons.push_back(k % 5 == 3 ? 4 : 0);
    r += (k ? "," : "") + std::to_string(reasons.back());
  }
  env += " TB_FAKE_NVML_REASONS=" + r + " TB_FAKE_NVML_ENERGY_STEP_MJ=2500";
  const RunOutput run1 = run_tb("nvml-cuda", env, "--backend cuda" + kGpuWorkload);
  ASSERT_EQ(run1.shell.code, 0) << run1.shell.out;
  ASSERT_EQ(run1.rows.size(), 2u) << run1.shell.out;
  EXPECT_EQ(run1.env["nvml"]["gpus"][0]["cuda_index"], 0);  // matched by PCI bus id
  size_t at = 0;
  for (const Row& row : run1.rows) {
    SCOPED_TRACE("repetition " + row.at("repetition"));
    ASSERT_EQ(row.at("status"), "ok");
    const int k = std::stoi(row.at("gpu_telemetry_samples"));
    ASSERT_GE(k, 3) << "too few samples to tell a median from a mean";
    ASSERT_LE(at + static_cast<size_t>(k), sm.size());
    std::vector<double> clocks(sm.begin() + at, sm.begin() + at + k);
    double psum = 0, pmax = 0, tmax = 0;
    uint64_t bits = 0;
    for (size_t i = at; i < at + static_cast<size_t>(k); ++i) {
      psum += mw[i] / 1000.0;
      pmax = std::max(pmax, mw[i] / 1000.0);
      tmax = std::max(tmax, static_cast<double>(temp[i]));
      bits |= reasons[i];
    }
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_sm_clock_min_mhz")), *std::min_element(clocks.begin(), clocks.end()));
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_sm_clock_median_mhz")), median(clocks));
    EXPECT_NEAR(std::stod(row.at("gpu_power_mean_w")), psum / k, 1e-6 * psum / k);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_power_max_w")), pmax);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_temp_max_c")), tmax);
    EXPECT_EQ(row.at("gpu_throttle_reasons"), bits ? "sw_power_cap" : "none");
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_energy_j")), 2.5);  // one 2500 mJ step between two reads
    at += static_cast<size_t>(k);
  }
}

// cuda-dp on two GPUs: energy summed over both, the hotter GPU's temperature, the slower one's clocks.
TEST(NvmlFakeGpu, CudaDpSumsEnergyOverItsGpus) {
  std::string env = kFakeGpu + kFakeNvml + " TB_FAKE_GPUS=2 TB_FAKE_NVML_GPUS=2";
  env += " TB_FAKE_NVML_SM_MHZ='1980;1200' TB_FAKE_NVML_TEMP_C='50;77' TB_FAKE_NVML_POWER_MW='300000;200000'";
  env += " TB_FAKE_NVML_REASONS='0;64' TB_FAKE_NVML_ENERGY_STEP_MJ='2500;4000'";
  const RunOutput r = run_tb("nvml-cuda-dp", env, "--backend cuda-dp --devices 0,1" + kGpuWorkload);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  ASSERT_EQ(r.rows.size(), 2u);
  for (const Row& row : r.rows) {
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_energy_j")), 6.5);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_sm_clock_min_mhz")), 1200);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_sm_clock_median_mhz")), 1200);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_power_mean_w")), 500);  // 300 W + 200 W
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_power_max_w")), 300);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_temp_max_c")), 77);
    EXPECT_EQ(row.at("gpu_throttle_reasons"), "hw_thermal_slowdown");
  }
}

// cuda-ddp over two ranks, one GPU each: each rank samples its own GPU; the row is the
// job's (energy and mean power summed over ranks, the slower clock, the hotter GPU).
TEST(NvmlFakeGpu, CudaDdpCombinesTheRanksFigures) {
#if !TB_NVML_HAVE_DDP
  GTEST_SKIP() << "cuda-ddp is not built (needs MPI and NCCL)";
#endif
  std::string env = kFakeGpu + kFakeNvml + " TB_FAKE_GPUS=2 TB_FAKE_NVML_GPUS=2";
  env += " TB_FAKE_NVML_SM_MHZ='1980;1200' TB_FAKE_NVML_TEMP_C='77;50' TB_FAKE_NVML_POWER_MW='300000;200000'";
  env += " TB_FAKE_NVML_REASONS='4;0' TB_FAKE_NVML_ENERGY_STEP_MJ='2500;4000'";
  const RunOutput r = run_tb("nvml-cuda-ddp", env + " " + tb::test::mpirun(2),
                             "--backend cuda-ddp --comm-timeout 60" + kGpuWorkload);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  ASSERT_EQ(r.rows.size(), 2u) << r.shell.out;
  for (const Row& row : r.rows) {
    EXPECT_EQ(row.at("devices"), "0,1");
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_energy_j")), 6.5);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_sm_clock_min_mhz")), 1200);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_sm_clock_median_mhz")), 1200);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_power_mean_w")), 500);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_power_max_w")), 300);
    EXPECT_DOUBLE_EQ(std::stod(row.at("gpu_temp_max_c")), 77);
    EXPECT_EQ(row.at("gpu_throttle_reasons"), "sw_power_cap");
    EXPECT_GE(std::stoi(row.at("gpu_telemetry_samples")), 1);
  }
}

TEST(NvmlFakeGpu, WithoutNvmlTheColumnsAreEmptyAndEnvJsonSaysWhy) {
  const RunOutput r = run_tb("nvml-cuda-missing", kFakeGpu + "TB_FAKE_GPUS=1 TB_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1",
                    "--backend cuda" + kGpuWorkload);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  ASSERT_EQ(r.rows.size(), 2u);
  for (const Row& row : r.rows) {
    EXPECT_EQ(row.at("status"), "ok");
    for (const char* c : kGpuColumns) EXPECT_EQ(row.at(c), "") << c;
  }
  EXPECT_EQ(r.env["nvml"]["reason"], "NVML not found: /nonexistent/libnvidia-ml.so.1");
}

TEST(NvmlFakeGpu, AGpuWithoutTheEnergyCounterLeavesEnergyEmpty) {
  const RunOutput r = run_tb("nvml-cuda-noenergy",
                    kFakeGpu + kFakeNvml + " TB_FAKE_GPUS=1 TB_FAKE_NVML_NO_ENERGY=1 TB_FAKE_NVML_SM_MHZ=1410",
                    "--backend cuda" + kGpuWorkload);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].at("gpu_energy_j"), "");
  EXPECT_EQ(r.rows[0].at("gpu_sm_clock_min_mhz"), "1410");
  EXPECT_EQ(r.env["nvml"]["gpus"][0]["energy_counter"], false);
}
#endif

}  // namespace
