// harness/gpu_telemetry.cpp — see gpu_telemetry.h.
#include "harness/gpu_telemetry.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "harness/host_info.h"

namespace tb {
namespace {

double median_of(std::vector<double> v) {  // v non-empty; the mean of the middle two when even
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return (lo + hi) / 2;
}

constexpr double kNone = -std::numeric_limits<double>::infinity();
constexpr int kReasonBits = 16;  // the reason bits carried across ranks (NVML defines 9)

}  // namespace

GpuTelemetrySummary summarize_telemetry(const std::vector<std::vector<TelemetrySample>>& per_gpu,
                                        const std::vector<double>& energy_j) {
  GpuTelemetrySummary s;
  if (per_gpu.empty()) return s;
  bool any_reasons = false;
  uint64_t reasons = 0;
  for (const std::vector<TelemetrySample>& gpu : per_gpu) {
    const int64_t n = static_cast<int64_t>(gpu.size());
    s.samples = s.samples < 0 ? n : std::min(s.samples, n);
    std::vector<double> clocks;
    double power_sum = 0;
    int64_t power_n = 0;
    for (const TelemetrySample& x : gpu) {
      if (x.sm_mhz >= 0) {
        clocks.push_back(x.sm_mhz);
        s.sm_clock_min_mhz = s.sm_clock_min_mhz < 0 ? x.sm_mhz : std::min(s.sm_clock_min_mhz, x.sm_mhz);
      }
      if (x.power_w >= 0) {
        power_sum += x.power_w;
        ++power_n;
        s.power_max_w = std::max(s.power_max_w, x.power_w);
      }
      if (x.temp_c >= 0) s.temp_max_c = std::max(s.temp_max_c, x.temp_c);
      if (x.reasons_ok) {
        any_reasons = true;
        reasons |= x.reasons;
      }
    }
    if (!clocks.empty()) {
      const double med = median_of(clocks);
      s.sm_clock_median_mhz = s.sm_clock_median_mhz < 0 ? med : std::min(s.sm_clock_median_mhz, med);
    }
    // Mean board power of this GPU, added to the others' (the run's draw).
    if (power_n > 0) s.power_mean_w = std::max(s.power_mean_w, 0.0) + power_sum / static_cast<double>(power_n);
  }
  if (any_reasons) s.throttle_bits = static_cast<int64_t>(reasons & 0x7fffffffffffffffULL);
  if (!energy_j.empty()) {
    double total = 0;
    for (double e : energy_j) {
      if (e < 0) {
        total = -1;
        break;
      }
      total += e;
    }
    s.energy_j = total;
  }
  return s;
}

GpuTelemetrySummary combine_over_job(const GpuTelemetrySummary& mine, Job& job) {
  if (!job.multi_rank()) return mine;
  // Maxima: minima enter negated; "not measured" is -inf so any rank's value wins.
  const auto neg = [](double v) { return v < 0 ? kNone : -v; };
  const auto pos = [](double v) { return v < 0 ? kNone : v; };
  std::vector<double> mx = {neg(mine.sm_clock_min_mhz), neg(mine.sm_clock_median_mhz),
                            neg(static_cast<double>(mine.samples)), pos(mine.power_max_w), pos(mine.temp_max_c),
                            mine.throttle_bits < 0 ? 0.0 : 1.0,
                            mine.energy_j < 0 ? 1.0 : 0.0};  // energy: any rank without it empties the sum
  for (int b = 0; b < kReasonBits; ++b) mx.push_back(mine.throttle_bits > 0 && ((mine.throttle_bits >> b) & 1) ? 1.0 : 0.0);
  job.max(mx.data(), static_cast<int>(mx.size()));
  const double power_sum = job.sum(mine.power_mean_w < 0 ? 0.0 : mine.power_mean_w);
  const double power_n = job.sum(mine.power_mean_w < 0 ? 0.0 : 1.0);
  const double energy = job.sum(mine.energy_j < 0 ? 0.0 : mine.energy_j);
  GpuTelemetrySummary s;
  const auto unneg = [](double v) { return v == kNone ? -1.0 : -v; };
  const auto unpos = [](double v) { return v == kNone ? -1.0 : v; };
  s.sm_clock_min_mhz = unneg(mx[0]);
  s.sm_clock_median_mhz = unneg(mx[1]);
  s.samples = static_cast<int64_t>(unneg(mx[2]));
  s.power_max_w = unpos(mx[3]);
  s.temp_max_c = unpos(mx[4]);
  if (mx[5] > 0) {
    s.throttle_bits = 0;
    for (int b = 0; b < kReasonBits; ++b) s.throttle_bits |= mx[7 + static_cast<size_t>(b)] > 0 ? int64_t{1} << b : 0;
  }
  s.power_mean_w = power_n > 0 ? power_sum : -1;
  s.energy_j = mx[6] > 0 ? -1 : energy;
  return s;
}

nvml::Device nvml_device_of_cuda(int cuda_index, const GpuInventory& cuda, std::string* why) {
  const nvml::Api* a = nvml::api();
  if (!a) {
    *why = nvml::unavailable_reason();
    return nullptr;
  }
  for (const GpuInfo& g : cuda.gpus) {
    if (g.index != cuda_index) continue;
    nvml::Device d = nullptr;
    const nvml::Return r = a->handle_by_pci_bus_id(g.pci_bus_id.c_str(), &d);
    if (r == nvml::kSuccess) return d;
    *why = "NVML knows no GPU at PCI " + g.pci_bus_id + " (CUDA device " + std::to_string(cuda_index) +
           "): " + nvml::error(r);
    return nullptr;
  }
  *why = "CUDA device " + std::to_string(cuda_index) + " not found";
  return nullptr;
}

int sample_interval_ms() {
  const char* v = std::getenv("TB_NVML_SAMPLE_MS");
  if (!v || !*v) return 50;
  // The whole text, in range: "10ms" or "5000" read as 50 ms in silence, a run sampled
  // at another rate than the one asked for.
  const char* end = v + std::strlen(v);
  int ms = 0;
  const std::from_chars_result r = std::from_chars(v, end, ms);
  if (r.ec != std::errc() || r.ptr != end || ms < 1 || ms > 1000) {
    throw std::invalid_argument(std::string("TB_NVML_SAMPLE_MS: '") + v +
                                "' is not allowed (allowed: a whole number of milliseconds, 1 to 1000; unset or "
                                "empty: 50)");
  }
  return ms;
}

GpuTelemetry::GpuTelemetry(const std::vector<int>& cuda_devices, int interval_ms)
    : interval_ms_(interval_ms > 0 ? interval_ms : sample_interval_ms()) {
  if (cuda_devices.empty()) {
    why_not_ = "no GPU";
    return;
  }
  if (!nvml::api()) {  // before any CUDA query: without NVML the run's CUDA calls are unchanged
    why_not_ = nvml::unavailable_reason();
    return;
  }
  const GpuInventory cuda = gpu_inventory(FreeMemory::kNotRead);  // context-free queries only
  for (int c : cuda_devices) {
    nvml::Device d = nvml_device_of_cuda(c, cuda, &why_not_);
    if (!d) {  // all or nothing: figures over some of the run's GPUs would mislead
      devices_.clear();
      return;
    }
    devices_.push_back(d);
  }
}

GpuTelemetry::~GpuTelemetry() { stop(); }

void GpuTelemetry::sample_all() {
  const nvml::Api* a = nvml::api();
  for (size_t g = 0; g < devices_.size(); ++g) {
    TelemetrySample x;
    unsigned v = 0;
    if (a->clock && a->clock(devices_[g], nvml::kClockSm, &v) == nvml::kSuccess) x.sm_mhz = v;
    if (a->power_usage && a->power_usage(devices_[g], &v) == nvml::kSuccess) x.power_w = v / 1000.0;  // mW
    if (a->temperature && a->temperature(devices_[g], nvml::kTemperatureGpu, &v) == nvml::kSuccess) x.temp_c = v;
    unsigned long long bits = 0;
    if (a->clocks_event_reasons && a->clocks_event_reasons(devices_[g], &bits) == nvml::kSuccess) {
      x.reasons = bits;
      x.reasons_ok = true;
    }
    samples_[g].push_back(x);
  }
}

void GpuTelemetry::begin() {
  if (!active()) return;
  stop();
  const nvml::Api* a = nvml::api();
  samples_.assign(devices_.size(), {});
  energy0_.assign(devices_.size(), 0);
  energy_ok_.assign(devices_.size(), false);
  for (size_t g = 0; g < devices_.size(); ++g) {
    energy_ok_[g] = a->total_energy && a->total_energy(devices_[g], &energy0_[g]) == nvml::kSuccess;
  }
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      sample_all();  // under mu_: end() reads samples_ only after the join
      cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; });
    }
  });
}

void GpuTelemetry::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

GpuTelemetrySummary GpuTelemetry::end() {
  if (!active()) return {};
  stop();
  const nvml::Api* a = nvml::api();
  std::vector<double> energy(devices_.size(), -1);
  for (size_t g = 0; g < devices_.size(); ++g) {
    unsigned long long e1 = 0;
    if (energy_ok_[g] && a->total_energy(devices_[g], &e1) == nvml::kSuccess && e1 >= energy0_[g]) {
      energy[g] = static_cast<double>(e1 - energy0_[g]) / 1000.0;  // mJ -> J
    }
  }
  return summarize_telemetry(samples_, energy);
}

}  // namespace tb
