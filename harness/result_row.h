// harness/result_row.h — what one repetition produced, and its CSV fields.
// results.csv: one row per repetition (or one row for a skipped/failed
// configuration); curves.csv: the mean training loss of every epoch. The columns,
// their units and meanings are one table, harness/result_schema.h (schema 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/run_config.h"

namespace tb {

// Bumped when a column is removed or renamed or changes meaning; a column may be
// added within a version (nullable, README "CSV schema").
inline constexpr int kSchemaVersion = 2;

// NVML telemetry of a GPU run's timed repetition (harness/gpu_telemetry.h): every figure
// < 0 where it was not measured (no NVML, not a GPU backend, no sample).
struct GpuTelemetrySummary {
  int64_t samples = -1;                // samples per GPU (the fewest of the run's GPUs)
  double sm_clock_min_mhz = -1;        // lowest SM clock sample of any GPU
  double sm_clock_median_mhz = -1;     // the lowest of the GPUs' median SM clocks
  double power_mean_w = -1;            // sum over the GPUs of each one's mean board power
  double power_max_w = -1;             // highest power sample of any one GPU
  double temp_max_c = -1;              // highest temperature sample of any GPU
  int64_t throttle_bits = -1;          // union of the clocks event reason bits seen; < 0: not read
  double energy_j = -1;                // total-energy counter delta over the repetition, summed over GPUs
};

struct ResultRow {
  std::string run_id, timestamp, host;
  RunConfig config;             // workload, backend, model, data, hyper-parameters
  std::string dataset_desc;     // Dataset::description
  std::string precision;        // what the backend actually used (reference: fp64)
  int world_size = 1;
  std::string devices = "cpu";
  std::string gpu_bus_ids;      // Trainer::gpu_bus_ids(): PCI bus id per entry of devices, "" on the CPU
  int64_t repetition = 0;
  bool has_metrics = false;     // false for skipped/failed rows: metric cells stay empty
  double train_time_s = 0, samples_per_s = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0, transfer_s = 0, comm_s = 0;
  int64_t allreduce_bytes_per_step = 0;  // gradient bytes all-reduced per step (multi-process)
  double comm_busbw_gbps = -1;           // in-training all-reduce bus bandwidth; < 0: cell empty
  // The dataset's upload before the timed epochs (Trainer::prepare_repetition); < 0: none, cells empty.
  double upload_s = -1, upload_gbps = -1;
  double final_loss = 0, final_accuracy = -1;  // accuracy < 0: regression, cell empty
  // Time to target (--target-loss): seconds from the first timed epoch's start to the end
  // of the first evaluation at or below the target, and that epoch (1-based); -1: not reached.
  double time_to_target_s = -1;
  int64_t target_epoch = -1;
  double param_checksum = 0;
  int64_t peak_host_mem_bytes = 0, peak_device_mem_bytes = 0;
  // Disturbance during the timed epochs (disturbance.h): other processes' and the
  // hypervisor's share of the host's CPU time; < 0: unknown (cell empty).
  double others_cpu_share = -1, steal_share = -1;
  bool disturbed() const;       // either share above kDisturbedShare
  GpuTelemetrySummary gpu;      // NVML figures of GPU backends' repetitions
  std::string status = "ok";    // ok | skipped: why | failed: why
};

struct CurvePoint {
  int64_t repetition = 0, epoch = 0;  // epoch is 1-based
  double train_loss = 0;
};

std::vector<std::string> results_header();
std::vector<std::string> result_fields(const ResultRow& r);
std::vector<std::string> curves_header();
std::vector<std::string> curve_fields(const ResultRow& r, const CurvePoint& p);

}  // namespace tb
