// kernels/error.h — the one exception type of the error-macro family
// (TB_CUDA_CHECK, TB_CUBLAS_CHECK, TB_NCCL_CHECK, TB_MPI_CHECK): its message is
// "file:line func: stmt failed: reason", and main() prints it as one line.
#pragma once

#include <stdexcept>
#include <string>

namespace tb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A device allocation failed — CUDA, cuBLAS or NCCL ran out of device memory, or a
// trainer's pre-check found too little free. Its message starts with "out of device memory
// (needs ~X MiB, free Y MiB)" (tb::cuda::device_oom_text), the row's `failed:` reason.
class DeviceOutOfMemory : public Error {
 public:
  using Error::Error;
};

inline std::string error_where(const char* file, int line, const char* func, const char* stmt) {
  std::string s = file;
  s += ':';
  s += std::to_string(line);
  s += ' ';
  s += func;
  s += ": ";
  s += stmt;
  s += " failed: ";
  return s;
}

}  // namespace tb
