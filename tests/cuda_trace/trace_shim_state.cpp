// tests/cuda_trace/trace_shim_state.cpp — the trace shim's shared state (current
// device, memory blocks, handles) and where its records go; see trace_shim_state.h.
#include "trace_shim_state.h"

#include <cstdlib>

namespace tb_trace_shim {

// ---- process state -----------------------------------------------------------------
std::mutex g_mu;
thread_local int t_dev = 0;
thread_local int t_tid = -1;
int g_threads = 0;
long g_seq = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

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
std::map<uintptr_t, Block> g_blocks;
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

std::string copy_access(void* dst, const void* src, size_t bytes) {
  std::string a;
  add_access(&a, access('r', src, bytes));
  add_access(&a, access('w', dst, bytes));
  return a;
}

// ---- handles -----------------------------------------------------------------------
std::map<uintptr_t, Handle> g_handles;
int g_handle_ids = 0;
void* g_capture = nullptr;

void* make_handle(char kind, int dev, unsigned flags) {
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

}  // namespace tb_trace_shim
