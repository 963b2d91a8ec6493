// kernels/cpu/cpu_props.h — what this CPU offers a float32 GEMM: vector units (from
// CPUID), whether AVX-512 runs on a full 512-bit datapath or as two 256-bit halves
// (AMD Zen 4), and the data cache sizes the OS reports. kernels/cpu/gemm.cpp derives
// its micro-kernel and blocking from these; env.json records both.
#pragma once

#include <cstdint>
#include <string>

namespace tb::cpu {

struct CpuProps {
  std::string vendor;        // CPUID vendor string ("GenuineIntel", "AuthenticAMD", "" off x86)
  int family = 0;            // display family (base + extended)
  int model = 0;             // display model
  bool avx512 = false;       // AVX-512 F + DQ + VL with OS-enabled zmm state
  bool avx2_fma = false;     // AVX2 and FMA3 with OS-enabled ymm state
  bool amx = false;          // AMX tiles present (reported only: the GEMM stays fp32, AMX-free)
  bool avx512_double_pumped = false;  // zmm ops executed as two 256-bit halves (AMD family 0x19)
  int64_t l1d_bytes = 0;     // per core; 0 when the OS does not say
  int64_t l2_bytes = 0;      // per core (or per the cores that share it)
  int64_t l3_bytes = 0;      // per last-level cache instance
  std::string cache_source;  // "sysconf", "sysfs" or "default (OS reported none)"
};

// This machine's properties, detected once (thread-safe).
const CpuProps& cpu_props();

}  // namespace tb::cpu
