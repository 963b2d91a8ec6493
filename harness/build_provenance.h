// harness/build_provenance.h — what this binary was built from and with, fixed when it
// was built: the source tree's git commit, dirty flag and describe (a header generated on
// every build by cmake/TbProvenance.cmake), and the CUDA toolkit it was compiled with.
// env.json's run-time git facts may differ: the tree can change after the build.
#pragma once

#include <string>

namespace tb {

struct BuildProvenance {
  std::string commit;    // 40 hex digits; "" when the source was not a git checkout
  bool dirty = false;    // tracked files differed from the commit when the binary was built
  std::string describe;  // `git describe --always --tags` (+ "-dirty"), or why unknown
};

BuildProvenance build_provenance();

// The CUDA toolkit the CUDA sources were compiled with ("13.0.88"); "" when built without
// CUDA. The runtime found when running is read by cuda_probe.cpp (GpuInventory).
std::string cuda_toolkit_version();

}  // namespace tb
