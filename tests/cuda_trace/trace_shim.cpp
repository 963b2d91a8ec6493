// tests/cuda_trace/trace_shim.cpp — libtb_cuda_trace_shim.so: a FAKE CUDA runtime,
// cuBLAS and NCCL, loaded with LD_PRELOAD in front of the real libraries, that
// records every call the GPU backends make so the CPU tests (test_cuda_trace.cpp)
// can check their host-side call discipline on a machine without a GPU.
//
// WHAT IT FAKES. The CUDA runtime entry points trainbench imports (devices, memory,
// copies, streams, events, graphs, kernel registration and launch), cuBLAS (handle,
// stream, workspace, math/pointer mode, Sgemm) and NCCL (unique id, communicator
// set-up, broadcast, reduce, all-reduce, groups). It pretends to be TB_FAKE_GPUS GPUs
// (default 2) with peer access between all of them (none with TB_FAKE_NO_PEER=1).
// NOTHING EXECUTES: kernels, GEMMs, collectives and device copies do nothing; device
// memory is a range of fake addresses that must never be dereferenced; copies from
// the device into host memory write zeros. Every loss, accuracy, checksum or time that trainbench
// prints under this library is MEANINGLESS — the only product is the trace.
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
// of the process, from 1, fails with cudaErrorMemoryAllocation: the clean-up paths).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#if defined(TB_TRACE_NCCL)
#include <nccl.h>
#endif

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

// ---- process state (every entry point holds g_mu) ----------------------------------
std::mutex g_mu;
thread_local int t_dev = 0;   // the calling thread's current device (CUDA: per host thread)
thread_local int t_tid = -1;  // trace thread id, assigned on the first recorded call
int g_threads = 0;
long g_seq = 0;

int fake_gpus() {
  const char* e = std::getenv("TB_FAKE_GPUS");
  const int n = e ? std::atoi(e) : 2;
  return n > 0 ? n : 0;
}
bool no_peer() { return std::getenv("TB_FAKE_NO_PEER") != nullptr; }

FILE* trace_file() {
  static FILE* f = [] {
    const char* p = std::getenv("TB_TRACE_FILE");
    if (!p || !*p) return stderr;
    std::string path = p;
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = std::getenv("PMI_RANK");
    for (size_t at; (at = path.find("%r")) != std::string::npos;) path.replace(at, 2, rank ? rank : "0");
    FILE* out = std::fopen(path.c_str(), "w");
    return out ? out : stderr;
  }();
  return f;
}

// ---- memory blocks -----------------------------------------------------------------
// Fake device addresses: device d's blocks come from [kDevBase + d * kDevSpan, ...),
// bump-allocated in 256-byte steps and never reused.
constexpr uintptr_t kDevBase = uintptr_t{1} << 44;
constexpr uintptr_t kDevSpan = uintptr_t{1} << 38;
constexpr int kMaxDevices = 64;

struct Block {
  uintptr_t base = 0;
  size_t bytes = 0;
  char cls = 'd';  // d device, p pinned, r registered, x freed device block
  int dev = 0;
  int id = 0;
  std::string name() const {
    if (cls == 'd' || cls == 'x') return std::string(1, cls) + std::to_string(dev) + "." + std::to_string(id);
    return std::string(1, cls) + std::to_string(id);
  }
};
std::map<uintptr_t, Block> g_blocks;  // live blocks and freed device blocks, by base
size_t g_bump[kMaxDevices] = {};
int g_block_ids = 0;

const Block* find_block(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  auto it = g_blocks.upper_bound(v);
  if (it == g_blocks.begin()) return nullptr;
  --it;
  const Block& b = it->second;
  return v < b.base + (b.bytes ? b.bytes : 1) ? &b : nullptr;
}

std::string ptr_name(const void* p) {
  if (!p) return "0";
  const Block* b = find_block(p);
  if (!b) return "h";
  return b->name() + "+" + std::to_string(reinterpret_cast<uintptr_t>(p) - b->base);
}

// One access of `bytes` bytes from p; pageable host memory and null are not listed.
std::string access(char mode, const void* p, size_t bytes) {
  const Block* b = p ? find_block(p) : nullptr;
  if (!b) return "";
  return std::string(1, mode) + ":" + b->name() + ":" + std::to_string(reinterpret_cast<uintptr_t>(p) - b->base) +
         ":" + std::to_string(bytes);
}

void add_access(std::string* list, const std::string& a) {
  if (a.empty()) return;
  if (!list->empty()) *list += ",";
  *list += a;
}

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
  std::string name() const { return std::string(1, kind) + std::to_string(id); }
};
std::map<uintptr_t, Handle> g_handles;
int g_handle_ids = 0;

void* make_handle(char kind, int dev, unsigned flags = 0) {
  const int id = ++g_handle_ids;
  const uintptr_t v = 0x100000 + uintptr_t(id) * 16;
  Handle h;
  h.kind = kind;
  h.id = id;
  h.dev = dev;
  h.flags = flags;
  g_handles[v] = h;
  return reinterpret_cast<void*>(v);
}
Handle* handle(const void* p) {
  auto it = g_handles.find(reinterpret_cast<uintptr_t>(p));
  return it == g_handles.end() ? nullptr : &it->second;
}
std::string handle_name(const void* p) {
  if (!p) return "0";
  const Handle* h = handle(p);
  return h ? h->name() : "unknown";
}

// The stream being captured into a graph (cudaStreamBeginCapture .. EndCapture).
void* g_capture = nullptr;

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

const char* kind_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost: return "H2H";
    case cudaMemcpyHostToDevice: return "H2D";
    case cudaMemcpyDeviceToHost: return "D2H";
    case cudaMemcpyDeviceToDevice: return "D2D";
    default: return "default";
  }
}

// A copy into host memory: host to host is done; from the fake device it gives zeros.
bool on_host(const void* p) {
  const Block* b = find_block(p);
  return p && (!b || b->cls == 'p' || b->cls == 'r');
}
void host_side(void* dst, const void* src, size_t bytes) {
  if (!on_host(dst)) return;
  if (on_host(src)) std::memmove(dst, src, bytes);
  else std::memset(dst, 0, bytes);
}

std::string copy_access(void* dst, const void* src, size_t bytes) {
  std::string a;
  add_access(&a, access('r', src, bytes));
  add_access(&a, access('w', dst, bytes));
  return a;
}

int dev_of_stream(cudaStream_t s) {
  const Handle* h = handle(s);
  return h ? h->dev : t_dev;
}

}  // namespace

extern "C" {

// ---- runtime: devices and errors (queries are not recorded) ------------------------------
cudaError_t cudaGetDeviceCount(int* c) {
  *c = fake_gpus();
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = t_dev;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  std::lock_guard<std::mutex> g(g_mu);
  const bool ok = d >= 0 && d < fake_gpus() && d < kMaxDevices;
  Rec("cudaSetDevice").kv("to", d).ret(ok ? 0 : cudaErrorInvalidDevice).emit();
  if (!ok) return cudaErrorInvalidDevice;
  t_dev = d;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d < 0 || d >= fake_gpus()) return cudaErrorInvalidDevice;
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "Fake GPU %d (tests/cuda_trace, nothing executes)", d);
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->totalGlobalMem = size_t{80} << 30;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* b, int n, int d) {
  std::snprintf(b, static_cast<size_t>(n), "0000:%02x:00.0", d);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) {
  *v = 1000000;
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* f, size_t* t) {
  *f = size_t{70} << 30;
  *t = size_t{80} << 30;
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* ok, int a, int b) {
  std::lock_guard<std::mutex> g(g_mu);
  *ok = no_peer() ? 0 : 1;
  Rec("cudaDeviceCanAccessPeer").kv("a", a).kv("b", b).kv("ok", *ok).emit();
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int to, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  static std::map<std::pair<int, int>, bool> enabled;
  cudaError_t r = cudaSuccess;
  if (no_peer()) r = cudaErrorPeerAccessUnsupported;
  else if (enabled[{t_dev, to}]) r = cudaErrorPeerAccessAlreadyEnabled;
  else enabled[{t_dev, to}] = true;
  Rec("cudaDeviceEnablePeerAccess").kv("to", to).kv("flags", flags).ret(r).emit();
  return r;
}
cudaError_t cudaDeviceSynchronize() {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaDeviceSynchronize").emit();
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t e) {
  static thread_local char b[64];
  std::snprintf(b, sizeof b, "fake CUDA error %d (tests/cuda_trace shim)", static_cast<int>(e));
  return b;
}

// ---- memory --------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  static int calls = 0;
  const char* fail = std::getenv("TB_FAKE_MALLOC_FAIL_AT");
  if (fail && ++calls == std::atoi(fail)) {
    *p = nullptr;
    Rec("cudaMalloc").kv("bytes", static_cast<long long>(bytes)).ret(cudaErrorMemoryAllocation).emit();
    return cudaErrorMemoryAllocation;
  }
  Block b;
  b.cls = 'd';
  b.dev = t_dev;
  b.id = ++g_block_ids;
  b.bytes = bytes;
  b.base = kDevBase + uintptr_t(t_dev) * kDevSpan + g_bump[t_dev];
  g_bump[t_dev] += (bytes + 255) / 256 * 256 + 256;  // a gap: an overrun is not the next block
  g_blocks[b.base] = b;
  *p = reinterpret_cast<void*>(b.base);
  Rec("cudaMalloc").kv("bytes", static_cast<long long>(bytes)).kv("ptr", b.name()).kv("pdev", b.dev).emit();
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_blocks.find(reinterpret_cast<uintptr_t>(p));
  const bool ok = !p || (it != g_blocks.end() && it->second.cls == 'd');
  Rec("cudaFree").kv("ptr", ptr_name(p)).kv("pdev", ok && p ? it->second.dev : -1)
      .ret(ok ? 0 : cudaErrorInvalidValue).emit();
  if (p && ok) it->second.cls = 'x';
  return ok ? cudaSuccess : cudaErrorInvalidValue;
}
static cudaError_t pinned_alloc(const char* fn, void** p, size_t bytes, unsigned flags) {
  *p = std::calloc(1, bytes ? bytes : 1);
  Block b;
  b.cls = 'p';
  b.id = ++g_block_ids;
  b.bytes = bytes;
  b.base = reinterpret_cast<uintptr_t>(*p);
  g_blocks[b.base] = b;
  Rec(fn).kv("bytes", static_cast<long long>(bytes)).kv("flags", flags).kv("ptr", b.name()).emit();
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  return pinned_alloc("cudaMallocHost", p, bytes, 0);
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  return pinned_alloc("cudaHostAlloc", p, bytes, flags);
}
cudaError_t cudaFreeHost(void* p) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_blocks.find(reinterpret_cast<uintptr_t>(p));
  const bool ok = it != g_blocks.end() && it->second.cls == 'p';
  Rec("cudaFreeHost").kv("ptr", ptr_name(p)).ret(ok ? 0 : cudaErrorInvalidValue).emit();
  if (!ok) return cudaErrorInvalidValue;
  g_blocks.erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  const bool ok = find_block(p) == nullptr;
  if (ok) {
    Block b;
    b.cls = 'r';
    b.id = ++g_block_ids;
    b.bytes = bytes;
    b.base = reinterpret_cast<uintptr_t>(p);
    g_blocks[b.base] = b;
  }
  Rec("cudaHostRegister").kv("ptr", ptr_name(p)).kv("bytes", static_cast<long long>(bytes)).kv("flags", flags)
      .ret(ok ? 0 : cudaErrorHostMemoryAlreadyRegistered).emit();
  return ok ? cudaSuccess : cudaErrorHostMemoryAlreadyRegistered;
}
cudaError_t cudaHostUnregister(void* p) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_blocks.find(reinterpret_cast<uintptr_t>(p));
  const bool ok = it != g_blocks.end() && it->second.cls == 'r';
  Rec("cudaHostUnregister").kv("ptr", ptr_name(p)).ret(ok ? 0 : cudaErrorHostMemoryNotRegistered).emit();
  if (!ok) return cudaErrorHostMemoryNotRegistered;
  g_blocks.erase(it);
  return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) {
  std::lock_guard<std::mutex> g(g_mu);
  const Block* b = find_block(h);
  const bool ok = b && (b->cls == 'r' || b->cls == 'p');
  *d = ok ? h : nullptr;  // the mapped view: the same address (unified addressing)
  Rec("cudaHostGetDevicePointer").kv("ptr", ptr_name(h)).ret(ok ? 0 : cudaErrorInvalidValue).emit();
  return ok ? cudaSuccess : cudaErrorInvalidValue;
}

// ---- copies and memsets --------------------------------------------------------------------
cudaError_t cudaMemcpy(void* d, const void* s, size_t bytes, cudaMemcpyKind k) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemcpy").stream(nullptr).kv("dst", ptr_name(d)).kv("src", ptr_name(s))
      .kv("bytes", static_cast<long long>(bytes))
      .kv("kind", kind_name(k)).acc(copy_access(d, s, bytes)).emit();
  host_side(d, s, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t bytes, cudaMemcpyKind k, cudaStream_t st) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemcpyAsync").stream(st).kv("dst", ptr_name(d)).kv("src", ptr_name(s))
      .kv("bytes", static_cast<long long>(bytes))
      .kv("kind", kind_name(k)).acc(copy_access(d, s, bytes)).emit();
  if (!g_capture || g_capture != st) host_side(d, s, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeer(void* d, int dd, const void* s, int sd, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemcpyPeer").stream(nullptr).kv("dst", ptr_name(d)).kv("dstdev", dd).kv("src", ptr_name(s)).kv("srcdev", sd)
      .kv("bytes", static_cast<long long>(bytes)).acc(copy_access(d, s, bytes)).emit();
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void* d, int dd, const void* s, int sd, size_t bytes, cudaStream_t st) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemcpyPeerAsync").stream(st).kv("dst", ptr_name(d)).kv("dstdev", dd).kv("src", ptr_name(s))
      .kv("srcdev", sd).kv("bytes", static_cast<long long>(bytes)).acc(copy_access(d, s, bytes)).emit();
  return cudaSuccess;
}
cudaError_t cudaMemset(void* d, int v, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemset").stream(nullptr).kv("dst", ptr_name(d)).kv("value", v).kv("bytes", static_cast<long long>(bytes))
      .acc(access('w', d, bytes)).emit();
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* d, int v, size_t bytes, cudaStream_t st) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemsetAsync").stream(st).kv("dst", ptr_name(d)).kv("value", v).kv("bytes", static_cast<long long>(bytes))
      .acc(access('w', d, bytes)).emit();
  return cudaSuccess;
}

// ---- streams and events --------------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  std::lock_guard<std::mutex> g(g_mu);
  *s = static_cast<cudaStream_t>(make_handle('S', t_dev, 0));
  Rec("cudaStreamCreate").kv("flags", 0).stream(*s).emit();
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  *s = static_cast<cudaStream_t>(make_handle('S', t_dev, flags));
  Rec("cudaStreamCreateWithFlags").kv("flags", flags).stream(*s).emit();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaStreamDestroy").stream(s).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(s));
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaStreamSynchronize").stream(s).emit();
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaStreamQuery").stream(s).emit();
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaStreamWaitEvent").stream(s).event("event", e).kv("flags", flags).emit();
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  std::lock_guard<std::mutex> g(g_mu);
  *e = static_cast<cudaEvent_t>(make_handle('E', t_dev, 0));
  Rec("cudaEventCreate").event("event", *e).emit();
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  *e = static_cast<cudaEvent_t>(make_handle('E', t_dev, flags));
  Rec("cudaEventCreateWithFlags").event("event", *e).emit();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventDestroy").event("event", e).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(e));
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventRecord").event("event", e).stream(s).emit();
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {  // every event is complete: nothing runs
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventQuery").event("event", e).emit();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventSynchronize").event("event", e).emit();
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventElapsedTime").event("event", a).event("end", b).emit();
  *ms = 1.0f;  // meaningless
  return cudaSuccess;
}

// ---- graphs ---------------------------------------------------------------------------------
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  std::lock_guard<std::mutex> g(g_mu);
  const bool ok = g_capture == nullptr;
  Rec("cudaStreamBeginCapture").stream(s).kv("mode", static_cast<int>(mode)).ret(ok ? 0 : cudaErrorIllegalState).emit();
  if (!ok) return cudaErrorIllegalState;
  g_capture = s;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  std::lock_guard<std::mutex> g(g_mu);
  const bool ok = g_capture == s;
  *graph = ok ? static_cast<cudaGraph_t>(make_handle('G', t_dev)) : nullptr;
  Rec("cudaStreamEndCapture").stream(s).kv("graph", handle_name(*graph)).ret(ok ? 0 : cudaErrorIllegalState).emit();
  if (ok) g_capture = nullptr;
  return ok ? cudaSuccess : cudaErrorIllegalState;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* x, cudaGraph_t graph, unsigned long long flags) {
  std::lock_guard<std::mutex> g(g_mu);
  *x = static_cast<cudaGraphExec_t>(make_handle('X', t_dev));
  Rec("cudaGraphInstantiate").kv("graph", handle_name(graph)).kv("exec", handle_name(*x))
      .kv("flags", static_cast<long long>(flags)).emit();
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaGraphLaunch").kv("exec", handle_name(x)).stream(s).emit();
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaGraphDestroy").kv("graph", handle_name(graph)).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(graph));
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaGraphExecDestroy").kv("exec", handle_name(x)).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(x));
  return cudaSuccess;
}

// ---- kernel registration and launch (what nvcc's host stubs call) ---------------------------
namespace {
std::map<const void*, std::string> g_kernels;  // host stub -> mangled device name
thread_local dim3 t_grid, t_block;
thread_local size_t t_shmem = 0;
thread_local void* t_stream = nullptr;

// Top-level comma-separated parameter types of a demangled signature.
std::vector<std::string> param_types(const std::string& sig) {
  std::vector<std::string> out;
  const size_t open = sig.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::string cur;
  for (size_t i = open + 1; i < sig.size(); ++i) {
    const char c = sig[i];
    if ((c == ',' || c == ')') && depth == 0) {
      while (!cur.empty() && cur.front() == ' ') cur.erase(cur.begin());
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (c == ')') break;
      continue;
    }
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    cur += c;
  }
  return out;
}

std::string scalar(const std::string& t, const void* v) {
  if (t == "float") return std::to_string(*static_cast<const float*>(v));
  if (t == "double") return std::to_string(*static_cast<const double*>(v));
  if (t == "bool") return std::to_string(int(*static_cast<const bool*>(v)));
  if (t == "int") return std::to_string(*static_cast<const int*>(v));
  if (t == "unsigned int") return std::to_string(*static_cast<const unsigned*>(v));
  if (t == "long" || t == "long long") return std::to_string(*static_cast<const long long*>(v));
  if (t == "unsigned long" || t == "unsigned long long") {
    return std::to_string(*static_cast<const unsigned long long*>(v));
  }
  return "?";
}
}  // namespace

void** __cudaRegisterFatBinary(void*) {
  static void* h = nullptr;
  return &h;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  std::lock_guard<std::mutex> g(g_mu);
  g_kernels[host_fun] = device_name;
}
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st* s) {
  t_grid = grid;
  t_block = block;
  t_shmem = shmem;
  t_stream = s;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, void* s) {
  *grid = t_grid;
  *block = t_block;
  *shmem = t_shmem;
  *static_cast<void**>(s) = t_stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* fun) {
  *k = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fun));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  auto it = g_kernels.find(reinterpret_cast<const void*>(k));
  const std::string mangled = it == g_kernels.end() ? "unknown" : it->second;
  int st = 0;
  char* dm = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &st);
  const std::string sig = dm ? dm : mangled;
  std::free(dm);
  std::string name = sig.substr(0, sig.find('('));
  if (name.rfind("void ", 0) == 0) name = name.substr(5);
  for (size_t at; (at = name.find(", ")) != std::string::npos;) name.erase(at + 1, 1);
  for (char& c : name) c = c == ' ' ? '_' : c;
  std::string shown, acc;
  const std::vector<std::string> types = param_types(sig);
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& t = types[i];
    const size_t star = t.rfind('*');
    std::string v;
    if (star != std::string::npos) {
      const void* p = *static_cast<void* const*>(args[i]);
      const bool read_only = t.substr(0, star).find("const") != std::string::npos;
      v = (read_only ? "r:" : "w:") + ptr_name(p);
      add_access(&acc, access(read_only ? 'r' : 'w', p, 1));
    } else {
      v = scalar(t, args[i]);
    }
    if (i) shown += ',';
    shown += v;
  }
  Rec("launch").kv("kernel", name).stream(s).kv("grid", grid.x).kv("block", block.x)
      .kv("shmem", static_cast<long long>(shmem))
      .kv("args", shown).acc(acc).emit();
  return cudaSuccess;
}

// ---- cuBLAS ---------------------------------------------------------------------------------
cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  std::lock_guard<std::mutex> g(g_mu);
  *h = static_cast<cublasHandle_t>(make_handle('B', t_dev));
  Rec("cublasCreate").blas(*h).emit();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cublasDestroy").blas(h).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(h));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cublasSetMathMode").blas(h).kv("mode", static_cast<int>(m)).emit();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cublasSetPointerMode").blas(h).kv("mode", static_cast<int>(m)).emit();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Handle* b = handle(h);
  if (b) {
    b->stream = s;
    b->workspace = nullptr;  // as cuBLAS: setting a stream resets the workspace to the default pool
    b->workspace_bytes = 0;
  }
  Rec("cublasSetStream").blas(h).stream(s).emit();
  return b ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* b = handle(h);
  *s = b ? static_cast<cudaStream_t>(b->stream) : nullptr;
  return b ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* w, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  Handle* b = handle(h);
  if (b) {
    b->workspace = w;
    b->workspace_bytes = bytes;
  }
  Rec("cublasSetWorkspace").blas(h).kv("ptr", ptr_name(w)).kv("bytes", static_cast<long long>(bytes)).emit();
  return b ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                              float* c, int ldc) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* hb = handle(h);
  // Column-major extents: a rows x cols matrix with leading dimension ld spans (cols - 1) * ld + rows floats.
  auto span = [](long long rows, long long cols, long long ld) {
    return rows > 0 && cols > 0 ? static_cast<size_t>(((cols - 1) * ld + rows) * 4) : size_t{0};
  };
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  std::string acc;
  add_access(&acc, access('r', a, na ? span(m, k, lda) : span(k, m, lda)));
  add_access(&acc, access('r', b, nb ? span(k, n, ldb) : span(n, k, ldb)));
  add_access(&acc, access('w', c, span(m, n, ldc)));
  if (hb && hb->workspace) add_access(&acc, access('w', hb->workspace, hb->workspace_bytes));
  Rec("cublasSgemm").blas(h).stream(hb ? static_cast<cudaStream_t>(hb->stream) : nullptr)
      .kv("ws", hb && hb->workspace ? ptr_name(hb->workspace) : "default").kv("ta", int(ta)).kv("tb", int(tb))
      .kv("m", m).kv("n", n).kv("k", k).kv("alpha", std::to_string(*alpha)).kv("a", ptr_name(a)).kv("lda", lda)
      .kv("b", ptr_name(b)).kv("ldb", ldb).kv("beta", std::to_string(*beta)).kv("c", ptr_name(c)).kv("ldc", ldc)
      .acc(acc).emit();
  return hb ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}
const char* cublasGetStatusString(cublasStatus_t) { return "fake cuBLAS status (tests/cuda_trace shim)"; }

// ---- NCCL -----------------------------------------------------------------------------------
#if defined(TB_TRACE_NCCL)
namespace {
int g_group = 0;
size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 4;
  }
}
Rec& comm_fields(Rec& r, ncclComm_t c, cudaStream_t s) {
  const Handle* h = handle(c);
  return r.kv("comm", handle_name(c)).kv("cdev", h ? h->dev : -1).kv("rank", h ? h->rank : -1).stream(s)
      .kv("group", g_group);
}
int comm_rank(ncclComm_t c) {
  const Handle* h = handle(c);
  return h ? h->rank : -1;
}
}  // namespace

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::lock_guard<std::mutex> g(g_mu);
  std::memset(id, 0, sizeof *id);
  std::snprintf(id->internal, sizeof id->internal, "tb-cuda-trace-fake-nccl-id");
  Rec("ncclGetUniqueId").emit();
  return ncclSuccess;
}
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int n, const int* devs) {
  std::lock_guard<std::mutex> g(g_mu);
  std::string d, names;
  for (int i = 0; i < n; ++i) {
    const int dev = devs ? devs[i] : i;
    comms[i] = static_cast<ncclComm_t>(make_handle('N', dev));
    handle(comms[i])->rank = i;
    if (i) {
      d += ',';
      names += ',';
    }
    d += std::to_string(dev);
    names += handle_name(comms[i]);
  }
  Rec("ncclCommInitAll").kv("ndev", n).kv("devs", d).kv("comms", names).emit();
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  std::lock_guard<std::mutex> g(g_mu);
  *comm = static_cast<ncclComm_t>(make_handle('N', t_dev));
  handle(*comm)->rank = rank;
  Rec("ncclCommInitRank").kv("nranks", nranks).kv("rank", rank).kv("comm", handle_name(*comm)).kv("cdev", t_dev).emit();
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t* config) {
  std::lock_guard<std::mutex> g(g_mu);
  *comm = static_cast<ncclComm_t>(make_handle('N', t_dev));
  handle(*comm)->rank = rank;
  Rec("ncclCommInitRankConfig").kv("nranks", nranks).kv("rank", rank).kv("blocking", config ? config->blocking : -1)
      .kv("comm", handle_name(*comm)).kv("cdev", t_dev).emit();
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  *state = ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* h = handle(c);
  Rec("ncclCommDestroy").kv("comm", handle_name(c)).kv("cdev", h ? h->dev : -1).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(c));
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t c) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* h = handle(c);
  Rec("ncclCommAbort").kv("comm", handle_name(c)).kv("cdev", h ? h->dev : -1).emit();
  g_handles.erase(reinterpret_cast<uintptr_t>(c));
  return ncclSuccess;
}
ncclResult_t ncclGroupStart() {
  std::lock_guard<std::mutex> g(g_mu);
  ++g_group;
  Rec("ncclGroupStart").kv("group", g_group).emit();
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("ncclGroupEnd").kv("group", g_group).emit();
  if (g_group > 0) --g_group;
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t t, int root, ncclComm_t c,
                           cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  const size_t bytes = count * type_bytes(t);
  // The root sends (and copies into recv when out of place); the others only receive.
  std::string acc;
  if (comm_rank(c) == root) {
    add_access(&acc, access('r', send, bytes));
    if (recv != send) add_access(&acc, access('w', recv, bytes));
  } else {
    add_access(&acc, access('w', recv, bytes));
  }
  Rec r("ncclBroadcast");
  comm_fields(r, c, s).kv("send", ptr_name(send)).kv("recv", ptr_name(recv)).kv("count", static_cast<long long>(count))
      .kv("root", root).acc(acc).emit();
  return ncclSuccess;
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t c, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  const size_t bytes = count * type_bytes(t);
  // Every rank sends; only the root's recv is written.
  std::string acc;
  add_access(&acc, access('r', send, bytes));
  if (comm_rank(c) == root) add_access(&acc, access('w', recv, bytes));
  Rec r("ncclReduce");
  comm_fields(r, c, s).kv("send", ptr_name(send)).kv("recv", ptr_name(recv)).kv("count", static_cast<long long>(count))
      .kv("op", static_cast<int>(op)).kv("root", root).acc(acc).emit();
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  const size_t bytes = count * type_bytes(t);
  Rec r("ncclAllReduce");
  comm_fields(r, c, s).kv("send", ptr_name(send)).kv("recv", ptr_name(recv)).kv("count", static_cast<long long>(count))
      .kv("op", static_cast<int>(op)).acc(copy_access(recv, send, bytes)).emit();
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t) { return "fake NCCL error (tests/cuda_trace shim)"; }
#endif  // TB_TRACE_NCCL

}  // extern "C"
