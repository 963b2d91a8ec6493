// tests/cuda_trace/trace_shim_exec.cpp — execute mode: device memory backing, running or
// capturing stream work, graph replay (what is and is not modelled: trace_shim_exec.h).
#include "trace_shim_exec.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "trace_shim_state.h"

namespace tb_trace_shim {

bool executing() {
  static const bool on = [] {
    const char* e = std::getenv("TB_FAKE_EXECUTE");
    return e != nullptr && e[0] == '1';
  }();
  return on;
}

void exec_unsupported(const char* what) {
  std::fprintf(stderr, "tb cuda_trace shim (TB_FAKE_EXECUTE): unsupported: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

// ---- device memory ---------------------------------------------------------------------
bool place_device_block(int dev, size_t bytes, uintptr_t* base, uintptr_t* region, size_t* region_bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (bytes + 255) / 256 * 256;       // cudaMalloc's 256-byte alignment
  const size_t span = (rounded + page - 1) / page * page;  // whole pages
  *region = kDevBase + uintptr_t(dev) * kDevSpan + g_bump[dev];
  *region_bytes = span;
  *base = *region + (span - rounded);  // the block ends where the region ends
  g_bump[dev] += span + page;          // + an unmapped guard page
  if (!executing() || span == 0) return true;
  void* at = mmap(reinterpret_cast<void*>(*region), span, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
  if (at == MAP_FAILED) return false;
  if (at != reinterpret_cast<void*>(*region)) {  // an old kernel that ignores NOREPLACE
    munmap(at, span);
    return false;
  }
  return true;
}

void release_device_block(uintptr_t region, size_t region_bytes) {
  if (executing() && region_bytes != 0) munmap(reinterpret_cast<void*>(region), region_bytes);
}

// ---- work, capture, graphs -----------------------------------------------------------------
namespace {
using Graph = std::vector<Work>;
std::set<const void*> g_captured_streams;   // the capture origin and the streams joined to it
std::set<const void*> g_captured_events;    // events recorded inside the capture
std::shared_ptr<Graph> g_building;          // the graph being captured
std::map<const void*, std::shared_ptr<Graph>> g_graphs;  // cudaGraph_t and cudaGraphExec_t
}  // namespace

bool stream_captured(const void* stream) { return g_building && g_captured_streams.count(stream) != 0; }

namespace {
std::deque<Work> g_deferred;
bool g_draining = false;
}  // namespace

void defer(Work finish) { g_deferred.push_back(std::move(finish)); }

bool work_pending() { return !g_deferred.empty(); }

void drain() {
  if (g_draining) return;  // another thread is draining (only one thread issues work)
  g_draining = true;
  while (!g_deferred.empty()) {
    g_deferred.front()();  // may release and re-take g_mu while it waits
    g_deferred.pop_front();
  }
  g_draining = false;
}

void submit(const void* stream, Work work) {
  if (!executing()) return;
  drain();
  if (stream_captured(stream)) {
    g_building->push_back(std::move(work));
    return;
  }
  work();
}

void exec_begin_capture(const void* stream) {
  if (!executing()) return;
  g_building = std::make_shared<Graph>();
  g_captured_streams = {stream};
  g_captured_events.clear();
}

void exec_end_capture(const void* graph) {
  if (!executing()) return;
  g_graphs[graph] = g_building ? g_building : std::make_shared<Graph>();
  g_building.reset();
  g_captured_streams.clear();
  g_captured_events.clear();
}

void exec_event_recorded(const void* event, const void* stream) {
  if (!executing()) return;
  if (stream_captured(stream)) {
    g_captured_events.insert(event);
  } else {
    g_captured_events.erase(event);
  }
}

void exec_stream_waits(const void* stream, const void* event) {
  if (executing() && g_building && g_captured_events.count(event) != 0) g_captured_streams.insert(stream);
}

void exec_instantiate(const void* graph, const void* exec) {
  if (!executing()) return;
  auto it = g_graphs.find(graph);
  if (it == g_graphs.end()) exec_unsupported("cudaGraphInstantiate of a graph this shim did not capture");
  g_graphs[exec] = std::make_shared<Graph>(*it->second);  // an exec is a snapshot of the graph
}

void exec_launch_graph(const void* exec, const void* stream) {
  if (!executing()) return;
  auto it = g_graphs.find(exec);
  if (it == g_graphs.end()) exec_unsupported("cudaGraphLaunch of an unknown graph exec");
  const std::shared_ptr<Graph> g = it->second;
  submit(stream, [g] {
    for (const Work& w : *g) w();
  });
}

void exec_forget(const void* graph_or_exec) {
  if (executing()) g_graphs.erase(graph_or_exec);
}

}  // namespace tb_trace_shim
