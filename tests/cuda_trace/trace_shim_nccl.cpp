// tests/cuda_trace/trace_shim_nccl.cpp — the trace shim's fake NCCL: version, unique id,
// communicator set-up and teardown, groups, broadcast, reduce and all-reduce, recorded
// with what each rank reads and writes (trace_shim_state.h). No data moves, unless
// TB_FAKE_EXECUTE=1: then the collectives run (trace_shim_exec_nccl.cpp).
// Built only where NCCL was found (tests/CMakeLists.txt, with TB_TRACE_NCCL).
#if !defined(TB_TRACE_NCCL)
#error "trace_shim_nccl.cpp is built only where NCCL was found, with TB_TRACE_NCCL (tests/CMakeLists.txt)"
#endif

#include <nccl.h>

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "trace_shim_exec.h"
#include "trace_shim_state.h"

using namespace tb_trace_shim;

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
int reduction(ncclRedOp_t op) { return op == ncclSum ? 0 : op == ncclAvg ? 1 : -1; }
// A communicator's buffers on its device (TB_FAKE_NCCL_MIB): where they do not fit NCCL
// fails with ncclUnhandledCudaError, the CUDA error left for cudaGetLastError.
bool charge_comm(int dev, ncclComm_t* comm) {
  const size_t bytes = mib_knob("TB_FAKE_NCCL_MIB", 0);
  if (!charge(dev, bytes)) {
    *comm = nullptr;
    t_last_error = cudaErrorMemoryAllocation;
    return false;
  }
  *comm = static_cast<ncclComm_t>(make_handle('N', dev));
  handle(*comm)->charged = bytes;
  return true;
}
int comm_rank(ncclComm_t c) {
  const Handle* h = handle(c);
  return h ? h->rank : -1;
}

}  // namespace

extern "C" {

// A query (no record): the version of the NCCL header the shim was built with.
ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::lock_guard<std::mutex> g(g_mu);
  std::memset(id, 0, sizeof *id);
  if (executing()) {  // names the job's exchange folder (trace_shim_exec_nccl.cpp): unique per job
    std::snprintf(id->internal, sizeof id->internal, "tb-fake-nccl-%ld-%lld", static_cast<long>(getpid()),
                  static_cast<long long>(std::chrono::steady_clock::now().time_since_epoch().count()));
  } else {
    std::snprintf(id->internal, sizeof id->internal, "tb-cuda-trace-fake-nccl-id");
  }
  Rec("ncclGetUniqueId").emit();
  return ncclSuccess;
}
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int n, const int* devs) {
  std::lock_guard<std::mutex> g(g_mu);
  std::string d, names;
  for (int i = 0; i < n; ++i) {
    const int dev = devs ? devs[i] : i;
    if (!charge_comm(dev, &comms[i])) {
      for (int j = 0; j < i; ++j) {  // as NCCL: nothing is left of a failed ncclCommInitAll
        release(handle(comms[j])->dev, handle(comms[j])->charged);
        g_handles.erase(reinterpret_cast<uintptr_t>(comms[j]));
        comms[j] = nullptr;
      }
      Rec("ncclCommInitAll").kv("ndev", n).kv("failed_on", dev).ret(ncclUnhandledCudaError).emit();
      return ncclUnhandledCudaError;
    }
    handle(comms[i])->rank = i;
    if (i) {
      d += ',';
      names += ',';
    }
    d += std::to_string(dev);
    names += handle_name(comms[i]);
  }
  Rec("ncclCommInitAll").kv("ndev", n).kv("devs", d).kv("comms", names).emit();
  exec_comm_init_all(reinterpret_cast<void* const*>(comms), n);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  std::lock_guard<std::mutex> g(g_mu);
  if (!charge_comm(t_dev, comm)) {
    Rec("ncclCommInitRank").kv("nranks", nranks).kv("rank", rank).ret(ncclUnhandledCudaError).emit();
    return ncclUnhandledCudaError;
  }
  handle(*comm)->rank = rank;
  Rec("ncclCommInitRank").kv("nranks", nranks).kv("rank", rank).kv("comm", handle_name(*comm)).kv("cdev", t_dev).emit();
  exec_comm_init_rank(*comm, id.internal, rank, nranks);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  std::lock_guard<std::mutex> g(g_mu);
  // flags bit 0: non-blocking (its finalize answers ncclInProgress); bit 1: finalizing.
  if (!charge_comm(t_dev, comm)) {
    Rec("ncclCommInitRankConfig").kv("nranks", nranks).kv("rank", rank).ret(ncclUnhandledCudaError).emit();
    return ncclUnhandledCudaError;
  }
  handle(*comm)->flags = config && config->blocking == 0 ? 1u : 0u;
  handle(*comm)->rank = rank;
  Rec("ncclCommInitRankConfig").kv("nranks", nranks).kv("rank", rank).kv("blocking", config ? config->blocking : -1)
      .kv("comm", handle_name(*comm)).kv("cdev", t_dev).emit();
  exec_comm_init_rank(*comm, id.internal, rank, nranks);
  return ncclSuccess;
}
// A finalizing non-blocking communicator settles at the first query, or never with
// TB_FAKE_NCCL_FINALIZE_STUCK=1 (a peer gone: the caller's deadline must abort it).
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* state) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* h = handle(c);
  const bool finalizing = h && (h->flags & 2u);
  *state = finalizing && std::getenv("TB_FAKE_NCCL_FINALIZE_STUCK") ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* h = handle(c);
  Rec("ncclCommDestroy").kv("comm", handle_name(c)).kv("cdev", h ? h->dev : -1).emit();
  if (h) release(h->dev, h->charged);
  exec_comm_destroy(c);
  g_handles.erase(reinterpret_cast<uintptr_t>(c));
  return ncclSuccess;
}
ncclResult_t ncclCommFinalize(ncclComm_t c) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* h = handle(c);
  if (std::getenv("TB_FAKE_NCCL_FINALIZE_STUCK")) {  // the fault's time, as harness/ddp_plan.h announces one
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    std::fprintf(stderr, "trainbench: fault injected at %lld.%06ld (ncclCommFinalize never settles)\n",
                 static_cast<long long>(now.tv_sec), now.tv_nsec / 1000);
    std::fflush(stderr);
  }
  Rec("ncclCommFinalize").kv("comm", handle_name(c)).kv("cdev", h ? h->dev : -1).emit();
  if (!h) return ncclInvalidArgument;
  if (!(h->flags & 1u)) return ncclSuccess;  // blocking: done
  handle(c)->flags |= 2u;
  return ncclInProgress;  // non-blocking: poll ncclCommGetAsyncError until it settles
}
ncclResult_t ncclCommAbort(ncclComm_t c) {
  std::lock_guard<std::mutex> g(g_mu);
  const Handle* h = handle(c);
  Rec("ncclCommAbort").kv("comm", handle_name(c)).kv("cdev", h ? h->dev : -1).emit();
  if (h) release(h->dev, h->charged);
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
  exec_collective(c, s, {'b', send, recv, count * type_bytes(t), t == ncclFloat, 0, root});
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
  exec_collective(c, s, {'r', send, recv, count * type_bytes(t), t == ncclFloat, reduction(op), root});
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t s) {
  std::lock_guard<std::mutex> g(g_mu);
  const size_t bytes = count * type_bytes(t);
  Rec r("ncclAllReduce");
  comm_fields(r, c, s).kv("send", ptr_name(send)).kv("recv", ptr_name(recv)).kv("count", static_cast<long long>(count))
      .kv("op", static_cast<int>(op)).acc(copy_access(recv, send, bytes)).emit();
  exec_collective(c, s, {'a', send, recv, count * type_bytes(t), t == ncclFloat, reduction(op), 0});
  return ncclSuccess;
}
const char* ncclGetErrorString(ncclResult_t) { return "fake NCCL error (tests/cuda_trace shim)"; }

}  // extern "C"
