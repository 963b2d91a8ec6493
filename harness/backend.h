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
#include "harness/model.h"
#include "harness/timing.h"

namespace tb {

struct TrainOptions {
  ModelSpec model;
  int64_t batch = 0;        // global batch size B
  double lr = 0.01;
  double momentum = 0;
  double weight_decay = 0;
  int threads = 1;          // CPU threads (cpu-omp, cpu-ddp)
  std::string precision = "fp32";
  // Multi-process backends.
  int64_t bucket_bytes = 25 << 20;  // gradient bucket size
  bool overlap = true;              // all-reduce buckets during backward
  double comm_timeout_s = 60;       // watchdog deadline for one collective
  bool deterministic = false;       // fixed leaves and reduction tree (ddp_plan.h)
  // GPU backends.
  int device = 0;
  bool data_on_device = true;       // --data-placement device|host
  bool cuda_graph = false;
  std::vector<int> dp_devices;      // cuda-dp replica slots; empty = every visible GPU
  bool dp_persistent = false;       // cuda-dp: keep replicas, broadcast only updated parameters
};

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
  virtual EpochResult train_epoch(const EpochPlan& plan, const StepCallback& on_step) = 0;
  virtual EvalResult evaluate() = 0;
  // Per-phase seconds since the last call; resets the accumulator.
  virtual PhaseTimes take_phase_times() = 0;
  virtual int64_t peak_device_mem_bytes() const { return 0; }
  // What the "devices" CSV column shows, e.g. "cpu" or "0,1".
  virtual std::string devices() const { return "cpu"; }
  virtual int world_size() const { return 1; }
  virtual std::string precision() const = 0;

  // Multi-process trainers: the job's value of a per-rank duration (max over ranks),
  // whether this rank writes results, and the communication figures of the last
  // repetition. Single-process trainers keep the defaults.
  virtual double max_over_ranks(double seconds) { return seconds; }
  virtual bool is_root() const { return true; }
  virtual int rank() const { return 0; }
  // Multi-process trainers: true when `ok` holds on every rank (a collective: every
  // rank must call it), so all ranks take the same branch.
  virtual bool all_ranks_ok(bool ok) { return ok; }
  virtual int64_t allreduce_bytes_per_step() const { return 0; }
  // Seconds spent inside all-reduces and their count since the last take_phase_times().
  virtual double allreduce_busy_s() const { return 0; }
  virtual int64_t allreduce_steps() const { return 0; }
};

struct Availability {
  bool ok = false;
  std::string reason;  // why not, when !ok
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual Availability availability() const = 0;
  // Availability for a given configuration (e.g. cuda-dp with --devices 0,0 runs on
  // one GPU); by default the same as availability().
  virtual Availability availability_for(const TrainOptions& opt) const {
    (void)opt;
    return availability();
  }
  // The trainer keeps a reference to data; data outlives it.
  virtual std::unique_ptr<Trainer> make_trainer(const Dataset& data, const TrainOptions& opt) const = 0;
};

// Every backend the suite knows, available or not, in display order.
const std::vector<std::unique_ptr<Backend>>& all_backends();
const Backend* find_backend(const std::string& name);  // nullptr if unknown
std::string backend_names();                           // "reference, cpu-omp, ..."
// One process per rank, launched by MPI (cpu-ddp, cuda-ddp).
bool multi_process(const std::string& backend);

}  // namespace tb
