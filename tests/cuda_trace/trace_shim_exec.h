// tests/cuda_trace/trace_shim_exec.h — the trace shim's EXECUTE mode
// (TB_FAKE_EXECUTE=1): the fake GPUs compute, on the host, so the GPU backends and the
// GPU tests (tests/cuda, label "cuda") can be checked for NUMBERS on a machine without
// a GPU, not only for their call discipline.
//
// What it models, and what it does not:
//  - Device memory is real host memory mapped at the fake device addresses (each block
//    ends at a page boundary followed by an unmapped guard page, so a write past the end
//    of a block faults; a freed block is unmapped, so a use after free faults).
//  - Work on a stream (copies, memsets, kernels, GEMMs) runs at once, in issue order, on
//    the calling thread: every stream is serialised with every other. Races between
//    streams are therefore NOT exercised here (the trace tests' race model checks the
//    event ordering instead).
//  - A kernel runs as its host twin (trace_shim_exec_kernels.cpp): the CPU op of the
//    same name from kernels/cpu, or a loop for the few with no CPU twin, fed with the
//    arguments the launcher passed. The kernels' own thread indexing and block
//    reductions are NOT exercised here (tests/cuda_emu runs that device code under an
//    emulation of CUDA's threads); what is exercised is
//    everything around them: shapes and arguments each launcher passes, buffers,
//    offsets, copies, the cuBLAS layout mapping (Sgemm computed to cuBLAS's
//    column-major contract), graph capture and replay, and NCCL's data movement.
//  - While a stream is captured, its work (and that of streams joined to it through an
//    event) is recorded into the graph instead of run; cudaGraphLaunch replays it.
//  - NCCL: a collective runs once every rank has issued it, reduced in rank order in
//    float. Ranks of one process (ncclCommInitAll) meet in memory; ranks in separate
//    processes (ncclCommInitRank, an MPI job) exchange files in a folder named by the
//    unique id under TMPDIR, removed when the communicators are destroyed.
//  - Timings (cudaEventElapsedTime) stay meaningless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace __attribute__((visibility("hidden"))) tb_trace_shim {

bool executing();  // TB_FAKE_EXECUTE=1

// ---- device memory ---------------------------------------------------------------------
// Where cudaMalloc places a block of `bytes` on device `dev`: the block's address, and the
// page-aligned region [*region, *region + *region_bytes) that holds it (mapped only when
// executing). Returns false when executing and the mapping fails.
bool place_device_block(int dev, size_t bytes, uintptr_t* base, uintptr_t* region, size_t* region_bytes);
void release_device_block(uintptr_t region, size_t region_bytes);

// ---- work on streams -------------------------------------------------------------------
using Work = std::function<void()>;
// Runs `work` now, or appends it to the graph being captured when `stream` is part of the
// capture. Caller holds g_mu. In trace-only mode does nothing.
void submit(const void* stream, Work work);
bool stream_captured(const void* stream);

// Work that completes later (a collective across processes waiting for its peers, as on
// a GPU where the host returns at once and the stream stalls): `finish` runs before the
// next work is submitted or the host synchronises (drain), in the order deferred, and
// may release g_mu while it waits so that another thread (a watchdog) can query; until
// then every event and stream query answers "not ready". Caller holds g_mu.
void defer(Work finish);
void drain();
bool work_pending();

// Capture bookkeeping (called by the runtime fakes with g_mu held).
void exec_begin_capture(const void* stream);
void exec_end_capture(const void* graph);  // the captured work becomes `graph`'s
void exec_event_recorded(const void* event, const void* stream);
void exec_stream_waits(const void* stream, const void* event);
void exec_instantiate(const void* graph, const void* exec);
void exec_launch_graph(const void* exec, const void* stream);
void exec_forget(const void* graph_or_exec);

// ---- kernels and GEMMs (trace_shim_exec_kernels.cpp) -------------------------------------
// A launch of `kernel` (its demangled name without parameters, as the trace shows it)
// with its arguments decoded into 8-byte slots (pointers, integers and floats by value,
// in parameter order). Aborts with the name when no host twin exists.
void run_kernel(const char* kernel, const uint64_t* args, size_t nargs);
// cuBLAS's column-major Sgemm contract: C (m x n, ldc) = alpha op(A) op(B) + beta C,
// beta == 0 ignoring C's old contents.
void run_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc);

// ---- NCCL (trace_shim_exec_nccl.cpp; built where NCCL was found) --------------------------
struct Collective {
  char kind;  // b broadcast, r reduce, a all-reduce
  const void* send;
  void* recv;
  size_t bytes;     // per rank
  bool is_float;    // reductions: float only
  int op;           // 0 sum, 1 average, -1 anything else (refused)
  int root;         // broadcast and reduce
};
void exec_comm_init_all(void* const* comms, int n);  // one process's clique, rank i = comms[i]
void exec_comm_init_rank(const void* comm, const char* unique_id, int rank, int nranks);
void exec_comm_destroy(const void* comm);
void exec_collective(const void* comm, const void* stream, const Collective& c);

// Stops the process with a message naming what the execute mode cannot do.
[[noreturn]] void exec_unsupported(const char* what);

}  // namespace tb_trace_shim
