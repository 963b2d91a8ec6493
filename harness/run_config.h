// harness/run_config.h — one benchmark configuration: what to train and how to time it.
// Built from command-line flags (harness/cli.cpp) for `run`, or from one line of a
// suite file expanded over its backend and thread lists (harness/suite.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "harness/model.h"

namespace tb {

struct RunConfig {
  std::string workload;  // short name shared by every backend of the same workload
  std::string backend = "cpu-omp";
  ModelSpec model;
  DatasetSpec data;
  int64_t batch = 256;
  int64_t epochs = 3;
  double lr = 0.01;
  double momentum = 0;
  double weight_decay = 0;
  uint64_t seed = 1;
  int threads = 1;       // resolved: >= 1
  int64_t warmup = 1;    // untimed warm-up epochs
  int64_t reps = 3;      // timed repetitions, one CSV row each
  bool shuffle = false;
  bool drop_last = false;
  // Time to target (--target-loss X): after every timed epoch, until it is first
  // reached, the runner evaluates the loss over the whole training set; < 0: not set.
  double target_loss = -1;
  std::string precision = "fp32";
  // Multi-process (cpu-ddp, cuda-ddp): ranks, gradient buckets, overlap, watchdog.
  int world_size = 1;         // ranks the suite launches (run: taken from mpirun)
  double bucket_mb = 25;      // gradient bucket size, MiB (PyTorch DDP's default)
  bool overlap = true;        // all-reduce buckets during backward (--no-overlap: after)
  double comm_timeout_s = 60; // a collective slower than this aborts the whole job
  bool deterministic = false; // fixed reduction order: bitwise equal across runs and world sizes
  std::string save_params;    // run: write the final parameters here (harness/params_file.h)
  // cpu-hogwild: worker processes updating one shared replica (its world_size).
  int workers = 1;
  // GPU backends.
  int device = 0;                          // CUDA device index (after CUDA_VISIBLE_DEVICES)
  std::string data_placement = "device";   // device: uploaded once; host: streamed from pinned memory
  bool cuda_graph = false;                 // capture the training step once and replay it
  std::vector<int> dp_devices;             // cuda-dp: logical replica slots (GPU ids; repeats allowed); empty = all
  std::string dp_mode = "faithful";        // cuda-dp: faithful (replicate every step) | persistent
  bool phase_timing = true;                // GPU backends: per-phase CUDA events (--phase-timing off: none)

  // Rows visited per epoch and batches per epoch (after --drop-last).
  int64_t rows_per_epoch() const;
  int64_t batches_per_epoch() const;
  // The knobs as the trainers use them.
  int64_t bucket_bytes() const { return static_cast<int64_t>(bucket_mb * (1 << 20)); }
  bool data_on_device() const { return data_placement == "device"; }
  bool dp_persistent() const { return dp_mode == "persistent"; }
  bool has_target() const { return target_loss >= 0; }
};

// Default workload name, e.g. "mlp-784x256x256x10-60k-b256".
std::string default_workload_name(const RunConfig& c);

// Knobs that change what a backend runs, beyond the workload. A backend declares
// the ones it honours (BackendTraits::knobs); a knob set away from its default for a
// backend that does not honour it makes the configuration a `skipped:` row, the same
// in `run` and in suites (README "Flags a backend does not honour"). Settings that
// change no result (--comm-timeout, a watchdog deadline) and grid axes (--threads,
// --world-sizes: backends they do not apply to run once at 1) are not knobs.
enum Knob : uint32_t {
  kKnobTf32 = 1u << 0,           // --precision tf32
  kKnobCudaGraph = 1u << 1,      // --cuda-graph
  kKnobHostPlacement = 1u << 2,  // --data-placement host
  kKnobDevice = 1u << 3,         // --device N (N != 0)
  kKnobDpDevices = 1u << 4,      // --devices I,J,...
  kKnobDpMode = 1u << 5,         // --dp-mode persistent
  kKnobBucket = 1u << 6,         // --bucket-mb X (X != 25)
  kKnobNoOverlap = 1u << 7,      // --no-overlap
  kKnobDeterministic = 1u << 8,  // --deterministic
  kKnobWorkers = 1u << 9,        // --workers N (N != 1)
  kKnobNoPhaseTiming = 1u << 10, // --phase-timing off
};

struct KnobDef {
  uint32_t bit;
  const char* flag;                  // as the user types it, e.g. "--cuda-graph"
  bool (*is_set)(const RunConfig&);  // set away from its default
};
const std::vector<KnobDef>& knob_defs();

}  // namespace tb
