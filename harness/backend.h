// harness/backend.h — the small interface every backend implements.
// The harness (harness/runner.cpp) owns warm-up, repetitions, timing totals,
// progress, evaluation bookkeeping and CSV; a backend only knows how to hold a
// model, take SGD steps on batches, evaluate and hand its parameters back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "harness/job.h"
#include "harness/model.h"
#include "harness/run_config.h"
#include "harness/timing.h"

namespace tb {

// One epoch's schedule: visit order[begin .. end) for each batch in turn. Batches
// are contiguous ranges of `order`; the last may be short (mean over its true size).
struct EpochPlan {
  const std::vector<int64_t>* order = nullptr;
  int64_t batch = 0;
  int64_t num_batches = 0;
  int64_t rows = 0;  // rows visited (n, or less with --drop-last)
};

struct EpochResult {
  double mean_loss = 0;        // mean of the per-step losses
  int64_t steps = 0;           // steps completed
  int64_t nonfinite_step = -1; // first step whose loss was NaN/Inf (training stopped there), or -1
};

// What a repetition's preparation moved before its timed epochs (prepare_repetition):
// the dataset's upload to the device, this process's part of it.
struct UploadFigures {
  double seconds = 0;  // time the copies took (GPU: CUDA events around them)
  int64_t bytes = 0;   // bytes copied; 0: nothing uploaded (CPU backends, --data-placement host)
};

struct EvalResult {
  double loss = 0;       // mean loss over the whole set (as the training loss defines it)
  double accuracy = -1;  // fraction correct for classification; -1 for regression
};

// Called by trainers every step; cheap. step is 0-based within the epoch.
using StepCallback = std::function<void(int64_t step, double loss)>;

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Replace the parameters (start of every warm-up / repetition) and zero optimizer state.
  virtual void set_params(const std::vector<float>& params) = 0;
  virtual std::vector<float> params() const = 0;
  // Called by the runner after set_params() and before the stopwatch starts: whatever
  // a repetition needs in place before its first timed step (cuda, cuda-dp: the upload
  // of the dataset to the device). Untimed by the stopwatch; its own figures.
  virtual UploadFigures prepare_repetition() { return {}; }
  virtual EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) = 0;
  virtual EvalResult evaluate() = 0;
  // Per-phase seconds since the last call; resets the accumulator. The runner calls it
  // after every epoch, once the stopwatch has stopped: GPU trainers read their timing
  // events here, outside the timed region.
  virtual PhaseTimes take_phase_times() = 0;
  virtual int64_t peak_device_mem_bytes() const { return 0; }
  // What the "devices" CSV column shows, e.g. "cpu" or "0,1".
  virtual std::string devices() const { return "cpu"; }
  // The CUDA devices this process computes on, each once (the runner samples their NVML
  // telemetry, harness/gpu_telemetry.h); empty for CPU trainers.
  virtual std::vector<int> gpus() const { return {}; }
  // What the "gpu_bus_ids" column shows: the PCI bus id of each GPU of devices(), in the
  // same order ("0000:3b:00.0,0000:3b:00.0": two replicas on one GPU); "" on the CPU.
  virtual std::string gpu_bus_ids() const { return ""; }
  // Model replicas this process trains (cuda-dp: one per slot; cpu-hogwild: its worker
  // processes, which share one replica); the row's world_size is replicas x the job's ranks.
  virtual int replicas() const { return 1; }
  virtual std::string precision() const = 0;

  // Multi-process trainers: the communication figures of the last repetition, this
  // rank's own (the runner takes the maximum over ranks through the Job).
  virtual int64_t allreduce_bytes_per_step() const { return 0; }
  // The bytes per step that bus bandwidth divides by the time inside the collectives at n
  // ranks (nccl-tests' busbw): an all-reduce of S bytes moves 2(n-1)/n x S per rank (the
  // default, S = allreduce_bytes_per_step()); an all-gather whose result is S bytes moves
  // (n-1)/n x S (cpu-ddp --deterministic).
  virtual double bus_bytes_per_step(int n) const {
    return n > 1 ? 2.0 * (n - 1) / n * static_cast<double>(allreduce_bytes_per_step()) : 0;
  }
  // Seconds spent inside all-reduces and the steps they cover, for the interval that the
  // last take_phase_times() closed (the runner sums them over a repetition's epochs).
  virtual double allreduce_busy_s() const { return 0; }
  virtual int64_t allreduce_steps() const { return 0; }
  // CPU seconds used so far by processes this trainer runs beside this one (cpu-hogwild's
  // workers), through their last finished epoch: the job's own CPU time, not a neighbour's,
  // when the runner judges a repetition's disturbance (harness/disturbance.h).
  virtual double helper_cpu_s() const { return 0; }
};

struct Availability {
  bool ok = false;
  std::string reason;  // why not, when !ok
};

// Where a backend computes and how it spreads work. Every fact the harness, the CSV
// and the reports need about a backend comes from its traits, never from its name.
enum class DeviceKind { kCpu, kGpu };
enum class Parallelism {
  kNone,          // one model replica (reference, cpu-omp, cuda)
  kDataParallel,  // one process, replicas on several devices (cuda-dp)
  kDistributed,   // one process per rank, launched by MPI (cpu-ddp, cuda-ddp)
  kSharedMemory,  // worker processes the backend forks, one replica in shared memory (cpu-hogwild)
};
const char* device_kind_name(DeviceKind d);    // "cpu" | "gpu"
const char* parallelism_name(Parallelism p);   // "none" | "dp" | "ddp" | "shm"

// An asynchronous backend's final loss is checked against the oracle's within this
// relative bound instead of float rounding (suite summary; reports/derive.py
// ASYNC_LOSS_RTOL is the same): README "Hogwild!" says why 5%.
inline constexpr double kAsyncLossRelTol = 0.05;

// What the oracle computes in whatever --precision says: its rows' precision cell.
inline constexpr const char* kOraclePrecision = "fp64";

struct BackendTraits {
  DeviceKind device = DeviceKind::kCpu;
  Parallelism parallelism = Parallelism::kNone;
  bool cpu_threads = false;       // honours --threads (OpenMP threads per process)
  bool one_gpu_per_rank = false;  // every rank needs a GPU of its own on its node
  bool oracle = false;            // the float64 reference every other backend is checked against
  // Updates are applied without synchronisation (Hogwild!): results are not reproducible
  // bit for bit nor equal to the oracle's; reports check the loss within a wider bound.
  bool asynchronous = false;
  uint32_t knobs = 0;             // the Knob bits (run_config.h) it honours
  // The one-replica backend its scaling is measured against ("" = none: it is one).
  std::string scaling_base;
  bool multi_process() const { return parallelism == Parallelism::kDistributed; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual BackendTraits traits() const = 0;
  // Whether this build on this machine can run the backend at all (`trainbench backends`).
  virtual Availability availability() const = 0;
  // Availability for configuration c (e.g. cuda-dp with --devices 0,0 runs on one
  // GPU); by default availability().
  virtual Availability availability_for(const RunConfig& c) const {
    (void)c;
    return availability();
  }
  // Why this backend cannot run configuration c ("" when it can), decided before
  // anything is allocated: a knob it does not honour ("--cuda-graph does not apply to
  // cpu-omp (it applies to: cuda)"), then availability_for(c). The runner and the
  // suite record a non-empty answer as a `skipped: <why>` row.
  std::string unsupported(const RunConfig& c) const;
  // The trainer keeps a reference to data; data outlives it. A multi-process backend
  // trains as this process's rank of `job` (its world); the others ignore it.
  virtual std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& opt, Job& job) const = 0;
  // The same as rank 0 of a one-process job (tests, single-process tools).
  std::unique_ptr<Trainer> make_trainer(const Dataset& data, const RunConfig& opt) const {
    Job single;
    return make_trainer(data, opt, single);
  }
};

// Every backend the suite knows, available or not, in display order.
const std::vector<std::unique_ptr<Backend>>& all_backends();
const Backend* find_backend(const std::string& name);  // nullptr if unknown
std::string backend_names();                           // "reference, cpu-omp, ..."
std::string default_backend();                         // what `run` trains without --backend
// The traits of a known backend (throws std::invalid_argument for an unknown name).
BackendTraits traits_of(const std::string& backend);

}  // namespace tb
