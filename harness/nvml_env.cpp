// harness/nvml_env.cpp — see nvml_env.h. Every value NVML cannot give (an older driver,
// a GPU without the feature) is null; nothing here needs a CUDA context.
#include "harness/nvml_env.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "harness/host_info.h"
#include "harness/nvml.h"

namespace tb {
namespace {

// "0000:65:00.0" (CUDA) and "00000000:65:00.0" (NVML) name the same function.
bool parse_pci(const std::string& s, unsigned v[4]) {
  return std::sscanf(s.c_str(), "%x:%x:%x.%x", &v[0], &v[1], &v[2], &v[3]) == 4;
}
bool same_pci(const std::string& a, const std::string& b) {
  unsigned x[4], y[4];
  return parse_pci(a, x) && parse_pci(b, y) && x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

// A value from an NVML getter, or null when the function is absent or fails.
template <class F, class... A>
Json uint_or_null(F f, A... args) {
  unsigned v = 0;
  return f && f(args..., &v) == nvml::kSuccess ? Json(v) : Json(nullptr);
}
Json watts_or_null(nvml::Return (*f)(nvml::Device, unsigned*), nvml::Device d) {
  unsigned mw = 0;
  return f && f(d, &mw) == nvml::kSuccess ? Json(mw / 1000.0) : Json(nullptr);
}

}  // namespace

std::string topology_cell(bool self, int nvlinks, int level) {
  if (self) return "X";
  if (nvlinks > 0) return "NV" + std::to_string(nvlinks);
  switch (level) {
    case nvml::kTopoInternal: return "INT";
    case nvml::kTopoSingle: return "PIX";
    case nvml::kTopoMultiple: return "PXB";
    case nvml::kTopoHostBridge: return "PHB";
    case nvml::kTopoNode: return "NODE";
    case nvml::kTopoSystem: return "SYS";
    default: return "?";
  }
}

Json nvml_environment(const GpuInventory& cuda) {
  Json j;
  j["library"] = nvml::library_name();
  const nvml::Api* a = nvml::api();
  if (!a) {
    j["available"] = false;
    j["reason"] = nvml::unavailable_reason();
    return j;
  }
  j["available"] = true;
  j["reason"] = nullptr;
  char buf[96] = {};
  j["driver_version"] = a->driver_version && a->driver_version(buf, sizeof buf) == nvml::kSuccess ? Json(buf) : Json(nullptr);
  j["nvml_version"] = a->nvml_version && a->nvml_version(buf, sizeof buf) == nvml::kSuccess ? Json(buf) : Json(nullptr);
  unsigned count = 0;
  if (a->device_count(&count) != nvml::kSuccess) count = 0;
  std::vector<nvml::Device> dev;
  std::vector<std::string> pci;
  Json gpus = Json::array();
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device d = nullptr;
    if (a->handle_by_index(i, &d) != nvml::kSuccess) continue;
    dev.push_back(d);
    Json g;
    g["nvml_index"] = i;
    g["name"] = a->name && a->name(d, buf, sizeof buf) == nvml::kSuccess ? Json(buf) : Json(nullptr);
    nvml::PciInfo p{};
    std::string bus;
    if (a->pci_info && a->pci_info(d, &p) == nvml::kSuccess) {
      char b[32];
      std::snprintf(b, sizeof b, "%04x:%02x:%02x.0", p.domain, p.bus, p.device);
      bus = b;
    }
    pci.push_back(bus);
    g["pci_bus_id"] = bus.empty() ? Json(nullptr) : Json(bus);
    Json cuda_index = nullptr;  // null: not visible to CUDA here (CUDA_VISIBLE_DEVICES)
    for (const GpuInfo& c : cuda.gpus) {
      if (!bus.empty() && same_pci(c.pci_bus_id, bus)) cuda_index = c.index;
    }
    g["cuda_index"] = cuda_index;
    g["max_clocks_mhz"] = {{"sm", uint_or_null(a->max_clock, d, nvml::kClockSm)},
                           {"graphics", uint_or_null(a->max_clock, d, nvml::kClockGraphics)},
                           {"memory", uint_or_null(a->max_clock, d, nvml::kClockMem)}};
    g["application_clocks_mhz"] = {{"graphics", uint_or_null(a->applications_clock, d, nvml::kClockGraphics)},
                                   {"memory", uint_or_null(a->applications_clock, d, nvml::kClockMem)}};
    g["power_limit_w"] = watts_or_null(a->power_limit, d);
    g["enforced_power_limit_w"] = watts_or_null(a->enforced_power_limit, d);
    int ecc_now = 0, ecc_pending = 0;
    const bool ecc_ok = a->ecc_mode && a->ecc_mode(d, &ecc_now, &ecc_pending) == nvml::kSuccess;
    g["ecc"] = ecc_ok ? Json{{"current", ecc_now == nvml::kFeatureEnabled}, {"pending", ecc_pending == nvml::kFeatureEnabled}}
                      : Json(nullptr);
    g["pcie"] = {{"max_generation", uint_or_null(a->max_pcie_gen, d)},
                 {"max_width", uint_or_null(a->max_pcie_width, d)},
                 {"current_generation", uint_or_null(a->pcie_gen, d)},
                 {"current_width", uint_or_null(a->pcie_width, d)}};
    unsigned long long mj = 0;
    g["energy_counter"] = a->total_energy && a->total_energy(d, &mj) == nvml::kSuccess;
    gpus.push_back(g);
  }
  j["gpus"] = gpus;
  // Links: NVLinks counted per pair from each GPU's active links and the PCI id at their
  // far end; links to an NVSwitch join a GPU to every other switched GPU (HGX boards:
  // nvidia-smi shows NV<links> for each such pair); pairs without NVLink are described
  // by their common PCIe ancestor.
  const size_t n = dev.size();
  std::vector<std::vector<int>> links(n, std::vector<int>(n, 0));
  std::vector<int> switched(n, 0);
  for (size_t x = 0; x < n; ++x) {
    for (unsigned l = 0; a->nvlink_state && a->nvlink_remote_pci && l < nvml::kMaxNvLinks; ++l) {
      int active = 0;
      if (a->nvlink_state(dev[x], l, &active) != nvml::kSuccess) break;  // no such link: the last was counted
      nvml::PciInfo far{};
      if (active != nvml::kFeatureEnabled) continue;
      int type = nvml::kNvLinkGpu;
      if (a->nvlink_remote_type && a->nvlink_remote_type(dev[x], l, &type) == nvml::kSuccess &&
          type == nvml::kNvLinkSwitch) {
        ++switched[x];
        continue;
      }
      if (a->nvlink_remote_pci(dev[x], l, &far) != nvml::kSuccess) continue;
      char b[32];
      std::snprintf(b, sizeof b, "%04x:%02x:%02x.0", far.domain, far.bus, far.device);
      for (size_t y = 0; y < n; ++y) {
        if (y != x && same_pci(pci[y], b)) ++links[x][y];
      }
    }
  }
  Json matrix = Json::array();
  for (size_t x = 0; x < n; ++x) {
    Json row = Json::array();
    for (size_t y = 0; y < n; ++y) {
      int level = -1;
      if (x != y && a->common_ancestor && a->common_ancestor(dev[x], dev[y], &level) != nvml::kSuccess) level = -1;
      const int nv = links[x][y] > 0 ? links[x][y] : std::min(switched[x], switched[y]);
      row.push_back(topology_cell(x == y, nv, level));
    }
    matrix.push_back(row);
  }
  j["topology"] = {
      {"legend",
       "row x column by nvml_index, as `nvidia-smi topo -m`: X itself, NV<n> n NVLinks, PIX one PCIe bridge, PXB "
       "several PCIe bridges, PHB a PCIe host bridge, NODE across host bridges of one NUMA node, SYS across NUMA "
       "nodes (SMP interconnect), INT one board, ? unknown"},
      {"matrix", matrix}};
  return j;
}

}  // namespace tb
