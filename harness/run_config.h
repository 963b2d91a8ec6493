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
  std::string precision = "fp32";
  // Multi-process (cpu-ddp, cuda-ddp): ranks, gradient buckets, overlap, watchdog.
  int world_size = 1;         // ranks the suite launches (run: taken from mpirun)
  double bucket_mb = 25;      // gradient bucket size, MiB (PyTorch DDP's default)
  bool overlap = true;        // all-reduce buckets during backward (--no-overlap: after)
  double comm_timeout_s = 60; // a collective slower than this aborts the whole job
  bool deterministic = false; // fixed reduction order: bitwise equal across runs and world sizes
  std::string save_params;    // run: write the final parameters here (harness/params_file.h)
  // GPU backends.
  int device = 0;                          // CUDA device index (after CUDA_VISIBLE_DEVICES)
  std::string data_placement = "device";   // device: uploaded once; host: streamed from pinned memory
  bool cuda_graph = false;                 // capture the training step once and replay it
  std::vector<int> dp_devices;             // cuda-dp: logical replica slots (GPU ids; repeats allowed); empty = all
  std::string dp_mode = "faithful";        // cuda-dp: faithful (replicate every step) | persistent

  // Rows visited per epoch and batches per epoch (after --drop-last).
  int64_t rows_per_epoch() const;
  int64_t batches_per_epoch() const;
};

// Default workload name, e.g. "mlp-784x256x256x10-60k-b256".
std::string default_workload_name(const RunConfig& c);

}  // namespace tb
