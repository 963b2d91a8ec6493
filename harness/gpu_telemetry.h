// harness/gpu_telemetry.h — what the GPUs did during a timed repetition, through NVML
// (harness/nvml.h): a thread samples SM clock, board power, temperature and the clocks
// event (throttle) reasons of every GPU the run uses every ~50 ms, and the total-energy
// counter is read at the start and the end. The runner makes one GpuTelemetry per GPU
// configuration and brackets each repetition with begin()/end(); the figures go to the
// row's gpu_* columns (harness/result_schema.cpp). Without NVML every figure is empty.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/host_info.h"
#include "harness/job.h"
#include "harness/nvml.h"
#include "harness/result_row.h"

namespace tb {

// One sample of one GPU; a field < 0 (reasons_ok false) was not readable.
struct TelemetrySample {
  double sm_mhz = -1, power_w = -1, temp_c = -1;
  uint64_t reasons = 0;
  bool reasons_ok = false;
};

// The figures of one repetition from each GPU's samples (per_gpu[g][k]: GPU g's k-th
// sample) and energy deltas in joules (energy_j[g] < 0: GPU g has no energy counter,
// then the sum is empty too). Pure, so tests check it against a naive computation.
GpuTelemetrySummary summarize_telemetry(const std::vector<std::vector<TelemetrySample>>& per_gpu,
                                        const std::vector<double>& energy_j);

// The job's figures from every rank's (a collective: every rank of a multi-process job
// calls it at the same point): minima of the clocks and sample counts, maxima of power
// and temperature samples, union of the reasons, sums of mean power and energy (empty
// when any rank's GPU lacked the counter).
GpuTelemetrySummary combine_over_job(const GpuTelemetrySummary& mine, Job& job);

// The NVML handle of CUDA device `cuda_index` of inventory `cuda` (matched by PCI bus
// id), or null with *why set. CUDA's numbering follows CUDA_VISIBLE_DEVICES, NVML's not.
nvml::Device nvml_device_of_cuda(int cuda_index, const GpuInventory& cuda, std::string* why);

// TB_NVML_SAMPLE_MS: a whole number of milliseconds, 1 to 1000; unset or empty: 50.
// Any other value throws std::invalid_argument naming the variable and its range
// (trainbench checks it as `run` and `suite` start, GPU or not: bad input, exit 2).
int sample_interval_ms();

class GpuTelemetry {
 public:
  // The CUDA devices this process's run computes on (Trainer::gpus()); samples every
  // interval_ms, or when 0 every sample_interval_ms() (TB_NVML_SAMPLE_MS; the tests' knob).
  explicit GpuTelemetry(const std::vector<int>& cuda_devices, int interval_ms = 0);
  ~GpuTelemetry();
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;

  bool active() const { return !devices_.empty(); }
  const std::string& why_not() const { return why_not_; }  // why inactive
  // Start of a timed repetition: energy counters read, the sampler started (first sample now).
  void begin();
  // End of it: the sampler stopped, energy read again; the figures of this repetition.
  GpuTelemetrySummary end();

 private:
  void sample_all();
  void stop();

  std::vector<nvml::Device> devices_;
  std::string why_not_;
  int interval_ms_;
  std::vector<std::vector<TelemetrySample>> samples_;
  std::vector<unsigned long long> energy0_;
  std::vector<bool> energy_ok_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace tb
