// harness/backend_registry.cpp — the list of backends, in the order reports show them
// (a new backend adds one declaration and one line here: README "Adding a backend"),
// and what is derived from their traits.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backend.h"

namespace tb {

// Each backend file ends with its make_* function; a backend this build or machine
// cannot run is still listed, and its availability() says why.
std::unique_ptr<Backend> make_reference_backend();
std::unique_ptr<Backend> make_cpu_omp_backend();
std::unique_ptr<Backend> make_cuda_backend();
std::unique_ptr<Backend> make_cuda_dp_backend();
std::unique_ptr<Backend> make_cuda_ddp_backend();
std::unique_ptr<Backend> make_cpu_ddp_backend();
std::unique_ptr<Backend> make_cpu_hogwild_backend();

const std::vector<std::unique_ptr<Backend>>& all_backends() {
  static const std::vector<std::unique_ptr<Backend>> list = [] {
    std::vector<std::unique_ptr<Backend>> v;
    v.push_back(make_reference_backend());
    v.push_back(make_cpu_omp_backend());
    v.push_back(make_cuda_backend());
    v.push_back(make_cuda_dp_backend());
    v.push_back(make_cuda_ddp_backend());
    v.push_back(make_cpu_ddp_backend());
    v.push_back(make_cpu_hogwild_backend());
    return v;
  }();
  return list;
}

const Backend* find_backend(const std::string& name) {
  for (const auto& b : all_backends()) {
    if (b->name() == name) return b.get();
  }
  return nullptr;
}

// The CPU baseline every speedup is measured against.
std::string default_backend() { return "cpu-omp"; }

BackendTraits traits_of(const std::string& backend) {
  const Backend* b = find_backend(backend);
  if (!b) throw std::invalid_argument("unknown backend '" + backend + "' (allowed: " + backend_names() + ")");
  return b->traits();
}

const char* device_kind_name(DeviceKind d) { return d == DeviceKind::kGpu ? "gpu" : "cpu"; }

const char* parallelism_name(Parallelism p) {
  switch (p) {
    case Parallelism::kDataParallel: return "dp";
    case Parallelism::kDistributed: return "ddp";
    case Parallelism::kSharedMemory: return "shm";
    case Parallelism::kNone: break;
  }
  return "none";
}

std::string Backend::unsupported(const RunConfig& c) const {
  const uint32_t honoured = traits().knobs;
  for (const KnobDef& k : knob_defs()) {
    if (k.is_set(c) && !(honoured & k.bit)) {
      std::string by;
      for (const auto& b : all_backends()) {
        if (b->traits().knobs & k.bit) by += (by.empty() ? "" : ", ") + b->name();
      }
      return std::string(k.flag) + " does not apply to " + name() + " (it applies to: " + by + ")";
    }
  }
  const Availability a = availability_for(c);
  return a.ok ? "" : a.reason;
}

std::string backend_names() {
  std::string s;
  for (const auto& b : all_backends()) s += (s.empty() ? "" : ", ") + b->name();
  return s;
}

}  // namespace tb
