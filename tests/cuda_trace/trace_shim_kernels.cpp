// tests/cuda_trace/trace_shim_kernels.cpp — the trace shim's kernel registration and
// launch: what nvcc's host stubs call. A launch is recorded with the kernel's
// demangled name, its configuration and its arguments — pointers by the block they
// point into (a const pointee read, any other written), scalars by value. Nothing runs,
// unless TB_FAKE_EXECUTE=1: then the kernel's host twin runs (trace_shim_exec.h).
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "trace_shim_exec.h"
#include "trace_shim_state.h"

using namespace tb_trace_shim;

namespace {
std::map<const void*, std::string> g_kernels;  // host stub -> mangled device name
thread_local dim3 t_grid, t_block;
thread_local size_t t_shmem = 0;
thread_local void* t_stream = nullptr;

// Top-level comma-separated parameter types of a demangled signature.
std::vector<std::string> param_types(const std::string& sig) {
  std::vector<std::string> out;
  const size_t open = sig.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::string cur;
  for (size_t i = open + 1; i < sig.size(); ++i) {
    const char c = sig[i];
    if ((c == ',' || c == ')') && depth == 0) {
      while (!cur.empty() && cur.front() == ' ') cur.erase(cur.begin());
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (c == ')') break;
      continue;
    }
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    cur += c;
  }
  return out;
}

std::string scalar(const std::string& t, const void* v) {
  if (t == "float") return std::to_string(*static_cast<const float*>(v));
  if (t == "double") return std::to_string(*static_cast<const double*>(v));
  if (t == "bool") return std::to_string(int(*static_cast<const bool*>(v)));
  if (t == "int") return std::to_string(*static_cast<const int*>(v));
  if (t == "unsigned int") return std::to_string(*static_cast<const unsigned*>(v));
  if (t == "long" || t == "long long") return std::to_string(*static_cast<const long long*>(v));
  if (t == "unsigned long" || t == "unsigned long long") {
    return std::to_string(*static_cast<const unsigned long long*>(v));
  }
  return "?";
}

// The demangled signature of the kernel whose host stub is `fun`, and its display name
// (no "void ", no spaces: tb::cuda::sgd_update_kernel<true>). Caller holds g_mu.
std::string kernel_signature(const void* fun) {
  auto it = g_kernels.find(fun);
  const std::string mangled = it == g_kernels.end() ? "unknown" : it->second;
  int st = 0;
  char* dm = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &st);
  const std::string sig = dm ? dm : mangled;
  std::free(dm);
  return sig;
}
std::string kernel_name(const std::string& sig) {
  std::string name = sig.substr(0, sig.find('('));
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  for (size_t at; (at = name.find(", ")) != std::string::npos;) name.erase(at + 1, 1);
  for (char& c : name) c = c == ' ' ? '_' : c;
  return name;
}

// Bytes a by-value parameter of type t occupies (pointers: 8); 0 when unknown.
size_t param_bytes(const std::string& t) {
  if (t.find('*') != std::string::npos) return sizeof(void*);
  if (t == "bool") return 1;
  if (t == "float" || t == "int" || t == "unsigned int") return 4;
  if (t == "double" || t == "long" || t == "long long" || t == "unsigned long" || t == "unsigned long long") return 8;
  return 0;
}
}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void*) {
  static void* h = nullptr;
  return &h;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  std::lock_guard<std::mutex> g(g_mu);
  g_kernels[host_fun] = device_name;
}
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st* s) {
  t_grid = grid;
  t_block = block;
  t_shmem = shmem;
  t_stream = s;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, void* s) {
  *grid = t_grid;
  *block = t_block;
  *shmem = t_shmem;
  *static_cast<void**>(s) = t_stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* fun) {
  *k = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  const std::string sig = kernel_signature(reinterpret_cast<const void*>(k));
  const std::string name = kernel_name(sig);
  std::string shown, acc;
  const std::vector<std::string> types = param_types(sig);
  std::vector<uint64_t> slots(types.size(), 0);  // the arguments by value, for the host twin
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& t = types[i];
    const size_t size = param_bytes(t);
    if (executing() && size == 0) exec_unsupported(("kernel parameter type '" + t + "' of " + name).c_str());
    std::memcpy(&slots[i], args[i], size);
    const size_t star = t.rfind('*');
    std::string v;
    if (star != std::string::npos) {
      const void* p = *static_cast<void* const*>(args[i]);
      const bool read_only = t.substr(0, star).find("const") != std::string::npos;
      v = (read_only ? "r:" : "w:") + ptr_name(p);
      add_access(&acc, access(read_only ? 'r' : 'w', p, 1));
    } else {
      v = scalar(t, args[i]);
    }
    if (i) shown += ',';
    shown += v;
  }
  static long launches = 0;
  const char* fail = std::getenv("TB_FAKE_LAUNCH_FAIL_AT");
  // No image for this GPU (TB_FAKE_NO_KERNEL_IMAGE): every launch fails as CUDA's does.
  const cudaError_t err = no_kernel_image()                      ? cudaErrorNoKernelImageForDevice
                          : fail && ++launches == std::atol(fail) ? cudaErrorLaunchFailure
                                                                  : cudaSuccess;
  Rec("launch").kv("kernel", name).stream(s).kv("grid", grid.x).kv("block", block.x)
      .kv("shmem", static_cast<long long>(shmem))
      .kv("args", shown).acc(acc).ret(err).emit();
  if (err != cudaSuccess) {
    t_last_error = err;
    return err;
  }
  submit(s, [name, slots] { run_kernel(name.c_str(), slots.data(), slots.size()); });
  return cudaSuccess;
}

// What a real runtime does here under lazy loading: load the kernel's module on the
// current device (so it needs a context there). Recorded with the kernel's name as launch
// records name it (trace.h check_loaded_before_capture); fails as a GPU without an image
// of this build's architectures does (TB_FAKE_NO_KERNEL_IMAGE).
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* fun) {
  std::lock_guard<std::mutex> g(g_mu);
  touch_context(t_dev);
  const bool known = g_kernels.count(fun) > 0;
  const cudaError_t err = no_kernel_image() ? cudaErrorNoKernelImageForDevice
                          : !known          ? cudaErrorInvalidDeviceFunction
                                            : cudaSuccess;
  Rec("cudaFuncGetAttributes").kv("kernel", known ? kernel_name(kernel_signature(fun)) : "unknown").ret(err).emit();
  if (err != cudaSuccess) {
    t_last_error = err;
    return err;
  }
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->binaryVersion = attr->ptxVersion = fake_cc();
  return cudaSuccess;
}

}  // extern "C"
