// kernels/cpu/cpu_props.cpp — see cpu_props.h. Vector units from CPUID (with the OS's
// XCR0 saying it saves the wider registers), caches from sysfs (per-instance sizes;
// glibc's sysconf reports some AMD L3s multiplied by the core count), else sysconf.
#include "kernels/cpu/cpu_props.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tb::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t xgetbv0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

void detect_isa(CpuProps* p) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  const unsigned max_leaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  p->vendor = vendor;
  __get_cpuid(1, &a, &b, &c, &d);
  const int base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
  p->family = base_family == 0xF ? base_family + static_cast<int>((a >> 20) & 0xFF) : base_family;
  p->model = (base_family == 0x6 || base_family == 0xF) ? (static_cast<int>((a >> 16) & 0xF) << 4) + base_model
                                                         : base_model;
  const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_state = (xcr0 & 0x6) == 0x6;         // SSE + AVX state
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;       // + opmask, ZMM_Hi256, Hi16_ZMM
  if (max_leaf < 7) return;
  __get_cpuid_count(7, 0, &a, &b, &c, &d);
  const bool avx2 = (b >> 5) & 1, f = (b >> 16) & 1, dq = (b >> 17) & 1, vl = (b >> 31) & 1;
  p->avx2_fma = avx && avx2 && fma && ymm_state;
  p->avx512 = f && dq && vl && zmm_state;
  p->amx = (d >> 24) & 1;  // AMX-TILE
  // Zen 4 (family 0x19 with AVX-512) splits each zmm op into two 256-bit halves;
  // Zen 5 (0x1A) desktop and server parts have the full 512-bit datapath.
  p->avx512_double_pumped = p->avx512 && p->vendor == "AuthenticAMD" && p->family == 0x19;
}
#else
void detect_isa(CpuProps*) {}
#endif

// sysfs: /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size} ("48K").
bool caches_from_sysfs(CpuProps* p) {
  bool any = false;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lf(dir + "level"), tf(dir + "type"), sf(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(lf >> level) || !(tf >> type) || !(sf >> size) || size.empty()) continue;
    int64_t bytes = std::atoll(size.c_str());
    const char unit = size.back();
    if (unit == 'K') bytes <<= 10;
    else if (unit == 'M') bytes <<= 20;
    if (bytes <= 0 || type == "Instruction") continue;
    if (level == 1) p->l1d_bytes = bytes;
    else if (level == 2) p->l2_bytes = bytes;
    else if (level == 3) p->l3_bytes = bytes;
    any = true;
  }
  return any && p->l1d_bytes > 0;
}

bool caches_from_sysconf(CpuProps* p) {
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  p->l1d_bytes = std::max<long>(0, sysconf(_SC_LEVEL1_DCACHE_SIZE));
  p->l2_bytes = std::max<long>(0, sysconf(_SC_LEVEL2_CACHE_SIZE));
  p->l3_bytes = std::max<long>(0, sysconf(_SC_LEVEL3_CACHE_SIZE));
  return p->l1d_bytes > 0;
#else
  (void)p;
  return false;
#endif
}

CpuProps detect() {
  CpuProps p;
  detect_isa(&p);
  if (caches_from_sysfs(&p)) {
    p.cache_source = "sysfs";
  } else if (caches_from_sysconf(&p)) {
    p.cache_source = "sysconf";
  } else {
    p.l1d_bytes = 32 << 10;  // the common size of the last decade's x86 and Arm cores
    p.l2_bytes = 1 << 20;
    p.l3_bytes = 0;
    p.cache_source = "default (OS reported none)";
  }
  return p;
}

}  // namespace

const CpuProps& cpu_props() {
  static const CpuProps props = detect();
  return props;
}

}  // namespace tb::cpu
