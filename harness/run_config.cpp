// harness/run_config.cpp — RunConfig's derived sizes, its default name, and the
// table of knobs a backend may or may not honour (run_config.h).
#include "harness/run_config.h"

#include <sstream>

namespace tb {

int64_t RunConfig::rows_per_epoch() const {
  return drop_last ? (data.n / batch) * batch : data.n;
}

int64_t RunConfig::batches_per_epoch() const {
  return drop_last ? data.n / batch : (data.n + batch - 1) / batch;
}

std::string default_workload_name(const RunConfig& c) {
  // Built with << (GCC 12 warns falsely on `"x" + std::string` temporaries).
  std::ostringstream os;
  os << model_name(c.model.kind) << '-';
  for (size_t i = 0; i < c.model.layers.size(); ++i) os << (i ? "x" : "") << c.model.layers[i];
  os << '-';
  if (c.data.kind == "csv" || c.data.kind == "idx") {
    os << c.data.path.substr(c.data.path.find_last_of('/') + 1);  // file datasets: named by their file
  } else if (c.data.n % 1000000 == 0) {
    os << c.data.n / 1000000 << 'M';
  } else if (c.data.n % 1000 == 0) {
    os << c.data.n / 1000 << 'k';
  } else {
    os << c.data.n;
  }
  os << "-b" << c.batch;
  return os.str();
}

const std::vector<KnobDef>& knob_defs() {
  static const RunConfig d;  // the defaults
  static const std::vector<KnobDef> table = {
      {kKnobTf32, "--precision tf32", [](const RunConfig& c) { return c.precision == "tf32"; }},
      {kKnobCudaGraph, "--cuda-graph", [](const RunConfig& c) { return c.cuda_graph; }},
      {kKnobHostPlacement, "--data-placement host", [](const RunConfig& c) { return c.data_placement == "host"; }},
      {kKnobDevice, "--device", [](const RunConfig& c) { return c.device != d.device; }},
      {kKnobDpDevices, "--devices", [](const RunConfig& c) { return !c.dp_devices.empty(); }},
      {kKnobDpMode, "--dp-mode persistent", [](const RunConfig& c) { return c.dp_mode != d.dp_mode; }},
      {kKnobBucket, "--bucket-mb", [](const RunConfig& c) { return c.bucket_mb != d.bucket_mb; }},
      {kKnobNoOverlap, "--no-overlap", [](const RunConfig& c) { return c.overlap != d.overlap; }},
      {kKnobDeterministic, "--deterministic", [](const RunConfig& c) { return c.deterministic; }},
      {kKnobWorkers, "--workers", [](const RunConfig& c) { return c.workers != d.workers; }},
      {kKnobNoPhaseTiming, "--phase-timing off", [](const RunConfig& c) { return !c.phase_timing; }},
  };
  return table;
}

}  // namespace tb
