// tests/cuda_trace/trace_shim_runtime.cpp — the trace shim's fake CUDA runtime:
// devices and errors, memory, copies and memsets, streams and events, graphs (the
// shim, its trace format and knobs: trace_shim_state.h). Queries are answered without
// a record, except cudaMemGetInfo (it needs a context); every other call is recorded.
// Nothing executes unless TB_FAKE_EXECUTE=1 (trace_shim_exec.h): then memory is real
// and copies, memsets and graphs run.
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "trace_shim_exec.h"
#include "trace_shim_state.h"

using namespace tb_trace_shim;

namespace {

std::map<const void*, long> g_event_seq;  // event -> n= of its last cudaEventRecord (caller holds g_mu)

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
// Executing, every copy is done (device memory is real).
bool on_host(const void* p) {
  const Block* b = find_block(p);
  return p && (!b || b->cls == 'p' || b->cls == 'r');
}
void host_side(void* dst, const void* src, size_t bytes) {
  if (executing()) {
    drain();  // a synchronous copy waits for all work issued before it
    std::memmove(dst, src, bytes);
    return;
  }
  if (!on_host(dst)) return;
  if (on_host(src)) std::memmove(dst, src, bytes);
  else std::memset(dst, 0, bytes);
}

}  // namespace

extern "C" {

// ---- runtime: devices and errors (queries are not recorded) ------------------------------
// A driver older than the runtime (TB_FAKE_DRIVER_VERSION), or none: CUDA answers every
// device query with cudaErrorInsufficientDriver and counts no device.
cudaError_t cudaGetDeviceCount(int* c) {
  *c = driver_usable() ? fake_gpus() : 0;
  return driver_usable() ? cudaSuccess : cudaErrorInsufficientDriver;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = fake_driver_version();
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
  touch_context(d);  // since CUDA 12 cudaSetDevice creates the device's primary context
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d < 0 || d >= fake_gpus()) return cudaErrorInvalidDevice;
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, executing() ? "Fake GPU %d (tests/cuda_trace, executed on the host)"
                                                     : "Fake GPU %d (tests/cuda_trace, nothing executes)", d);
  p->major = fake_cc() / 10;
  p->minor = fake_cc() % 10;
  p->multiProcessorCount = 132;
  p->totalGlobalMem = size_t{80} << 30;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* b, int n, int d) {
  // TB_FAKE_BIND_PER_RANK: each MPI rank sees its own GPUs (one per task, as srun
  // --gpus-per-task binds them): device d of node-local rank L is bus d + L.
  int bus = d;
  if (std::getenv("TB_FAKE_BIND_PER_RANK")) {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    bus += local ? std::atoi(local) : 0;
  }
  std::snprintf(b, static_cast<size_t>(n), "0000:%02x:00.0", bus);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  if (a == cudaDevAttrComputeCapabilityMajor) *v = fake_cc() / 10;
  else if (a == cudaDevAttrComputeCapabilityMinor) *v = fake_cc() % 10;
  else *v = 1000000;
  return cudaSuccess;
}
// Recorded, unlike the other queries: it needs a context on the current device (the real
// runtime creates one), so a call here says that device was touched.
cudaError_t cudaMemGetInfo(size_t* f, size_t* t) {
  std::lock_guard<std::mutex> g(g_mu);
  touch_context(t_dev);
  *f = fake_free(t_dev);
  *t = fake_total();
  Rec("cudaMemGetInfo").kv("free", static_cast<long long>(*f)).emit();
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
// The measured ceilings release each GPU's primary context with it (harness/ceilings_cuda.cpp).
cudaError_t cudaDeviceReset() {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaDeviceReset").emit();
  if (executing()) drain();
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaDeviceSynchronize").emit();
  if (executing()) drain();
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return std::exchange(t_last_error, cudaSuccess); }
cudaError_t cudaPeekAtLastError() { return t_last_error; }
const char* cudaGetErrorString(cudaError_t e) {
  static thread_local char b[96];
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
    t_last_error = cudaErrorMemoryAllocation;
    Rec("cudaMalloc").kv("bytes", static_cast<long long>(bytes)).ret(cudaErrorMemoryAllocation).emit();
    return cudaErrorMemoryAllocation;
  }
  Block b;
  b.cls = 'd';
  b.dev = t_dev;
  b.bytes = bytes;
  if (!charge(t_dev, bytes)) {
    *p = nullptr;
    t_last_error = cudaErrorMemoryAllocation;
    Rec("cudaMalloc").kv("bytes", static_cast<long long>(bytes)).ret(cudaErrorMemoryAllocation).emit();
    return cudaErrorMemoryAllocation;
  }
  if (!place_device_block(t_dev, bytes, &b.base, &b.region, &b.region_bytes)) {
    release(t_dev, bytes);
    *p = nullptr;
    Rec("cudaMalloc").kv("bytes", static_cast<long long>(bytes)).ret(cudaErrorMemoryAllocation).emit();
    return cudaErrorMemoryAllocation;
  }
  b.id = ++g_block_ids;
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
  if (p && ok) {
    if (executing()) drain();  // cudaFree synchronises
    it->second.cls = 'x';
    release(it->second.dev, it->second.bytes);
    release_device_block(it->second.region, it->second.region_bytes);
  }
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
  if (p == nullptr || bytes == 0) {  // as the real runtime: nothing to pin is an error
    Rec("cudaHostRegister").kv("ptr", ptr_name(p)).kv("bytes", static_cast<long long>(bytes)).kv("flags", flags)
        .ret(cudaErrorInvalidValue).emit();
    return cudaErrorInvalidValue;
  }
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
  if (executing()) submit(st, [d, s, bytes] { std::memmove(d, s, bytes); });
  else if (!g_capture || g_capture != st) host_side(d, s, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeer(void* d, int dd, const void* s, int sd, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemcpyPeer").stream(nullptr).kv("dst", ptr_name(d)).kv("dstdev", dd).kv("src", ptr_name(s)).kv("srcdev", sd)
      .kv("bytes", static_cast<long long>(bytes)).acc(copy_access(d, s, bytes)).emit();
  if (executing()) {
    drain();
    std::memmove(d, s, bytes);
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void* d, int dd, const void* s, int sd, size_t bytes, cudaStream_t st) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemcpyPeerAsync").stream(st).kv("dst", ptr_name(d)).kv("dstdev", dd).kv("src", ptr_name(s))
      .kv("srcdev", sd).kv("bytes", static_cast<long long>(bytes)).acc(copy_access(d, s, bytes)).emit();
  submit(st, [d, s, bytes] { std::memmove(d, s, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* d, int v, size_t bytes) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemset").stream(nullptr).kv("dst", ptr_name(d)).kv("value", v).kv("bytes", static_cast<long long>(bytes))
      .acc(access('w', d, bytes)).emit();
  if (executing()) {
    drain();
    std::memset(d, v, bytes);
  }
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* d, int v, size_t bytes, cudaStream_t st) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaMemsetAsync").stream(st).kv("dst", ptr_name(d)).kv("value", v).kv("bytes", static_cast<long long>(bytes))
      .acc(access('w', d, bytes)).emit();
  submit(st, [d, v, bytes] { std::memset(d, v, bytes); });
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
  if (executing()) drain();
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaStreamQuery").stream(s).emit();
  return work_pending() ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaStreamWaitEvent").stream(s).event("event", e).kv("flags", flags).emit();
  exec_stream_waits(s, e);
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
// The runner's stopwatch boundaries (harness/trace_mark.h looks this up with dlsym).
void tb_trace_mark(const char* what) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("mark").kv("what", what ? what : "").emit();
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  g_event_seq[e] = g_seq;  // the record's n= (TB_FAKE_EVENT_CLOCK=seq)
  Rec("cudaEventRecord").event("event", e).stream(s).emit();
  exec_event_recorded(e, s);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {  // complete, unless a collective awaits its peers
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventQuery").event("event", e).emit();
  return work_pending() ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventSynchronize").event("event", e).emit();
  if (executing()) drain();
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaEventElapsedTime").event("event", a).event("end", b).emit();
  if (executing()) drain();
  // Meaningless, unless a test scripts it: TB_FAKE_ELAPSED_MS (the measured GPU
  // ceilings' arithmetic), or TB_FAKE_EVENT_CLOCK=seq, a fake clock that ticks 1 us per
  // recorded call — the n= of the end's last record minus the start's — so a test can
  // tell which intervals a sum covers. Otherwise 1 ms.
  static const bool seq_clock = [] {
    const char* v = std::getenv("TB_FAKE_EVENT_CLOCK");
    return v && std::string(v) == "seq";
  }();
  const char* scripted = std::getenv("TB_FAKE_ELAPSED_MS");
  if (seq_clock) {
    *ms = static_cast<float>(g_event_seq[b] - g_event_seq[a]) * 1e-3f;
  } else {
    *ms = scripted ? std::strtof(scripted, nullptr) : 1.0f;
  }
  return cudaSuccess;
}

// ---- graphs ---------------------------------------------------------------------------------
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  std::lock_guard<std::mutex> g(g_mu);
  const bool ok = g_capture == nullptr;
  Rec("cudaStreamBeginCapture").stream(s).kv("mode", static_cast<int>(mode)).ret(ok ? 0 : cudaErrorIllegalState).emit();
  if (!ok) return cudaErrorIllegalState;
  g_capture = s;
  exec_begin_capture(s);
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  std::lock_guard<std::mutex> g(g_mu);
  const bool ok = g_capture == s;
  *graph = ok ? static_cast<cudaGraph_t>(make_handle('G', t_dev)) : nullptr;
  Rec("cudaStreamEndCapture").stream(s).kv("graph", handle_name(*graph)).ret(ok ? 0 : cudaErrorIllegalState).emit();
  if (ok) {
    g_capture = nullptr;
    exec_end_capture(*graph);
  }
  return ok ? cudaSuccess : cudaErrorIllegalState;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* x, cudaGraph_t graph, unsigned long long flags) {
  std::lock_guard<std::mutex> g(g_mu);
  *x = static_cast<cudaGraphExec_t>(make_handle('X', t_dev));
  Rec("cudaGraphInstantiate").kv("graph", handle_name(graph)).kv("exec", handle_name(*x))
      .kv("flags", static_cast<long long>(flags)).emit();
  exec_instantiate(graph, *x);
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaGraphLaunch").kv("exec", handle_name(x)).stream(s).emit();
  exec_launch_graph(x, s);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaGraphDestroy").kv("graph", handle_name(graph)).emit();
  exec_forget(graph);
  g_handles.erase(reinterpret_cast<uintptr_t>(graph));
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  std::lock_guard<std::mutex> g(g_mu);
  Rec("cudaGraphExecDestroy").kv("exec", handle_name(x)).emit();
  exec_forget(x);
  g_handles.erase(reinterpret_cast<uintptr_t>(x));
  return cudaSuccess;
}

}  // extern "C"
