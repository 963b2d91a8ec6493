// kernels/cuda_arch.h — this build's CUDA architectures in words, and the message for a
// GPU that has no kernel image in it. Pure C++ (no CUDA headers): the CPU tests check it.
// The list is CMAKE_CUDA_ARCHITECTURES joined by commas (TB_CUDA_ARCHS): "75-real" is
// SASS for sm_75 only, "90-virtual" PTX for compute_90 only, a bare "90" both.
#pragma once

#include <sstream>
#include <string>

namespace tb {

// "75-real,80-real,90" -> "sm_75, sm_80, sm_90 + PTX compute_90".
inline std::string describe_cuda_archs(const std::string& list) {
  std::string out, entry;
  std::istringstream in(list);
  while (std::getline(in, entry, ',')) {
    if (entry.empty()) continue;
    const auto dash = entry.find('-');
    const std::string num = entry.substr(0, dash), kind = dash == std::string::npos ? "" : entry.substr(dash + 1);
    std::string text;
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) text = entry;  // "all", "native"
    else if (kind == "real") text = "sm_" + num;
    else if (kind == "virtual") text = "PTX compute_" + num;
    else if (kind.empty()) text = "sm_" + num + " + PTX compute_" + num;
    else text = entry;  // as CMake was given it
    out += (out.empty() ? "" : ", ") + text;
  }
  return out.empty() ? "no architectures" : out;
}

// The reason a backend cannot run on a GPU of compute capability major.minor whose
// kernel probe found no image (cudaErrorNoKernelImageForDevice), e.g. "this build has no
// kernel image for sm_75 (built for sm_80, sm_90 + PTX compute_90): rebuild with
// CMAKE_CUDA_ARCHITECTURES=75".
inline std::string no_kernel_image_message(int cc_major, int cc_minor, const std::string& list) {
  const std::string sm = std::to_string(cc_major * 10 + cc_minor);
  return "this build has no kernel image for sm_" + sm + " (built for " + describe_cuda_archs(list) +
         "): rebuild with CMAKE_CUDA_ARCHITECTURES=" + sm;
}

}  // namespace tb
