// harness/ddp_plan.cpp — see ddp_plan.h.
#include "harness/ddp_plan.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace tb {

Shard shard_of(int64_t rows, int rank, int world) {
  const int64_t base = rows / world, rem = rows % world;
  Shard s;
  s.begin = rank * base + std::min<int64_t>(rank, rem);
  s.end = s.begin + base + (rank < rem ? 1 : 0);
  return s;
}

Shard rank_positions(int64_t rows, int rank, int world, bool deterministic) {
  if (!deterministic || kLeaves % world != 0) return shard_of(rows, rank, world);
  const int per_rank = kLeaves / world;
  return Shard{shard_of(rows, rank * per_rank, kLeaves).begin, shard_of(rows, (rank + 1) * per_rank - 1, kLeaves).end};
}

bool shards_in_place(const std::vector<int64_t>& order, int64_t batch, int64_t num_batches, int64_t rows, int rank,
                     int world) {
  for (int64_t s = 0; s < num_batches; ++s) {
    const int64_t begin = s * batch;
    const Shard sh = shard_of(std::min(batch, rows - begin), rank, world);
    for (int64_t p = begin + sh.begin + 1; p < begin + sh.end; ++p) {
      if (order[static_cast<size_t>(p)] != order[static_cast<size_t>(p - 1)] + 1) return false;
    }
    if (sh.end > sh.begin && order[static_cast<size_t>(begin + sh.begin)] < 0) return false;
  }
  return true;
}

std::string one_gpu_per_rank_shortfall(int gpus, int ranks) {
  if (ranks <= gpus) return "";
  return "needs " + std::to_string(ranks) + " GPUs on this node, one per rank (found " + std::to_string(gpus) +
         "; two NCCL ranks on one GPU are not supported)";
}

std::vector<Bucket> plan_buckets(const ParamLayout& layout, int64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  Bucket cur;
  bool open = false;
  for (int l = static_cast<int>(layout.layers.size()) - 1; l >= 0; --l) {
    const LayerView& v = layout.layers[l];
    const int64_t layer_end = v.b_offset + v.out;
    if (!open) {
      cur = Bucket{v.w_offset, layer_end - v.w_offset, l, l};
      open = true;
    } else {
      cur.count += cur.offset - v.w_offset;  // grow downwards to this layer's start
      cur.offset = v.w_offset;
      cur.first_layer = l;
    }
    if (cur.count * static_cast<int64_t>(sizeof(float)) >= bucket_bytes) {
      buckets.push_back(cur);
      open = false;
    }
  }
  if (open) buckets.push_back(cur);
  return buckets;
}

namespace {
// Node keys in order of their first rank (rank_devices, rank_bus_ids).
std::vector<uint32_t> nodes_in_rank_order(const std::vector<uint32_t>& node) {
  std::vector<uint32_t> seen;
  for (uint32_t k : node)
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
  return seen;
}
}  // namespace

// DOMAIN:BB:DD.F: 1-8 hex digits, two, two, one (sscanf's %x would also take "0x" prefixes).
double pci_bus_key(const std::string& id) {
  const auto hex = [&](size_t at, size_t n, uint64_t* v) {
    *v = 0;
    for (size_t i = at; i < at + n; ++i) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(id[i])));
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return false;
      *v = *v * 16 + static_cast<uint64_t>(digit);
    }
    return true;
  };
  const size_t colon = id.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 8 || id.size() != colon + 8) return -1;
  uint64_t domain = 0, bus = 0, dev = 0, fn = 0;
  if (!hex(0, colon, &domain) || id[colon + 3] != ':' || id[colon + 6] != '.' || !hex(colon + 1, 2, &bus) ||
      !hex(colon + 4, 2, &dev) || !hex(colon + 7, 1, &fn) || dev > 0x1f || fn > 7) {
    return -1;
  }
  return static_cast<double>((domain << 16) | (bus << 8) | (dev << 3) | fn);
}

std::string pci_bus_text(double key) {
  if (key < 0) return "?";
  const uint64_t k = static_cast<uint64_t>(key);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", static_cast<unsigned>(k >> 16),
                static_cast<unsigned>((k >> 8) & 0xff), static_cast<unsigned>((k >> 3) & 0x1f),
                static_cast<unsigned>(k & 7));
  return buf;
}

std::string pci_bus_normal(const std::string& id) {
  const double k = pci_bus_key(id);
  return k < 0 ? id : pci_bus_text(k);
}

std::string rank_bus_ids(const std::vector<std::string>& bus, const std::vector<uint32_t>& node) {
  const std::vector<uint32_t> seen = nodes_in_rank_order(node);
  std::string out;
  for (size_t r = 0; r < bus.size(); ++r) {
    if (r) out += ",";
    if (seen.size() > 1) out += std::to_string(std::find(seen.begin(), seen.end(), node[r]) - seen.begin()) + "/";
    out += bus[r];
  }
  return out;
}

std::string rank_devices(const std::vector<int>& device, const std::vector<uint32_t>& node) {
  std::vector<uint32_t> seen;  // node keys in order of their first rank
  for (uint32_t k : node)
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
  std::string out;
  for (size_t r = 0; r < device.size(); ++r) {
    if (r) out += ",";
    if (seen.size() > 1) {
      out += std::to_string(std::find(seen.begin(), seen.end(), node[r]) - seen.begin()) + ":";
    }
    out += std::to_string(device[r]);
  }
  return out;
}

}  // namespace tb
