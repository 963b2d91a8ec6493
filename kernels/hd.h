// kernels/hd.h — TB_HD marks functions callable from host and device code.
// Under nvcc it expands to __host__ __device__; in plain C++ it is empty, so the
// same scalar math is compiled (and unit-tested) on the CPU.
#pragma once

#if defined(__CUDACC__)
#define TB_HD __host__ __device__ inline
#else
#define TB_HD inline
#endif
