// tests/cuda_trace/trace_shim_exec_nccl.cpp — execute mode's NCCL: a collective runs
// once every rank of its communicator has issued it (trace_shim_exec.h). Every rank
// reduces the same contributions in rank order in float, so all ranks get the same bits.
//  - Ranks of one process (ncclCommInitAll, cuda-dp): calls queue per rank in memory.
//  - Ranks in separate processes (ncclCommInitRank*, cuda-ddp under mpirun): each rank
//    writes its contribution to the k-th collective as file K.RANK (written under a
//    temporary name, then renamed, so a reader never sees half a file) in
//    $TMPDIR/<unique id>/ when it issues the call; as on a GPU the host goes on, and the
//    next work (the next collective too) or synchronisation waits for every other rank's
//    file (defer/drain), then deletes this rank's file of collective K-1 (every rank has
//    read it by the time all K files exist: a rank finishes K-1 before it writes K). Meanwhile event queries answer "not ready", so cuda-ddp's watchdog
//    sees a stalled stream, as on a GPU. A rank that never arrives stops the job after
//    kWaitS seconds, naming the collective.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "trace_shim_exec.h"
#include "trace_shim_state.h"

namespace tb_trace_shim {

namespace {
constexpr double kWaitS = 120.0;  // a collective's deadline (a dead peer rank)

struct Member {
  int clique = 0;
  int rank = 0;
  int size = 1;
  std::string dir;  // separate processes: the exchange folder; empty within one process
  long seq = 0;     // collectives issued so far
};
struct Clique {
  std::vector<std::deque<Collective>> queued;  // per rank
};
std::map<int, Clique> g_cliques;
std::map<const void*, Member> g_members;
int g_clique_ids = 0;

// What a collective writes, from every rank's contribution (data[r]: rank r's send).
std::vector<char> outcome(const Collective& c, const std::vector<const void*>& data) {
  if (c.kind == 'b') {
    const char* root = static_cast<const char*>(data[static_cast<size_t>(c.root)]);
    return std::vector<char>(root, root + c.bytes);
  }
  if (!c.is_float || c.op < 0) exec_unsupported("an NCCL reduction other than float sum or average");
  const size_t n = c.bytes / sizeof(float);
  std::vector<float> total(n, 0.0f);
  for (const void* d : data)
    for (size_t i = 0; i < n; ++i) total[i] += static_cast<const float*>(d)[i];
  if (c.op == 1)
    for (float& v : total) v /= static_cast<float>(data.size());
  std::vector<char> out(c.bytes);
  std::memcpy(out.data(), total.data(), c.bytes);
  return out;
}

// Rank `rank`'s part of the outcome: broadcast and all-reduce write every recv, reduce the root's.
void deliver(const Collective& c, int rank, const std::vector<char>& out) {
  if (c.kind == 'a' || c.kind == 'b' || rank == c.root) std::memcpy(c.recv, out.data(), c.bytes);
}

bool same_shape(const Collective& a, const Collective& b) {
  return a.kind == b.kind && a.bytes == b.bytes && a.is_float == b.is_float && a.op == b.op && a.root == b.root;
}

[[noreturn]] void mismatch() {
  exec_unsupported("NCCL ranks issued different collectives (a real NCCL job would hang or corrupt memory)");
}

// ---- separate processes: files --------------------------------------------------------------
std::string file_of(const Member& m, long seq, int rank) {
  return m.dir + "/" + std::to_string(seq) + "." + std::to_string(rank);
}

void write_file(const std::string& path, const void* head, size_t head_bytes, const void* data, size_t bytes) {
  const std::string tmp = path + ".tmp";
  std::ofstream f(tmp, std::ios::binary);
  f.write(static_cast<const char*>(head), static_cast<std::streamsize>(head_bytes));
  if (bytes) f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) exec_unsupported(("cannot write " + path).c_str());
}

// Waits until every path exists; false after `seconds`.
bool wait_for(const std::vector<std::string>& paths, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (const std::string& p : paths) {
    struct stat st;
    while (stat(p.c_str(), &st) != 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return true;
}

// Issue: write this rank's contribution now (all work before it has run); finish later
// (defer, trace_shim_exec.h): wait for the peers' files with g_mu released, then reduce.
// A collective still deferred is finished first, as any other work submitted after it
// is: its result may be this one's input (in place, on the same stream), and its file
// K-1 may be deleted by a peer as soon as every file K exists.
void across_processes(Member& m, const Collective& c) {
  drain();
  const long seq = m.seq++;
  write_file(file_of(m, seq, m.rank), &c, sizeof c, c.send, c.kind == 'b' && m.rank != c.root ? 0 : c.bytes);
  const Member at = m;
  defer([at, seq, c] {
    std::vector<std::string> paths;
    for (int r = 0; r < at.size; ++r) paths.push_back(file_of(at, seq, r));
    g_mu.unlock();  // held by the caller's lock_guard: a watchdog thread may query meanwhile
    const bool arrived = wait_for(paths, kWaitS);
    g_mu.lock();
    if (!arrived)
      exec_unsupported(("NCCL collective " + std::to_string(seq) + ": a peer rank did not arrive within " +
                        std::to_string(static_cast<int>(kWaitS)) + " s (" + at.dir + ")").c_str());
    std::vector<std::vector<char>> contents(static_cast<size_t>(at.size));
    std::vector<const void*> data(static_cast<size_t>(at.size));
    for (int r = 0; r < at.size; ++r) {
      std::ifstream f(paths[static_cast<size_t>(r)], std::ios::binary);
      std::vector<char>& buf = contents[static_cast<size_t>(r)];
      buf.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      Collective theirs;
      if (buf.size() < sizeof theirs) mismatch();
      std::memcpy(&theirs, buf.data(), sizeof theirs);
      if (!same_shape(theirs, c)) mismatch();
      data[static_cast<size_t>(r)] = buf.data() + sizeof theirs;
    }
    deliver(c, at.rank, outcome(c, data));
    if (seq > 0) std::remove(file_of(at, seq - 1, at.rank).c_str());
  });
}
}  // namespace

void exec_comm_init_all(void* const* comms, int n) {
  if (!executing()) return;
  const int clique = ++g_clique_ids;
  g_cliques[clique].queued.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) g_members[comms[i]] = Member{clique, i, n, "", 0};
}

void exec_comm_init_rank(const void* comm, const char* unique_id, int rank, int nranks) {
  if (!executing()) return;
  Member m{++g_clique_ids, rank, nranks, "", 0};
  if (nranks == 1) {
    g_cliques[m.clique].queued.resize(1);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    m.dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + unique_id;
    std::error_code ec;
    std::filesystem::create_directories(m.dir, ec);
    if (ec) exec_unsupported(("cannot create " + m.dir + ": " + ec.message()).c_str());
  }
  g_members[comm] = m;
}

// Across processes, the folder goes once every rank is done with it: each rank says
// bye, waits for all byes, deletes its last file and says gone; rank 0 waits for every
// gone and removes the folder. (A job that died leaves the folder behind.)
void exec_comm_destroy(const void* comm) {
  if (!executing()) return;
  auto it = g_members.find(comm);
  if (it == g_members.end()) return;
  drain();  // the last collectives complete before the communicator goes
  const Member m = it->second;
  g_members.erase(it);
  if (m.dir.empty()) return;
  auto marks = [&](const char* what, bool others_only) {
    std::vector<std::string> p;
    for (int r = 0; r < m.size; ++r)
      if (!others_only || r != m.rank) p.push_back(m.dir + "/" + what + "." + std::to_string(r));
    return p;
  };
  const char nothing = 0;
  write_file(m.dir + "/bye." + std::to_string(m.rank), &nothing, 1, nullptr, 0);
  if (!wait_for(marks("bye", false), 30.0)) return;
  if (m.seq > 0) std::remove(file_of(m, m.seq - 1, m.rank).c_str());
  write_file(m.dir + "/gone." + std::to_string(m.rank), &nothing, 1, nullptr, 0);
  if (m.rank == 0 && wait_for(marks("gone", true), 30.0)) {
    std::error_code ec;
    std::filesystem::remove_all(m.dir, ec);
  }
}

void exec_collective(const void* comm, const void* stream, const Collective& c) {
  if (!executing()) return;
  if (stream_captured(stream)) exec_unsupported("an NCCL collective inside a CUDA-graph capture");
  auto it = g_members.find(comm);
  if (it == g_members.end()) exec_unsupported("a collective on a communicator this shim did not create");
  Member& m = it->second;
  if (!m.dir.empty()) {
    across_processes(m, c);
    return;
  }
  Clique& q = g_cliques[m.clique];
  q.queued[static_cast<size_t>(m.rank)].push_back(c);
  for (const auto& calls : q.queued)
    if (calls.empty()) return;  // not every rank has issued it yet
  std::vector<Collective> calls;
  std::vector<const void*> data;
  for (auto& r : q.queued) {
    calls.push_back(r.front());
    r.pop_front();
    if (!same_shape(calls.back(), calls.front())) mismatch();
    data.push_back(calls.back().send);
  }
  const std::vector<char> out = outcome(calls.front(), data);  // all read before any is written
  for (size_t r = 0; r < calls.size(); ++r) deliver(calls[r], static_cast<int>(r), out);
}

}  // namespace tb_trace_shim
