// tests/cuda_trace/trace_shim_state.h — libtb_cuda_trace_shim.so: a FAKE CUDA runtime,
// cuBLAS and NCCL, loaded with LD_PRELOAD in front of the real libraries, that
// records every call the GPU backends make so the CPU tests (test_cuda_trace.cpp)
// can check their host-side call discipline on a machine without a GPU.
//
// WHAT IT FAKES. The CUDA runtime entry points trainbench imports (devices, memory,
// copies, streams, events, graphs, kernel registration and launch), cuBLAS (version,
// handle, stream, workspace, math/pointer mode, Sgemm) and NCCL (version, unique id,
// communicator set-up, broadcast, reduce, all-reduce, groups); the versions are those
// of the headers the shim was built with. It pretends to be TB_FAKE_GPUS GPUs
// (default 2) with peer access between all of them (none with TB_FAKE_NO_PEER=1).
// By default NOTHING EXECUTES: kernels, GEMMs, collectives and device copies do nothing;
// device memory is a range of fake addresses that must never be dereferenced; copies
// from the device into host memory write zeros. Every loss, accuracy, checksum or time
// that trainbench prints under this library is then MEANINGLESS — the only product is
// the trace. With TB_FAKE_EXECUTE=1 the fake GPUs compute on the host instead (numbers
// are real, times are not): trace_shim_exec.h says what that mode models.
//
// THE TRACE: one line per recorded call, to TB_TRACE_FILE ("%r" in it becomes the
// MPI rank, OMPI_COMM_WORLD_RANK / PMI_RANK, else 0; unset: stderr), as
//   n=SEQ tid=T fn=NAME dev=CUR cap=S|- [key=value ...]
// tid: 0 for the first calling thread, then 1, 2, ...; dev: the calling thread's
// current device; cap: the stream being captured into a CUDA graph, - when none.
// Handles are named by kind and creation order, deterministic for a given call
// sequence: S streams, E events, B cuBLAS handles, N communicators, G graphs,
// X graph execs. A call taking a stream adds stream=S sdev=D (D: the device the
// stream was created on; the legacy stream 0 is the current device's); an event
// event=E edev=D flags=F; a cuBLAS handle handle=B hdev=D; a communicator comm=N cdev=D.
// Memory is named by block: dD.I (device D, allocation I; fake addresses never
// reused), pI (pinned, cudaMallocHost/cudaHostAlloc), rI (registered host memory and
// its mapped device view), xD.I (a freed device block), h (pageable host memory),
// 0 (null). Work that touches memory on a stream adds acc=MODE:BLOCK:OFFSET:BYTES,...
// (r read, w write; pageable host memory is not listed). Extents are exact for copies,
// memsets, GEMMs (from m, n, k and the leading dimensions, plus the handle's
// workspace) and collectives; a kernel's pointer arguments are known only by where
// they point (BYTES = 1; a const pointee is read, any other written).
//
// Knobs: TB_FAKE_GPUS=N, TB_FAKE_NO_PEER=1, TB_FAKE_MALLOC_FAIL_AT=K (the K-th cudaMalloc
// of the process, from 1, fails with cudaErrorMemoryAllocation: the clean-up paths),
// TB_FAKE_LAUNCH_FAIL_AT=K (the K-th kernel launch fails with cudaErrorLaunchFailure,
// reported as CUDA does: by the next cudaGetLastError),
// TB_FAKE_EXECUTE=1 (compute on the host), TB_FAKE_BIND_PER_RANK=1 (each MPI rank sees
// GPUs of its own: PCI bus ids offset by the node-local rank, as per-task GPU binding),
// TB_FAKE_EVENT_CLOCK=seq (cudaEventElapsedTime answers 1 us per recorded call between
// the two events' last records, instead of 1 ms: tests can tell which intervals a sum
// covers). Beside the CUDA API: `fn=mark what=...` lines from tb_trace_mark, which the
// runner calls around each timed epoch (harness/trace_mark.h), and
// cudaFuncGetAttributes recorded with the kernel it names (lazy loading).
// Driver and devices (trace_shim_device.cpp): TB_FAKE_DRIVER_VERSION=V (cudaDriverGetVersion;
// below the runtime's, cudaGetDeviceCount fails with cudaErrorInsufficientDriver as CUDA does;
// 0 = no driver), TB_FAKE_CC=75 (compute capability), TB_FAKE_NO_KERNEL_IMAGE=1
// (cudaFuncGetAttributes and launches fail with cudaErrorNoKernelImageForDevice).
// Memory: TB_FAKE_FREE_MIB (free memory of an untouched device, default 70 GiB),
// TB_FAKE_CONTEXT_MIB (what a context takes, default 0), TB_FAKE_CUBLAS_MIB (per cuBLAS
// handle: cublasCreate fails with CUBLAS_STATUS_ALLOC_FAILED when it does not fit),
// TB_FAKE_NCCL_MIB (per communicator: init fails with ncclUnhandledCudaError, the CUDA
// error cudaErrorMemoryAllocation left for cudaGetLastError); cudaMalloc beyond free fails.
//
// FILES. This header and trace_shim_state.cpp: the process state every fake shares
// (current device, memory blocks, handles, capture state) and the record writer;
// trace_shim_runtime.cpp: devices, memory, copies, streams, events and graphs;
// trace_shim_kernels.cpp: kernel registration and launch (what nvcc's host stubs
// call); trace_shim_cublas.cpp; trace_shim_nccl.cpp (built where NCCL was found,
// with TB_TRACE_NCCL); execute mode: trace_shim_exec.{h,cpp} (memory, stream work,
// graphs), trace_shim_exec_kernels.cpp (kernels' host twins, Sgemm),
// trace_shim_exec_nccl.cpp (collectives). Only the faked C entry points are exported: the shared state
// below is hidden inside the library.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

namespace __attribute__((visibility("hidden"))) tb_trace_shim {

// ---- process state (every entry point holds g_mu) ----------------------------------
extern std::mutex g_mu;
extern thread_local int t_dev;  // the calling thread's current device (CUDA: per host thread)
extern thread_local int t_tid;  // trace thread id, assigned on the first recorded call
extern int g_threads;
extern long g_seq;
// The calling thread's sticky launch error (cudaGetLastError returns and clears it).
extern thread_local cudaError_t t_last_error;

int fake_gpus();  // TB_FAKE_GPUS, default 2
bool no_peer();   // TB_FAKE_NO_PEER

// ---- driver, devices, memory ledger (trace_shim_device.cpp) ----------------------------
int fake_driver_version();  // TB_FAKE_DRIVER_VERSION, default the runtime's (CUDART_VERSION)
bool driver_usable();       // the driver is at least the runtime's version
int fake_cc();              // TB_FAKE_CC as major*10+minor, default 90
bool no_kernel_image();     // TB_FAKE_NO_KERNEL_IMAGE=1
size_t mib_knob(const char* name, size_t fallback_mib);  // a MiB knob, in bytes
size_t fake_total();         // total memory of every fake device
size_t fake_free(int dev);   // TB_FAKE_FREE_MIB minus what this process holds on dev
void touch_context(int dev);  // the first touch of dev charges TB_FAKE_CONTEXT_MIB
bool charge(int dev, size_t bytes);  // false (nothing charged) when bytes exceed free
void release(int dev, size_t bytes);
FILE* trace_file();

// ---- memory blocks -----------------------------------------------------------------
// Fake device addresses: device d's blocks come from [kDevBase + d * kDevSpan, ...),
// bump-allocated in whole pages, a guard page between blocks, never reused; each block
// ends where its pages end (place_device_block, trace_shim_exec.cpp).
constexpr uintptr_t kDevBase = uintptr_t{1} << 44;
constexpr uintptr_t kDevSpan = uintptr_t{1} << 38;
constexpr int kMaxDevices = 64;

struct Block {
  uintptr_t base = 0;
  size_t bytes = 0;
  char cls = 'd';  // d device, p pinned, r registered, x freed device block
  int dev = 0;
  int id = 0;
  uintptr_t region = 0;  // device blocks: the page-aligned region holding it (trace_shim_exec.h)
  size_t region_bytes = 0;
  std::string name() const {
    if (cls == 'd' || cls == 'x') return std::string(1, cls) + std::to_string(dev) + "." + std::to_string(id);
    return std::string(1, cls) + std::to_string(id);
  }
};
extern std::map<uintptr_t, Block> g_blocks;  // live blocks and freed device blocks, by base
extern size_t g_bump[kMaxDevices];
extern int g_block_ids;

const Block* find_block(const void* p);
std::string ptr_name(const void* p);
// One access of `bytes` bytes from p; pageable host memory and null are not listed.
std::string access(char mode, const void* p, size_t bytes);
void add_access(std::string* list, const std::string& a);
// A copy's accesses: src read, dst written.
std::string copy_access(void* dst, const void* src, size_t bytes);

// ---- handles -----------------------------------------------------------------------
struct Handle {
  char kind = '?';  // S stream, E event, B cuBLAS, N communicator, G graph, X graph exec
  int id = 0;
  int dev = 0;
  unsigned flags = 0;
  int rank = 0;  // a communicator's rank
  // cuBLAS: the stream it runs on and its workspace (cublasSetStream resets it, as cuBLAS does)
  void* stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  size_t charged = 0;  // device memory it holds in the ledger (TB_FAKE_CUBLAS_MIB, TB_FAKE_NCCL_MIB)
  std::string name() const { return std::string(1, kind) + std::to_string(id); }
};
extern std::map<uintptr_t, Handle> g_handles;
extern int g_handle_ids;

void* make_handle(char kind, int dev, unsigned flags = 0);
Handle* handle(const void* p);
std::string handle_name(const void* p);

// The stream being captured into a graph (cudaStreamBeginCapture .. EndCapture).
extern void* g_capture;

// ---- records -----------------------------------------------------------------------
class Rec {
 public:
  explicit Rec(const char* fn) {
    if (t_tid < 0) t_tid = g_threads++;
    line_ = "n=" + std::to_string(g_seq++) + " tid=" + std::to_string(t_tid) + " fn=" + fn +
            " dev=" + std::to_string(t_dev) + " cap=" + (g_capture ? handle_name(g_capture) : "-");
  }
  Rec& kv(const char* k, const std::string& v) {
    line_ += std::string(" ") + k + "=" + (v.empty() ? "-" : v);
    return *this;
  }
  Rec& kv(const char* k, long long v) { return kv(k, std::to_string(v)); }
  Rec& stream(cudaStream_t s) {
    if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread) return kv("stream", "0").kv("sdev", t_dev);
    const Handle* h = handle(s);
    return kv("stream", handle_name(s)).kv("sdev", h ? h->dev : -1);
  }
  Rec& event(const char* k, cudaEvent_t e) {
    const Handle* h = handle(e);
    kv(k, handle_name(e));
    return kv((std::string(k) + "dev").c_str(), h ? h->dev : -1)
        .kv((std::string(k) + "flags").c_str(), h ? static_cast<long long>(h->flags) : -1);
  }
  Rec& blas(cublasHandle_t b) {
    const Handle* h = handle(b);
    return kv("handle", handle_name(b)).kv("hdev", h ? h->dev : -1);
  }
  Rec& acc(const std::string& list) { return list.empty() ? *this : kv("acc", list); }
  Rec& ret(int r) { return r ? kv("ret", r) : *this; }
  void emit() {
    FILE* f = trace_file();
    std::fputs(line_.c_str(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }

 private:
  std::string line_;
};

}  // namespace tb_trace_shim
