// harness/nvml_env.h — env.json's "nvml" record: what NVML says about every GPU of
// this host (driver version, max and application clocks, power limit, ECC, PCIe link)
// and the GPU-to-GPU link matrix as `nvidia-smi topo -m` shows it; or why NVML is absent.
#pragma once

#include "harness/host_info.h"
#include "harness/json_out.h"

namespace tb {

// {"available": false, "library": ..., "reason": "NVML not found: libnvidia-ml.so.1"}
// without NVML; else {"available": true, "library", "driver_version", "nvml_version",
// "gpus": [...], "topology": {"legend", "matrix"}} (README "GPU telemetry (NVML)").
// cuda: CUDA's view of the same GPUs (env_json's inventory), for each GPU's cuda_index.
Json nvml_environment(const GpuInventory& cuda);

// The matrix cell for GPUs a and b: "X" (itself), "NV<n>" (n NVLinks joining them),
// else the PCIe path of nvmlGpuTopologyLevel_t level: PIX, PXB, PHB, NODE, SYS
// ("?" for a level NVML did not report).
std::string topology_cell(bool self, int nvlinks, int level);

}  // namespace tb
