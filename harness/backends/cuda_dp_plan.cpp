// harness/dp_plan.cpp — see dp_plan.h.
#include "harness/backends/cuda_dp_plan.h"

#include <algorithm>

#include "kernels/error.h"

namespace tb {

std::vector<Chunk> chunk_plan(int64_t rows, int slots) {
  if (slots < 1) throw Error("chunk_plan: slots = " + std::to_string(slots) + ", needs >= 1");
  if (rows < 0) throw Error("chunk_plan: rows = " + std::to_string(rows) + ", needs >= 0");
  std::vector<Chunk> chunks;
  if (rows == 0) return chunks;
  const int64_t size = max_chunk_rows(rows, slots);
  for (int64_t begin = 0; begin < rows; begin += size) chunks.push_back({begin, std::min(size, rows - begin)});
  return chunks;
}

int64_t max_chunk_rows(int64_t rows, int slots) {
  if (slots < 1) throw Error("max_chunk_rows: slots = " + std::to_string(slots) + ", needs >= 1");
  return (rows + slots - 1) / slots;
}

std::vector<int> distinct_devices(const std::vector<int>& slots) {
  std::vector<int> d;
  for (int s : slots) {
    if (std::find(d.begin(), d.end(), s) == d.end()) d.push_back(s);
  }
  return d;
}

bool shares_device(const std::vector<int>& slots) { return distinct_devices(slots).size() < slots.size(); }

std::string slot_list(const std::vector<int>& slots) {
  std::string s;
  for (int d : slots) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

std::string dp_unavailable_reason(int gpus, const std::vector<int>& requested) {
  if (requested.empty()) {
    return gpus < 2 ? "needs 2 GPUs, found " + std::to_string(gpus) : "";
  }
  for (int d : requested) {
    if (d < 0 || d >= gpus) {
      return "--devices: " + std::to_string(d) + " is not a visible GPU (found " + std::to_string(gpus) + ")";
    }
  }
  return "";
}

std::vector<int> resolve_slots(const std::vector<int>& requested, int gpus) {
  const std::string why = dp_unavailable_reason(gpus, requested);
  if (!why.empty()) throw Error(why);
  if (!requested.empty()) return requested;
  std::vector<int> all(static_cast<size_t>(gpus));
  for (int i = 0; i < gpus; ++i) all[static_cast<size_t>(i)] = i;
  return all;
}

DpRoute dp_route(const std::vector<int>& slots, int used) {
  if (used < 1 || used > static_cast<int>(slots.size())) {
    throw Error("dp_route: used = " + std::to_string(used) + " of " + std::to_string(slots.size()) + " slots");
  }
  DpRoute r;
  r.leader.resize(static_cast<size_t>(used));
  for (int k = 0; k < used; ++k) {
    int lead = k;
    for (int j = 0; j < k; ++j) {
      if (slots[static_cast<size_t>(j)] == slots[static_cast<size_t>(k)]) {
        lead = j;
        break;
      }
    }
    r.leader[static_cast<size_t>(k)] = lead;
    if (lead != k) r.followers.push_back(k);
    else if (slots[static_cast<size_t>(k)] != slots[0]) r.remote_leaders.push_back(k);
  }
  const std::vector<int> used_slots(slots.begin(), slots.begin() + used);
  r.all_devices = distinct_devices(used_slots).size() == distinct_devices(slots).size();
  return r;
}

bool nccl_step(const std::vector<int>& slots, int used) {
  return distinct_devices(slots).size() > 1 && dp_route(slots, used).all_devices;
}

}  // namespace tb
