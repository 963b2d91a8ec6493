// harness/result_schema.cpp — the columns of results.csv and curves.csv (schema 2), one
// line each: name, type, role, unit, nullable, meaning, getter. Add a column here (new
// columns are nullable, so readers of older files of this version still work), then
// `make schema` regenerates the README table and reports/schema.json.
#include "harness/result_schema.h"

#include <algorithm>
#include <cstdio>

#include "harness/backend.h"
#include "harness/cli.h"
#include "harness/json_out.h"
#include "harness/nvml.h"
#include "harness/utf8.h"

namespace tb {
namespace {

using T = ColumnType;
using R = ColumnRole;

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
std::string opt(double v) { return v < 0 ? std::string() : num(v); }  // < 0: not measured, empty
std::string boolean(bool b) { return b ? "true" : "false"; }
// A phase cell: empty where the phases were not timed (--phase-timing off).
std::string phase(const ResultRow& r, double v) { return r.config.phase_timing ? num(v) : std::string(); }
std::string ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// The row's backend's traits; an unknown name (never written by the harness) has none.
bool traits_for(const ResultRow& r, BackendTraits* t) {
  const Backend* b = find_backend(r.config.backend);
  if (b) *t = b->traits();
  return b != nullptr;
}
std::string trait(const ResultRow& r, std::string (*f)(const BackendTraits&)) {
  BackendTraits t;
  return traits_for(r, &t) ? f(t) : "";
}

const std::vector<Column>& table() {
  static const std::vector<Column> t = {
      // ---- id
      {"schema_version", T::kInt, R::kId, "", false,
       "the CSV schema's version (this table is version 2)",
       [](const ResultRow&) { return std::to_string(kSchemaVersion); }},
      {"run_id", T::kString, R::kId, "", false,
       "`YYYYmmdd-HHMMSS-host-pid`, the same on every row of one `run` or `suite`",
       [](const ResultRow& r) { return r.run_id; }},
      {"timestamp", T::kString, R::kId, "", false, "when the run started, ISO-8601 UTC",
       [](const ResultRow& r) { return r.timestamp; }},
      {"host", T::kString, R::kId, "", false, "host name (rank 0's)", [](const ResultRow& r) { return r.host; }},
      // ---- workload: what was trained, the same for every backend of a comparable row;
      // setup: which backend, where, in what precision (interleaved in the historical order)
      {"workload", T::kString, R::kWorkload, "", false,
       "the suite entry's NAME or `--workload` (default: model, layers, samples, batch); the same for every "
       "backend of one workload",
       [](const ResultRow& r) { return r.config.workload; }},
      {"backend", T::kString, R::kSetup, "", false,
       "as `trainbench backends` lists it; `torch-*` are the PyTorch peers (bench/peers/)",
       [](const ResultRow& r) { return r.config.backend; }},
      {"model", T::kString, R::kWorkload, "", false, "`linear` or `mlp`",
       [](const ResultRow& r) { return std::string(model_name(r.config.model.kind)); }},
      {"layers", T::kString, R::kWorkload, "", false, "layer widths, input first (`784,256,10`)",
       [](const ResultRow& r) { return layers_to_string(r.config.model.layers); }},
      {"dataset", T::kString, R::kWorkload, "", false,
       "the dataset's description (`synthetic-regression(seed=1,noise=0.1)`, `csv:PATH`, ...)",
       [](const ResultRow& r) { return r.dataset_desc; }},
      {"task", T::kString, R::kWorkload, "", false, "`regression` or `classification`",
       [](const ResultRow& r) { return std::string(task_name(r.config.data.task)); }},
      {"n_samples", T::kInt, R::kWorkload, "rows", false, "training rows",
       [](const ResultRow& r) { return std::to_string(r.config.data.n); }},
      {"batch_size", T::kInt, R::kWorkload, "rows", false, "global batch size (all ranks and replicas together)",
       [](const ResultRow& r) { return std::to_string(r.config.batch); }},
      {"epochs", T::kInt, R::kWorkload, "epochs", false, "timed epochs per repetition",
       [](const ResultRow& r) { return std::to_string(r.config.epochs); }},
      {"warmup", T::kInt, R::kWorkload, "epochs", false, "untimed warm-up epochs before the repetitions (`--warmup`)",
       [](const ResultRow& r) { return std::to_string(r.config.warmup); }},
      {"lr", T::kFloat, R::kWorkload, "", false, "SGD learning rate", [](const ResultRow& r) { return num(r.config.lr); }},
      {"momentum", T::kFloat, R::kWorkload, "", false, "SGD momentum",
       [](const ResultRow& r) { return num(r.config.momentum); }},
      {"weight_decay", T::kFloat, R::kWorkload, "", false, "SGD L2 weight decay",
       [](const ResultRow& r) { return num(r.config.weight_decay); }},
      {"seed", T::kInt, R::kWorkload, "", false, "seed of the data, the initial parameters and the shuffles",
       [](const ResultRow& r) { return std::to_string(r.config.seed); }},
      {"shuffle", T::kBool, R::kWorkload, "", false,
       "a seeded permutation of the rows every epoch, the same for every backend (`--shuffle`); false: in order",
       [](const ResultRow& r) { return boolean(r.config.shuffle); }},
      {"drop_last", T::kBool, R::kWorkload, "", false,
       "the last partial batch of an epoch is dropped (`--drop-last`); false: kept, its mean over its own size",
       [](const ResultRow& r) { return boolean(r.config.drop_last); }},
      {"target_loss", T::kFloat, R::kWorkload, "", true,
       "`--target-loss`: the evaluated loss a time-to-target run aims at (see time_to_target_s); empty: not set",
       [](const ResultRow& r) { return r.config.has_target() ? num(r.config.target_loss) : std::string(); }},
      {"precision", T::kString, R::kSetup, "", false,
       "what the backend computed in: `fp64` (reference), `fp32`, `tf32` (`--precision tf32`: CUDA GEMMs)",
       [](const ResultRow& r) { return r.precision; }, nullptr, kKnobTf32},
      {"world_size", T::kInt, R::kSetup, "processes or GPUs", false,
       "ranks × model replicas per rank: 1 for single-device backends, the replicas of cuda-dp, the ranks of "
       "cpu-ddp and cuda-ddp, the worker processes of cpu-hogwild (which share one replica)",
       [](const ResultRow& r) { return std::to_string(r.world_size); }},
      {"devices", T::kString, R::kSetup, "", false,
       "`cpu`, or the GPUs used as each process numbers them: `cuda` its GPU (`--device`); `cuda-dp` each "
       "replica's GPU (`0,0`: two replicas share GPU 0); `cuda-ddp` each rank's GPU in rank order, `NODE:GPU` "
       "per rank when the job spans nodes (nodes numbered by their first rank). Which physical GPU each is, and "
       "so whether one is shared (the report's shared-device flag): `gpu_bus_ids`",
       [](const ResultRow& r) { return r.devices; }, nullptr, kKnobDevice},
      {"threads", T::kInt, R::kSetup, "threads", false,
       "CPU threads per process (`--threads`); 1 for backends not on CPU threads",
       [](const ResultRow& r) { return std::to_string(r.config.threads); }},
      // ---- knobs: empty where the backend does not honour them (BackendTraits::knobs)
      {"data_placement", T::kString, R::kKnob, "", true,
       "`device`: the data is uploaded once, before timing; `host`: every batch is streamed from pinned host "
       "memory inside the step (`--data-placement`)",
       [](const ResultRow& r) { return r.config.data_placement; }, nullptr, kKnobHostPlacement},
      {"cuda_graph", T::kBool, R::kKnob, "", true, "the step is captured once as a CUDA graph and replayed (`--cuda-graph`)",
       [](const ResultRow& r) { return boolean(r.config.cuda_graph); }, nullptr, kKnobCudaGraph},
      {"dp_mode", T::kString, R::kKnob, "", true,
       "cuda-dp: `faithful` (replicate from GPU 0 every step, as torch.nn.DataParallel) or `persistent` (keep the "
       "replicas, broadcast the updated parameters) (`--dp-mode`)",
       [](const ResultRow& r) { return r.config.dp_mode; }, nullptr, kKnobDpMode},
      {"dp_devices", T::kString, R::kKnob, "", true,
       "cuda-dp: the GPU slots asked for (`--devices`); empty: every visible GPU",
       [](const ResultRow& r) { return ints(r.config.dp_devices); }, nullptr, kKnobDpDevices},
      {"bucket_mb", T::kFloat, R::kKnob, "MiB", true, "multi-process: gradient bucket size (`--bucket-mb`)",
       [](const ResultRow& r) { return num(r.config.bucket_mb); }, nullptr, kKnobBucket},
      {"overlap", T::kBool, R::kKnob, "", true,
       "multi-process: buckets are all-reduced during the backward pass; false: after it (`--no-overlap`)",
       [](const ResultRow& r) { return boolean(r.config.overlap); }, nullptr, kKnobNoOverlap},
      {"deterministic", T::kBool, R::kKnob, "", true,
       "fixed reduction order: results bitwise equal across runs and world sizes (`--deterministic`)",
       [](const ResultRow& r) { return boolean(r.config.deterministic); }, nullptr, kKnobDeterministic},
      {"workers", T::kInt, R::kKnob, "processes", true,
       "cpu-hogwild: worker processes updating one shared replica without locks (`--workers`)",
       [](const ResultRow& r) { return std::to_string(r.config.workers); }, nullptr, kKnobWorkers},
      {"phase_timing", T::kBool, R::kKnob, "", true,
       "GPU backends: each phase timed with CUDA events recorded in-stream (`--phase-timing`); false: no "
       "per-phase events, the phase cells are empty (what the events cost: docs/performance.md)",
       [](const ResultRow& r) { return boolean(r.config.phase_timing); }, nullptr, kKnobNoPhaseTiming},
      // ---- traits: facts about the backend, so readers never need its name
      {"implementation", T::kString, R::kTrait, "", false,
       "`trainbench` for this harness's backends, `pytorch` for the PyTorch peers",
       [](const ResultRow& r) { return trait(r, [](const BackendTraits&) { return std::string("trainbench"); }); }},
      {"device_kind", T::kString, R::kTrait, "", false, "where the backend computes: `cpu` or `gpu`",
       [](const ResultRow& r) {
         return trait(r, [](const BackendTraits& t) { return std::string(device_kind_name(t.device)); });
       }},
      {"parallelism", T::kString, R::kTrait, "", false,
       "`none` (one replica), `dp` (one process, replicas on several devices), `ddp` (one process per rank) or "
       "`shm` (worker processes sharing one replica in shared memory)",
       [](const ResultRow& r) {
         return trait(r, [](const BackendTraits& t) { return std::string(parallelism_name(t.parallelism)); });
       }},
      {"scaling_base", T::kString, R::kTrait, "", true,
       "the one-replica backend whose world-size-1 row this backend's scaling is measured against (`cuda` for "
       "cuda-dp and cuda-ddp, `cpu-omp` for cpu-ddp and cpu-hogwild); empty: none, it is one",
       [](const ResultRow& r) { return trait(r, [](const BackendTraits& t) { return t.scaling_base; }); }},
      {"oracle", T::kBool, R::kTrait, "", false,
       "true for the float64 reference that every other backend's final loss is checked against",
       [](const ResultRow& r) { return trait(r, [](const BackendTraits& t) { return boolean(t.oracle); }); }},
      {"asynchronous", T::kBool, R::kTrait, "", true,
       "true where updates are applied without synchronisation (Hogwild!: cpu-hogwild, torch-hogwild): not "
       "reproducible bit for bit nor equal to the reference; reports check its loss within a wider bound "
       "(README \"Hogwild!\")",
       [](const ResultRow& r) { return trait(r, [](const BackendTraits& t) { return boolean(t.asynchronous); }); }},
      // ---- repetition
      {"repetition", T::kInt, R::kRepetition, "", false, "0..R-1; each starts again from the seed's parameters",
       [](const ResultRow& r) { return std::to_string(r.repetition); }},
      // ---- measurements: empty unless ok
      {"train_time_s", T::kFloat, R::kMetric, "s", false,
       "wall time of the timed epochs (steady clock; GPU: CUDA events), the slowest rank's",
       [](const ResultRow& r) { return num(r.train_time_s); }},
      {"samples_per_s", T::kFloat, R::kMetric, "samples/s", false, "epochs × rows per epoch / train_time_s",
       [](const ResultRow& r) { return num(r.samples_per_s); }},
      {"transfer_s", T::kFloat, R::kPhase, "s", true,
       "moving data into place inside the timed epochs (shuffled-row gathers; host↔device copies; with "
       "`--data-placement host` the time compute waited for a staged batch); the dataset's upload before them is "
       "upload_s",
       [](const ResultRow& r) { return phase(r, r.transfer_s); }},
      {"forward_s", T::kFloat, R::kPhase, "s", true,
       "forward pass and loss (for the fused linear-regression step of cpu-omp and cuda the gradients too; "
       "backward_s is then 0, on cuda the ~0 gap between two events)",
       [](const ResultRow& r) { return phase(r, r.forward_s); }},
      {"backward_s", T::kFloat, R::kPhase, "s", true, "backward pass",
       [](const ResultRow& r) { return phase(r, r.backward_s); }},
      {"comm_s", T::kFloat, R::kPhase, "s", true,
       "exposed communication: time the step waited for all-reduces (0 for single-process backends)",
       [](const ResultRow& r) { return phase(r, r.comm_s); }},
      {"optimizer_s", T::kFloat, R::kPhase, "s", true, "SGD update",
       [](const ResultRow& r) { return phase(r, r.optimizer_s); }},
      {"allreduce_bytes_per_step", T::kInt, R::kMetric, "bytes", false,
       "gradient bytes each rank all-reduces per step (`--deterministic`: the gradient's bytes, all-gathered as "
       "12 leaf gradients instead; 0 for single-process backends)",
       [](const ResultRow& r) { return std::to_string(r.allreduce_bytes_per_step); }},
      {"comm_busbw_gbps", T::kFloat, R::kMetric, "GB/s", true,
       "in-training all-reduce bus bandwidth, 2(n−1)/n × allreduce_bytes_per_step × steps / time inside the "
       "all-reduces (`--deterministic`: all-gather bus bandwidth, (n−1)/n × 12 × allreduce_bytes_per_step × steps "
       "/ time inside the gradients' all-gathers) (1e9 bytes); empty at world size 1",
       [](const ResultRow& r) { return r.comm_busbw_gbps < 0 ? std::string() : num(r.comm_busbw_gbps); }},
      {"upload_s", T::kFloat, R::kMetric, "s", true,
       "GPU backends with `--data-placement device`: the dataset's copy to the device before each repetition's "
       "timed epochs, from pageable host memory, not part of train_time_s (CUDA events; PyTorch peers: "
       "`.to(device)` between synchronisations), the slowest rank's; empty where nothing is uploaded",
       [](const ResultRow& r) { return r.upload_s < 0 ? std::string() : num(r.upload_s); }},
      {"upload_gbps", T::kFloat, R::kMetric, "GB/s", true,
       "the upload's rate, bytes copied / upload_s / 1e9, the slowest rank's; empty where nothing is uploaded",
       [](const ResultRow& r) { return r.upload_gbps < 0 ? std::string() : num(r.upload_gbps); }},
      {"final_loss", T::kFloat, R::kMetric, "", false,
       "mean loss over the whole training set with the final parameters, measured after training, untimed",
       [](const ResultRow& r) { return num(r.final_loss); }},
      {"final_accuracy", T::kFloat, R::kMetric, "fraction", true, "0..1, classification only; empty for regression",
       [](const ResultRow& r) { return r.final_accuracy < 0 ? std::string() : num(r.final_accuracy); }},
      {"target_reached", T::kBool, R::kMetric, "", true,
       "`--target-loss` runs: true when the loss over the whole training set, evaluated after every timed epoch, "
       "reached target_loss (≤) within the timed epochs, false when it never did; empty without `--target-loss`",
       [](const ResultRow& r) {
         return !r.config.has_target() ? std::string() : boolean(r.target_epoch > 0);
       }},
      {"time_to_target_s", T::kFloat, R::kMetric, "s", true,
       "wall time from the start of the first timed epoch to the end of the first evaluation at or below "
       "target_loss, evaluations included (MLPerf's rule: the clock does not pause), the slowest rank's; empty "
       "when not reached or not set",
       [](const ResultRow& r) { return r.target_epoch > 0 ? num(r.time_to_target_s) : std::string(); }},
      {"target_epoch", T::kInt, R::kMetric, "epochs", true,
       "the timed epoch (1-based) after which the evaluated loss first reached target_loss; empty when not "
       "reached or not set",
       [](const ResultRow& r) { return r.target_epoch > 0 ? std::to_string(r.target_epoch) : std::string(); }},
      {"param_checksum", T::kFloat, R::kMetric, "", false, "sum of all final parameters",
       [](const ResultRow& r) {
         char buf[40];
         std::snprintf(buf, sizeof buf, "%.12g", r.param_checksum);
         return std::string(buf);
       }},
      {"peak_host_mem_bytes", T::kInt, R::kMetric, "bytes", false,
       "peak resident set of the process (rank 0's; cpu-hogwild and torch-hogwild: the parent's; the PyTorch "
       "peers measure theirs alike) from the start of this configuration to the end of the repetition: Linux's "
       "VmHWM, reset as the configuration starts (its data and the loaded libraries count; a suite's earlier "
       "configurations and the ceilings' arrays do not); where it cannot be reset, the process's peak so far "
       "(VmHWM unreset; getrusage's ru_maxrss without /proc)",
       [](const ResultRow& r) { return std::to_string(r.peak_host_mem_bytes); }},
      {"peak_device_mem_bytes", T::kInt, R::kMetric, "bytes", false,
       "peak GPU memory of GPU backends on their busiest GPU: the trainer's buffers, or more where free memory "
       "(cudaMemGetInfo) fell further from when setup began (cuBLAS handles, NCCL buffers, CUDA graphs); "
       "without the CUDA context, which exists before free memory can be read; 0 on the CPU",
       [](const ResultRow& r) { return std::to_string(r.peak_device_mem_bytes); }},
      {"others_cpu_share", T::kFloat, R::kMetric, "fraction", true,
       "share of the host's CPU time (wall × CPUs) that other processes took during the timed epochs: "
       "/proc/stat busy time minus the CPU time of the job's ranks on that host (and of cpu-hogwild's workers), "
       "over the repetition, or since the "
       "first timed repetition began where the repetition's own window was under 0.5 s (10 ms ticks); empty "
       "where that window too was under 0.5 s, where /proc/stat is not readable and on the multi-process "
       "PyTorch peers (torch-ddp, torch-hogwild), as are steal_share and disturbed",
       [](const ResultRow& r) { return r.others_cpu_share < 0 ? std::string() : num(r.others_cpu_share); }},
      {"steal_share", T::kFloat, R::kMetric, "fraction", true,
       "share of the host's CPU time the hypervisor stole during the timed epochs (/proc/stat steal)",
       [](const ResultRow& r) { return r.steal_share < 0 ? std::string() : num(r.steal_share); }},
      {"disturbed", T::kBool, R::kMetric, "", true,
       "true when others_cpu_share or steal_share is above 0.05: the timing is not trustworthy",
       [](const ResultRow& r) { return r.others_cpu_share < 0 ? std::string() : (r.disturbed() ? "true" : "false"); }},
      // ---- NVML telemetry of GPU backends (harness/gpu_telemetry.h): empty without NVML
      // (env.json's nvml.reason says why), on CPU backends, and for figures not sampled.
      {"gpu_energy_j", T::kFloat, R::kMetric, "J", true,
       "GPU energy over the timed epochs: the delta of NVML's total-energy counter "
       "(nvmlDeviceGetTotalEnergyConsumption, mJ) from before the first to after the last epoch, summed over the "
       "run's GPUs (every rank's); the report's samples per joule is epochs × rows per epoch / gpu_energy_j",
       [](const ResultRow& r) { return opt(r.gpu.energy_j); }},
      {"gpu_telemetry_samples", T::kInt, R::kMetric, "samples", true,
       "NVML samples taken per GPU during the timed epochs (one at the start, then every 50 ms; the fewest of "
       "the run's GPUs)",
       [](const ResultRow& r) { return r.gpu.samples < 0 ? std::string() : std::to_string(r.gpu.samples); }},
      {"gpu_sm_clock_min_mhz", T::kFloat, R::kMetric, "MHz", true,
       "lowest SM clock sampled on any of the run's GPUs (nvmlDeviceGetClockInfo)",
       [](const ResultRow& r) { return opt(r.gpu.sm_clock_min_mhz); }},
      {"gpu_sm_clock_median_mhz", T::kFloat, R::kMetric, "MHz", true,
       "median of each GPU's SM clock samples, the lowest GPU's",
       [](const ResultRow& r) { return opt(r.gpu.sm_clock_median_mhz); }},
      {"gpu_power_mean_w", T::kFloat, R::kMetric, "W", true,
       "mean board power of each GPU over its samples, summed over the run's GPUs (nvmlDeviceGetPowerUsage)",
       [](const ResultRow& r) { return opt(r.gpu.power_mean_w); }},
      {"gpu_power_max_w", T::kFloat, R::kMetric, "W", true,
       "highest board power sample of any one of the run's GPUs (compare with env.json's power limit)",
       [](const ResultRow& r) { return opt(r.gpu.power_max_w); }},
      {"gpu_temp_max_c", T::kFloat, R::kMetric, "°C", true, "highest GPU temperature sampled",
       [](const ResultRow& r) { return opt(r.gpu.temp_max_c); }},
      {"gpu_throttle_reasons", T::kString, R::kMetric, "", true,
       "clocks event (throttle) reasons seen in any sample, `|`-separated (`sw_power_cap`, `hw_slowdown`, "
       "`sw_thermal_slowdown`, `hw_thermal_slowdown`, `hw_power_brake_slowdown`, `gpu_idle`, ...), `none` when "
       "none; the report flags a row with a power or thermal reason as throttled",
       [](const ResultRow& r) {
         return r.gpu.throttle_bits < 0 ? std::string() : nvml::reason_names(static_cast<uint64_t>(r.gpu.throttle_bits));
       }},
      {"gpu_bus_ids", T::kString, R::kId, "", true,
       "the PCI bus id of each GPU in `devices`, in the same order (`0000:3b:00.0,0000:5e:00.0`; `NODE/BUS` per "
       "rank when a cuda-ddp job spans nodes): which physical GPUs ran, whatever index each process saw them "
       "under (with one GPU per task every rank's is device 0); a repeated id is a shared GPU. Empty on the CPU "
       "and in rows that did not run",
       [](const ResultRow& r) { return r.gpu_bus_ids; }},
      {"status", T::kString, R::kStatus, "", false,
       "`ok`, `skipped: <reason>` or `failed: <reason>`; measurement cells are empty unless ok",
       [](const ResultRow& r) { return r.status; }},
  };
  return t;
}

// curves.csv's own columns, after the ones it shares with results.csv.
const std::vector<Column>& curve_own() {
  static const std::vector<Column> t = {
      {"repetition", T::kInt, R::kRepetition, "", false, "0..R-1", nullptr,
       [](const CurvePoint& p) { return std::to_string(p.repetition); }},
      {"epoch", T::kInt, R::kRepetition, "", false, "1-based timed epoch", nullptr,
       [](const CurvePoint& p) { return std::to_string(p.epoch); }},
      {"train_loss", T::kFloat, R::kMetric, "", false, "mean of the epoch's step losses", nullptr,
       [](const CurvePoint& p) { return num(p.train_loss); }},
  };
  return t;
}

bool shared_with_curves(const Column& c) {
  return is_configuration(c.role) || std::string(c.name) == "schema_version" ||
         std::string(c.name) == "run_id";
}

std::string md_escape(const char* s) {
  std::string o;
  for (const char* p = s; *p; ++p) {
    if (*p == '|') o += '\\';
    o += *p;
  }
  return o;
}

void md_table(std::string& out, const std::vector<Column>& cols) {
  out += "| column | type | unit | role | meaning |\n|---|---|---|---|---|\n";
  for (const Column& c : cols) {
    out += std::string("| ") + c.name + " | " + column_type_name(c.type) + " | " + md_escape(c.unit) + " | " +
           column_role_name(c.role) + " | " + md_escape(c.description) + (c.nullable ? " (may be empty)" : "") +
           " |\n";
  }
}

Json json_columns(const std::vector<Column>& cols) {
  Json a = Json::array();
  for (const Column& c : cols) {
    a.push_back({{"name", c.name},
                 {"type", column_type_name(c.type)},
                 {"role", column_role_name(c.role)},
                 {"unit", c.unit},
                 {"nullable", c.nullable},
                 {"description", c.description}});
  }
  return a;
}

}  // namespace

const char* column_type_name(ColumnType t) {
  switch (t) {
    case T::kInt: return "int";
    case T::kFloat: return "float";
    case T::kBool: return "bool";
    case T::kString: break;
  }
  return "string";
}

const char* column_role_name(ColumnRole r) {
  switch (r) {
    case R::kId: return "id";
    case R::kWorkload: return "workload";
    case R::kSetup: return "setup";
    case R::kKnob: return "knob";
    case R::kTrait: return "trait";
    case R::kRepetition: return "repetition";
    case R::kPhase: return "phase";
    case R::kMetric: return "metric";
    case R::kStatus: break;
  }
  return "status";
}

const std::vector<Column>& result_columns() { return table(); }

const std::vector<Column>& curve_columns() {
  static const std::vector<Column> t = [] {
    std::vector<Column> v;
    for (const Column& c : table()) {
      if (shared_with_curves(c)) v.push_back(c);
    }
    v.insert(v.end(), curve_own().begin(), curve_own().end());
    return v;
  }();
  return t;
}

bool is_configuration(ColumnRole r) { return r == R::kWorkload || r == R::kSetup || r == R::kKnob; }

std::vector<std::pair<std::string, std::string>> configuration_cells(const ResultRow& r,
                                                                     std::initializer_list<ColumnRole> roles) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const Column& c : table()) {
    if (std::find(roles.begin(), roles.end(), c.role) != roles.end()) v.emplace_back(c.name, result_cell(c, r));
  }
  return v;
}

std::string result_cell(const Column& c, const ResultRow& r) {
  if ((c.role == R::kMetric || c.role == R::kPhase) && !r.has_metrics) return "";
  if (c.role == R::kKnob) {
    BackendTraits t;
    const bool honoured = !traits_for(r, &t) || (t.knobs & c.knobs);
    bool asked = false;  // set away from its default: the row is skipped, the cell says what was asked
    for (const KnobDef& k : knob_defs()) asked |= (k.bit & c.knobs) && k.is_set(r.config);
    if (!honoured && !asked) return "";
  }
  const std::string v = c.get(r);
  return c.type == T::kString ? to_valid_utf8(v) : v;
}

std::string curve_cell(const Column& c, const ResultRow& r, const CurvePoint& p) {
  return c.get_point ? c.get_point(p) : result_cell(c, r);
}

std::string schema_markdown() {
  std::string out =
      "<!-- generated by `trainbench schema --markdown` from harness/result_schema.cpp: edit there, then run "
      "`make schema` -->\n\n`results.csv`: one row per repetition, or one row for a configuration that was "
      "skipped or failed.\n\n";
  md_table(out, table());
  out += "\n`curves.csv`: one row per timed epoch of every repetition; ";
  std::string shared;
  for (const Column& c : curve_columns()) {
    if (!c.get_point) shared += (shared.empty() ? "" : ", ") + std::string(c.name);
  }
  out += "the columns " + shared + " as in results.csv (a curve joins its configuration on them), then:\n\n";
  md_table(out, curve_own());
  out += "\nRoles: **id** which run wrote the row; **workload** what was trained and timed, the same for every "
         "backend of a comparable row (a backend's final loss is checked against the oracle's with the same "
         "workload cells); **setup** which backend, where and in what precision; **knob** a setting some "
         "backends honour, empty where the row's backend does not; workload, setup and knob cells together are a "
         "configuration's identity (reports group repetitions by them); **trait** facts about the backend; "
         "**phase** seconds of one phase of the repetition (summed over its steps, a part of train_time_s; "
         "empty where not measured: the PyTorch peers on GPUs); "
         "**metric** measured, empty unless the status is `ok`.\n";
  return out;
}

std::string schema_json() {
  Json j;
  j["schema_version"] = kSchemaVersion;
  j["generated_by"] = "trainbench schema --json (harness/result_schema.cpp; `make schema` rewrites this file)";
  j["results"] = json_columns(table());
  j["curves"] = json_columns(curve_columns());
  return json_text(j);
}

int cmd_schema(const std::vector<std::string>& args) {
  const char* usage =
      "usage: trainbench schema --markdown|--json\n\n"
      "Prints the CSV schema (results.csv and curves.csv columns: type, unit, role, meaning) as the README's\n"
      "Markdown table or as reports/schema.json; `make schema` rewrites both from this output.\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("%s", usage);
    return 0;
  }
  if (args.size() != 1 || (args[0] != "--markdown" && args[0] != "--json")) {
    // Name what was given: nothing, too many arguments, or the one that is not allowed.
    const std::string got = args.empty() ? "nothing" : args.size() > 1 ? std::to_string(args.size()) + " arguments"
                                                                       : "'" + args[0] + "'";
    throw UsageError("schema: expected one of --markdown, --json (got " + got + ")");
  }
  std::fputs((args[0] == "--json" ? schema_json() : schema_markdown()).c_str(), stdout);
  return 0;
}

}  // namespace tb
