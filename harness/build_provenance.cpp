// harness/build_provenance.cpp — see build_provenance.h. tb_build_provenance.h lives in
// the build folder (generated/), written by the tb_build_provenance target before this compiles.
#include "harness/build_provenance.h"

#include "tb_build_provenance.h"

namespace tb {

BuildProvenance build_provenance() { return {TB_BUILD_GIT_COMMIT, TB_BUILD_GIT_DIRTY != 0, TB_BUILD_GIT_DESCRIBE}; }

std::string cuda_toolkit_version() {
#if defined(TB_CUDA_TOOLKIT_VERSION)
  return TB_CUDA_TOOLKIT_VERSION;
#else
  return "";
#endif
}

}  // namespace tb
