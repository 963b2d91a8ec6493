// harness/backends/cuda_dp_plan.h — the pure host logic of `cuda-dp` (backends/cuda_dp.cpp),
// unit-tested without a GPU (tests/harness/test_dp_plan.cpp):
//  * how a global batch of B rows is split over G slots: torch.chunk's rule, which
//    torch.nn.DataParallel's scatter uses (not ddp_plan.h's shard_of);
//  * which slots --devices names and whether that is runnable;
//  * how the replicas of slots that share a physical GPU are reached: each GPU's
//    first slot (its leader) talks to slot 0's GPU, the others copy from / add into
//    their leader on that GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

// Rows [begin, begin + count) of the global batch; chunk i goes to slot i.
struct Chunk {
  int64_t begin = 0, count = 0;
};

// torch.chunk(batch, G) along rows: chunk size c = ceil(B / G); chunks of c rows in
// order, the last one smaller; ceil(B / c) chunks, so FEWER than G when B is small
// (B=5, G=4 -> 2,2,1; B=1 -> one chunk; B=6, G=4 -> 2,2,2). B = 0 -> no chunk.
// Throws tb::Error for G < 1 or B < 0.
std::vector<Chunk> chunk_plan(int64_t rows, int slots);

// The largest chunk for batches of up to `rows` rows: ceil(rows / slots).
int64_t max_chunk_rows(int64_t rows, int slots);

// Physical GPUs of a slot list in order of first appearance: {0,0,1} -> {0,1}.
std::vector<int> distinct_devices(const std::vector<int>& slots);
// Whether two slots name the same GPU (logical slots such as 0,0).
bool shares_device(const std::vector<int>& slots);
// "0,1" / "0,0": the devices column of cuda-dp rows.
std::string slot_list(const std::vector<int>& slots);

// Why cuda-dp cannot run on `gpus` visible GPUs with --devices `requested` (empty =
// every visible GPU), or "" when it can: no list and fewer than 2 GPUs is
// "needs 2 GPUs, found N"; a listed id that is not a visible GPU is named.
std::string dp_unavailable_reason(int gpus, const std::vector<int>& requested);
// The slots a run uses: `requested`, or 0..gpus-1 when empty. Throws tb::Error with
// dp_unavailable_reason when that is not runnable.
std::vector<int> resolve_slots(const std::vector<int>& requested, int gpus);

// How slots [0, used) are reached from slot 0 for the parameter broadcast (slot 0
// -> remote leaders -> their followers) and the gradient reduction (followers ->
// their leader with an add on that GPU, then remote leaders -> slot 0).
struct DpRoute {
  std::vector<int> leader;          // [slot < used]: the first slot in [0, used) on the same GPU
  std::vector<int> remote_leaders;  // leaders on another GPU than slot 0's, in slot order
  std::vector<int> followers;       // non-leaders (share a GPU with an earlier slot), in slot order
  bool all_devices = false;         // every GPU of the slot list has a slot in [0, used)
};
// Throws tb::Error unless 1 <= used <= slots.size().
DpRoute dp_route(const std::vector<int>& slots, int used);

// Whether a step over slots [0, used) may use the NCCL communicator built over
// distinct_devices(slots): it spans more than one GPU and every one of them takes
// part (NCCL collectives need all ranks; a short batch that leaves a GPU idle goes
// through peer copies instead).
bool nccl_step(const std::vector<int>& slots, int used);

}  // namespace tb
