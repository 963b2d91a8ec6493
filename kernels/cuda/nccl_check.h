// kernels/cuda/nccl_check.h — TB_NCCL_CHECK, check.h's TB_CUDA_CHECK for NCCL calls.
// TB_NCCL_CHECK(stmt) throws tb::Error with file:line, the function, the call, NCCL's
// error string and the current device. TB_NCCL_CHECK_RESULT(result, text) checks an
// ncclResult_t obtained around the call (e.g. once a non-blocking call has settled),
// naming the call as `text`. Defined only in builds with NCCL (TB_HAVE_NCCL): only
// they need nccl.h; elsewhere this header is empty.
#pragma once

#if defined(TB_HAVE_NCCL)
#include <nccl.h>

#include "kernels/cuda/check.h"

// A CUDA or system error inside NCCL whose CUDA error was cudaErrorMemoryAllocation
// throws tb::DeviceOutOfMemory, as check.h's macros do.
#define TB_NCCL_CHECK_RESULT(result, text)                                                                    \
  do {                                                                                                        \
    const ncclResult_t tb_nr_ = (result);                                                                     \
    if (tb_nr_ != ncclSuccess) {                                                                              \
      const std::string tb_what_ = ::tb::error_where(__FILE__, __LINE__, __func__, text) +                    \
                                   ncclGetErrorString(tb_nr_) + ::tb::cuda::device_suffix();                  \
      if ((tb_nr_ == ncclUnhandledCudaError || tb_nr_ == ncclSystemError) &&                                  \
          ::tb::cuda::last_cuda_error_was_oom()) {                                                            \
        throw ::tb::DeviceOutOfMemory(::tb::cuda::device_oom_text(0) + ": " + tb_what_);                      \
      }                                                                                                       \
      throw ::tb::Error(tb_what_);                                                                            \
    }                                                                                                         \
  } while (0)

#define TB_NCCL_CHECK(stmt) TB_NCCL_CHECK_RESULT((stmt), #stmt)
#endif
