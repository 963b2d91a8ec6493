// harness/backend_registry.cpp — the list of backends, in the order reports show them.
// A new backend adds one make_* function and one line here.
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"

namespace tb {

std::unique_ptr<Backend> make_reference_backend();
std::unique_ptr<Backend> make_cpu_omp_backend();
std::unique_ptr<Backend> make_unavailable_backend(const std::string& name);
#if defined(TB_HAVE_MPI)
std::unique_ptr<Backend> make_cpu_ddp_backend();
#endif
#if defined(TB_HAVE_CUDA_BACKEND)
std::unique_ptr<Backend> make_cuda_backend();
std::unique_ptr<Backend> make_cuda_dp_backend();
#endif
#if defined(TB_HAVE_CUDA_DDP)
std::unique_ptr<Backend> make_cuda_ddp_backend();
#endif

const std::vector<std::unique_ptr<Backend>>& all_backends() {
  static const std::vector<std::unique_ptr<Backend>> list = [] {
    std::vector<std::unique_ptr<Backend>> v;
    v.push_back(make_reference_backend());
    v.push_back(make_cpu_omp_backend());
#if defined(TB_HAVE_CUDA_BACKEND)
    v.push_back(make_cuda_backend());
#else
    v.push_back(make_unavailable_backend("cuda"));
#endif
#if defined(TB_HAVE_CUDA_BACKEND)
    v.push_back(make_cuda_dp_backend());
#else
    v.push_back(make_unavailable_backend("cuda-dp"));
#endif
#if defined(TB_HAVE_CUDA_DDP)
    v.push_back(make_cuda_ddp_backend());
#else
    v.push_back(make_unavailable_backend("cuda-ddp"));
#endif
#if defined(TB_HAVE_MPI)
    v.push_back(make_cpu_ddp_backend());
#else
    v.push_back(make_unavailable_backend("cpu-ddp"));
#endif
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

bool multi_process(const std::string& backend) { return backend == "cpu-ddp" || backend == "cuda-ddp"; }

std::string backend_names() {
  std::string s;
  for (const auto& b : all_backends()) s += (s.empty() ? "" : ", ") + b->name();
  return s;
}

}  // namespace tb
