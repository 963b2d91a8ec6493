// tests/cuda_trace/trace.h — reading and checking the call traces that the fake CUDA
// runtime (trace_shim_*.cpp, format in trace_shim_state.h) writes while the real
// trainbench runs a GPU backend on a machine without a GPU. Every check here is
// about the HOST-SIDE sequence of API calls — which device is current, which stream
// and handle a call names, what is ordered before what, when the host blocks or
// allocates — never about numbers: nothing executes under the fake runtime.
//
// Each check returns the problems it found (empty: none), one line each with the
// offending trace line, so a failing test says what and where.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tb::trace {

// ---- the trace ------------------------------------------------------------------------
struct Access {
  char mode = 'r';    // r read, w write
  std::string block;  // dD.I, pI, rI, xD.I
  int64_t off = 0, len = 0;
};

struct Call {
  int64_t n = 0;
  int tid = 0;
  std::string fn;
  int dev = 0;
  std::string cap;  // the stream being captured, "-" when none
  std::map<std::string, std::string> kv;
  std::vector<Access> acc;
  std::string line;

  bool has(const std::string& k) const { return kv.count(k) != 0; }
  std::string get(const std::string& k) const {
    auto it = kv.find(k);
    return it == kv.end() ? "" : it->second;
  }
  long long num(const std::string& k, long long dflt = -1) const {
    auto it = kv.find(k);
    return it == kv.end() ? dflt : std::atoll(it->second.c_str());
  }
  bool capturing() const { return cap != "-"; }
};

using Trace = std::vector<Call>;

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

inline Trace read_trace(const std::string& path) {
  Trace t;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("n=", 0) != 0) continue;
    Call c;
    c.line = line;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      const size_t eq = w.find('=');
      if (eq == std::string::npos) continue;
      c.kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
    c.n = c.num("n");
    c.tid = static_cast<int>(c.num("tid"));
    c.fn = c.get("fn");
    c.dev = static_cast<int>(c.num("dev"));
    c.cap = c.get("cap");
    if (c.has("acc")) {
      for (const std::string& a : split(c.get("acc"), ',')) {
        const std::vector<std::string> p = split(a, ':');
        if (p.size() != 4) continue;
        c.acc.push_back({p[0][0], p[1], std::atoll(p[2].c_str()), std::atoll(p[3].c_str())});
      }
    }
    t.push_back(std::move(c));
  }
  return t;
}

// The block a shim pointer name (dD.I+OFF, pI+OFF, ...) lies in: "dD.I", or "" for h / 0.
inline std::string block_of(const std::string& ptr) {
  if (ptr.empty() || ptr == "h" || ptr == "0" || ptr == "-") return "";
  return ptr.substr(0, ptr.find('+'));
}

// ---- call classes ---------------------------------------------------------------------
inline bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

inline bool is_nccl_collective(const Call& c) {
  return c.fn == "ncclAllReduce" || c.fn == "ncclBroadcast" || c.fn == "ncclReduce";
}
// Device work: a kernel, a cuBLAS GEMM, a graph replay or a collective.
inline bool is_launch(const Call& c) {
  return c.fn == "launch" || c.fn == "cublasSgemm" || c.fn == "cudaGraphLaunch" || is_nccl_collective(c);
}
// A kernel, a cuBLAS GEMM or a graph replay: what starts a training step's compute.
inline bool is_kernel_launch(const Call& c) {
  return c.fn == "launch" || c.fn == "cublasSgemm" || c.fn == "cudaGraphLaunch";
}
// Memory allocation, release or registration (cudaMalloc*, cudaFree*, cudaMallocHost,
// cudaHostAlloc, cudaHostRegister / Unregister).
inline bool is_alloc(const Call& c) {
  return starts(c.fn, "cudaMalloc") || starts(c.fn, "cudaFree") || c.fn == "cudaHostAlloc" ||
         c.fn == "cudaHostRegister" || c.fn == "cudaHostUnregister";
}
// Creation or destruction of streams, events, cuBLAS handles, communicators.
inline bool is_resource(const Call& c) {
  return starts(c.fn, "cudaStreamCreate") || c.fn == "cudaStreamDestroy" || starts(c.fn, "cudaEventCreate") ||
         c.fn == "cudaEventDestroy" || c.fn == "cublasCreate" || c.fn == "cublasDestroy" ||
         starts(c.fn, "ncclCommInit") || c.fn == "ncclCommDestroy" || c.fn == "ncclCommAbort";
}
// Calls that make the host wait for device work: the explicit synchronisations,
// synchronous copies and memsets, and an asynchronous copy into pageable host memory
// (it returns only once the copy has completed).
inline bool is_host_sync(const Call& c) {
  return c.fn == "cudaStreamSynchronize" || c.fn == "cudaDeviceSynchronize" || c.fn == "cudaEventSynchronize" ||
         c.fn == "cudaMemcpy" || c.fn == "cudaMemcpyPeer" || c.fn == "cudaMemset" ||
         (c.fn == "cudaMemcpyAsync" && c.get("dst") == "h");
}
// An asynchronous copy from pageable host memory: CUDA may make it synchronous.
inline bool is_pageable_upload(const Call& c) { return c.fn == "cudaMemcpyAsync" && c.get("src") == "h"; }

// The end of a training step: the SGD update kernel (outside a capture) or a graph replay.
inline bool is_step_end(const Call& c) {
  if (c.fn == "cudaGraphLaunch") return true;
  return c.fn == "launch" && !c.capturing() && c.get("kernel").find("sgd_update") != std::string::npos;
}

inline std::string show(const Call& c) { return c.line.size() > 400 ? c.line.substr(0, 400) + " ..." : c.line; }

// The streams each cuBLAS handle was last bound to, in order of binding (first: the trainer's compute stream).
inline std::vector<std::string> cublas_streams(const Trace& t) {
  std::vector<std::string> v;
  for (const Call& c : t) {
    if (c.fn == "cublasSetStream" && std::find(v.begin(), v.end(), c.get("stream")) == v.end()) {
      v.push_back(c.get("stream"));
    }
  }
  return v;
}

inline std::vector<std::string> created_streams(const Trace& t) {
  std::vector<std::string> v;
  for (const Call& c : t) {
    if (starts(c.fn, "cudaStreamCreate")) v.push_back(c.get("stream"));
  }
  return v;
}

inline int count(const Trace& t, const std::string& fn) {
  return static_cast<int>(std::count_if(t.begin(), t.end(), [&](const Call& c) { return c.fn == fn; }));
}

// ---- checks ------------------------------------------------------------------------------
using Problems = std::vector<std::string>;

// Every call that names a stream is made with that stream's device current; events are
// recorded on streams of their own device; cuBLAS calls use a handle created on the
// current device (and a GEMM runs on a stream of that device); a collective's
// communicator, stream and the current device agree; no call fails; no call names a
// destroyed handle or freed memory.
inline Problems check_devices(const Trace& t) {
  Problems p;
  for (const Call& c : t) {
    if (c.has("sdev") && c.num("sdev") != c.dev && c.fn != "cudaStreamCreateWithFlags") {
      p.push_back("stream of device " + c.get("sdev") + " used with device " + std::to_string(c.dev) +
                  " current: " + show(c));
    }
    if (c.has("hdev") && c.num("hdev") != c.dev) {
      p.push_back("cuBLAS handle of device " + c.get("hdev") + " used with device " + std::to_string(c.dev) +
                  " current: " + show(c));
    }
    if (c.has("hdev") && c.has("sdev") && c.num("hdev") != c.num("sdev")) {
      p.push_back("cuBLAS handle and its stream on different devices: " + show(c));
    }
    if (c.fn == "cudaEventRecord" && c.num("eventdev") != c.num("sdev")) {
      p.push_back("event recorded on a stream of another device: " + show(c));
    }
    if (c.fn == "cudaEventElapsedTime" && c.num("eventdev") != c.num("enddev")) {
      p.push_back("elapsed time between events of different devices: " + show(c));
    }
    if (c.has("cdev") && c.has("sdev") && c.num("cdev") != c.num("sdev")) {
      p.push_back("NCCL communicator and stream on different devices: " + show(c));
    }
    if (c.has("ret")) p.push_back("call failed (" + c.get("ret") + "): " + show(c));
    for (const auto& [k, v] : c.kv) {
      if (v == "unknown") p.push_back("names a destroyed or unknown handle (" + k + "): " + show(c));
      if (k != "acc" && starts(v, "x")) p.push_back("names freed device memory (" + k + "): " + show(c));
    }
    for (const Access& a : c.acc) {
      if (starts(a.block, "x")) p.push_back("touches freed device memory: " + show(c));
    }
  }
  return p;
}

// A process that works on one GPU touches no other: every call is made with `dev`
// current and every cudaSetDevice targets `dev` (since CUDA 12 it creates that device's
// primary context, ~300-500 MB) — e.g. no cudaSetDevice(0) / cudaMemGetInfo of a GPU
// inventory before the process picks its GPU. Exempt: cudaDeviceCanAccessPeer, a query
// naming both its devices that needs no context.
inline Problems check_one_device(const Trace& t, int dev) {
  Problems p;
  for (const Call& c : t) {
    if (c.fn == "cudaDeviceCanAccessPeer") continue;
    if (c.fn == "cudaSetDevice") {
      if (c.num("to") != dev) p.push_back("makes device " + c.get("to") + " current: " + show(c));
    } else if (c.dev != dev) {
      p.push_back("call with device " + std::to_string(c.dev) + " current: " + show(c));
    }
  }
  return p;
}

// Everything acquired is released by the end of the process: device and pinned memory,
// host registrations, streams, events, cuBLAS handles, communicators, graph execs.
inline Problems check_released(const Trace& t) {
  std::map<std::string, std::string> held;  // name -> the call that acquired it
  auto take = [&](const std::string& name, const Call& c) {
    if (!name.empty() && name != "-" && name != "0") held[name] = show(c);
  };
  auto give = [&](const std::string& name) { held.erase(name); };
  for (const Call& c : t) {
    if (c.has("ret")) continue;
    if (c.fn == "cudaMalloc" || c.fn == "cudaMallocHost" || c.fn == "cudaHostAlloc") take(c.get("ptr"), c);
    if (c.fn == "cudaHostRegister") take(block_of(c.get("ptr")), c);
    if (c.fn == "cudaFree" || c.fn == "cudaFreeHost" || c.fn == "cudaHostUnregister") {
      std::string b = block_of(c.get("ptr"));
      if (starts(b, "x")) b[0] = 'd';  // the shim names a block freed as it is freed
      give(b);
    }
    if (starts(c.fn, "cudaStreamCreate")) take(c.get("stream"), c);
    if (c.fn == "cudaStreamDestroy") give(c.get("stream"));
    if (starts(c.fn, "cudaEventCreate")) take(c.get("event"), c);
    if (c.fn == "cudaEventDestroy") give(c.get("event"));
    if (c.fn == "cublasCreate") take(c.get("handle"), c);
    if (c.fn == "cublasDestroy") give(c.get("handle"));
    if (c.fn == "ncclCommInitRank" || c.fn == "ncclCommInitRankConfig") take(c.get("comm"), c);
    if (c.fn == "ncclCommInitAll") {
      for (const std::string& n : split(c.get("comms"), ',')) take(n, c);
    }
    if (c.fn == "ncclCommDestroy" || c.fn == "ncclCommAbort") give(c.get("comm"));
    if (c.fn == "cudaGraphInstantiate") take(c.get("exec"), c);
    if (c.fn == "cudaGraphExecDestroy") give(c.get("exec"));
    if (c.fn == "cudaStreamEndCapture") take(c.get("graph"), c);
    if (c.fn == "cudaGraphDestroy") give(c.get("graph"));
  }
  Problems p;
  for (const auto& [name, how] : held) p.push_back("never released: " + name + " from " + how);
  return p;
}

// While a stream is being captured into a CUDA graph nothing capture-unsafe happens:
// no allocation or release, no host synchronisation or synchronous copy, no stream,
// event or handle created or destroyed, no query of work, no cuBLAS stream or
// workspace change and no GEMM on cuBLAS's default workspace pool (it may allocate),
// and no work on any stream but the captured one.
inline Problems check_capture(const Trace& t) {
  Problems p;
  std::string open;  // stream being captured
  for (const Call& c : t) {
    if (c.fn == "cudaStreamBeginCapture") {
      if (!open.empty()) p.push_back("nested capture: " + show(c));
      open = c.get("stream");
      continue;
    }
    if (c.fn == "cudaStreamEndCapture") {
      if (c.get("stream") != open) p.push_back("capture ended on another stream: " + show(c));
      open.clear();
      continue;
    }
    if (!c.capturing()) continue;
    if (is_alloc(c) || is_host_sync(c) || is_resource(c) || is_pageable_upload(c) || c.fn == "cudaStreamQuery" ||
        c.fn == "cudaEventQuery" || c.fn == "cudaEventElapsedTime" || c.fn == "cublasSetStream" ||
        c.fn == "cublasSetWorkspace" || c.fn == "cudaGraphInstantiate" || c.fn == "cudaGraphLaunch") {
      p.push_back("capture-unsafe call while capturing " + c.cap + ": " + show(c));
    }
    if (c.fn == "cublasSgemm" && c.get("ws") == "default") {
      p.push_back("GEMM on cuBLAS's default workspace while capturing (may allocate): " + show(c));
    }
    if (c.has("stream") && c.get("stream") != c.cap && c.fn != "cudaStreamWaitEvent") {
      p.push_back("work on " + c.get("stream") + " while capturing " + c.cap + ": " + show(c));
    }
  }
  if (!open.empty()) p.push_back("capture of " + open + " never ended");
  return p;
}

// Under lazy module loading (CUDA's default since 12.2) a kernel is loaded at its first
// launch, or when cudaFuncGetAttributes names it; loading inside a stream capture must
// not happen. So every kernel launched while capturing was launched outside a capture
// before, or named by cudaFuncGetAttributes before (tb::cuda::preload_graph_kernels).
inline Problems check_loaded_before_capture(const Trace& t) {
  Problems p;
  std::set<std::string> loaded;
  for (const Call& c : t) {
    if (c.fn == "cudaFuncGetAttributes") loaded.insert(c.get("kernel"));
    if (c.fn != "launch") continue;
    if (!c.capturing()) {
      loaded.insert(c.get("kernel"));
    } else if (!loaded.count(c.get("kernel"))) {
      p.push_back("kernel first launched inside a capture (lazy loading would load it there): " + show(c));
      loaded.insert(c.get("kernel"));  // once per kernel
    }
  }
  return p;
}

// ---- the runner's stopwatch -------------------------------------------------------------
// The main thread's timed epochs as the runner marks them (harness/trace_mark.h): the
// index of each `timed-epoch-begin` mark and of the `timed-epoch-end` that follows it.
struct TimedSpan {
  size_t begin = 0, end = 0;
};
inline std::vector<TimedSpan> timed_spans(const Trace& t, Problems* p) {
  std::vector<TimedSpan> out;
  bool open = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].fn != "mark") continue;
    const std::string what = t[i].get("what");
    if (what == "timed-epoch-begin") {
      if (open) p->push_back("a timed epoch begins inside another: " + show(t[i]));
      out.push_back({i, i});
      open = true;
    } else if (what == "timed-epoch-end") {
      if (!open) p->push_back("a timed epoch ends that never began: " + show(t[i]));
      else out.back().end = i;
      open = false;
    }
  }
  if (open) p->push_back("a timed epoch never ends");
  return out;
}

// ---- happens-before --------------------------------------------------------------------
// A vector-clock model of CUDA's ordering rules over the trace: work on one stream
// runs in issue order; cudaEventRecord captures what its stream has issued and
// cudaStreamWaitEvent orders the waiting stream after it; the host's view advances
// with cudaStreamSynchronize / cudaEventSynchronize / cudaDeviceSynchronize,
// synchronous copies and copies into pageable memory, and work the host issues
// afterwards is ordered after what it waited for; the legacy stream 0 is ordered
// with the device's blocking streams (flags 0), not its non-blocking ones; captured
// work runs when its graph is launched. Two accesses to overlapping bytes of the
// same memory, at least one a write, from different streams with neither ordered
// before the other, are a race. cudaEventElapsedTime needs both events recorded,
// created with timing, and complete as far as the host knows (else CUDA answers
// cudaErrorNotReady). Limits: a kernel's accesses are known only at the addresses its
// pointer arguments hold (the shim cannot know its extent), and each rank of a
// collective touches only its own buffers on its own stream — the synchronisation a
// collective implies between its ranks is not modelled: what it reports is unordered
// by the rules above, but not every race is found.
class HappensBefore {
 public:
  Problems run(const Trace& t) {
    for (const Call& c : t) step(c);
    return problems_;
  }

 private:
  using Clock = std::map<std::string, int64_t>;
  struct Event {
    bool recorded = false;
    Clock clock;
  };
  struct Touch {
    std::string stream;
    int64_t at = 0;
    char mode = 'r';
    int64_t off = 0, len = 0;
    int64_t n = 0;
    std::string line;
  };

  static void join(Clock& a, const Clock& b) {
    for (const auto& [k, v] : b) a[k] = std::max(a[k], v);
  }
  static bool covers(const Clock& a, const std::string& stream, int64_t at) {
    auto it = a.find(stream);
    return it != a.end() && it->second >= at;
  }

  std::string stream_key(const Call& c) const {
    const std::string s = c.get("stream");
    return s == "0" ? "L" + std::to_string(c.dev) : s;
  }

  // Issues one piece of work on `key` touching `acc`.
  void issue(const std::string& key, int dev, const std::vector<Access>& acc, const Call& c) {
    Clock& sc = streams_[key];
    join(sc, host_);
    if (key[0] == 'L') {  // the legacy stream waits for the device's blocking streams
      for (const auto& [s, d] : stream_dev_) {
        if (d == dev && blocking_.count(s)) join(sc, streams_[s]);
      }
    } else if (blocking_.count(key)) {
      join(sc, streams_["L" + std::to_string(dev)]);
    }
    const int64_t at = ++sc[key];
    for (const Access& a : acc) {
      std::map<std::string, std::vector<Touch>>& by_stream = touches_[a.block];
      bool raced = false;
      for (auto& [other, list] : by_stream) {
        if (other == key || raced) continue;
        const int64_t known = sc.count(other) ? sc[other] : 0;  // other's work ordered before this
        for (auto it = list.rbegin(); it != list.rend() && it->at > known; ++it) {
          const bool overlap = a.off < it->off + it->len && it->off < a.off + a.len;
          if (overlap && (a.mode == 'w' || it->mode == 'w')) {
            problems_.push_back("race on " + a.block + ": " + show(c) + "\n      unordered with: " + it->line);
            raced = true;
            break;
          }
        }
      }
      by_stream[key].push_back({key, at, a.mode, a.off, a.len, c.n, show(c)});
    }
  }

  void step(const Call& c) {
    if (c.tid != 0 && c.fn != "cudaEventQuery") {
      // Work from helper threads would need a per-thread host clock; the backends
      // enqueue from one thread only, which this model (and the checks) assume.
      if (c.has("stream") || is_host_sync(c)) problems_.push_back("work from a second host thread: " + show(c));
      return;
    }
    const std::string f = c.fn;
    if (starts(f, "cudaStreamCreate")) {
      stream_dev_[c.get("stream")] = c.dev;
      if (c.num("flags") == 0) blocking_.insert(c.get("stream"));
      return;
    }
    // Work captured into a graph runs when the graph is launched.
    if (c.capturing() && c.get("stream") == c.cap) {
      if (!c.acc.empty()) capture_.insert(capture_.end(), c.acc.begin(), c.acc.end());
      return;
    }
    if (f == "cudaStreamEndCapture") {
      graphs_[c.get("graph")] = capture_;
      capture_.clear();
      return;
    }
    if (f == "cudaGraphInstantiate") {
      execs_[c.get("exec")] = graphs_[c.get("graph")];
      return;
    }
    if (f == "cudaGraphLaunch") {
      issue(stream_key(c), c.dev, execs_[c.get("exec")], c);
      return;
    }
    if (f == "cudaEventRecord") {
      Event& e = events_[c.get("event")];
      e.recorded = true;
      e.clock = streams_[stream_key(c)];
      join(e.clock, host_);
      return;
    }
    if (f == "cudaStreamWaitEvent") {
      auto it = events_.find(c.get("event"));
      if (it != events_.end() && it->second.recorded) join(streams_[stream_key(c)], it->second.clock);
      return;
    }
    if (f == "cudaStreamSynchronize") {
      join(host_, streams_[stream_key(c)]);
      return;
    }
    if (f == "cudaEventSynchronize") {
      join(host_, events_[c.get("event")].clock);
      return;
    }
    if (f == "cudaDeviceSynchronize") {
      for (auto& [s, clock] : streams_) {
        if ((s[0] == 'L' && s == "L" + std::to_string(c.dev)) || stream_dev_[s] == c.dev) join(host_, clock);
      }
      return;
    }
    if (f == "cudaEventElapsedTime") {
      for (const char* k : {"event", "end"}) {
        const std::string name = c.get(k);
        const Event& e = events_[name];
        if (!e.recorded) problems_.push_back("elapsed time of an event never recorded (" + name + "): " + show(c));
        if (c.num(std::string(k) + "flags") & 2) {
          problems_.push_back("elapsed time of an event created without timing (" + name + "): " + show(c));
        }
        for (const auto& [s, at] : e.clock) {
          if (!covers(host_, s, at)) {
            problems_.push_back("elapsed time of an event the host has not waited for (" + name +
                                "; CUDA would answer cudaErrorNotReady): " + show(c));
            break;
          }
        }
      }
      return;
    }
    if (c.has("stream") && (is_launch(c) || !c.acc.empty() || starts(f, "cudaMemcpy") || starts(f, "cudaMemset"))) {
      const std::string key = stream_key(c);
      issue(key, c.dev, c.acc, c);
      if (is_host_sync(c)) join(host_, streams_[key]);  // synchronous: the host waits for it
    }
  }

  std::map<std::string, Clock> streams_;
  std::map<std::string, int> stream_dev_;
  std::set<std::string> blocking_;
  std::map<std::string, Event> events_;
  std::map<std::string, std::map<std::string, std::vector<Touch>>> touches_;  // block -> stream -> touches
  std::vector<Access> capture_;
  std::map<std::string, std::vector<Access>> graphs_, execs_;
  Clock host_;
  Problems problems_;
};

inline Problems check_ordering(const Trace& t) { return HappensBefore().run(t); }

// ---- epochs ---------------------------------------------------------------------------------
// What the runner does (harness/runner.cpp): set_params, evaluate (the loss before
// training), `warmup` epochs, then per repetition set_params, `epochs` epochs, evaluate
// (device work, one readback), params.
struct Plan {
  int warmup = 0, reps = 1, epochs = 1;
  int steps = 1;  // batches per epoch
  int total_epochs() const { return warmup + reps * epochs; }
  // Whether an evaluation runs between epoch j - 1 and epoch j (before epoch 0: the loss
  // before training, which a diverged run's final loss is judged against).
  bool eval_before(int j) const { return j == 0 || (j >= warmup + epochs && (j - warmup) % epochs == 0); }
};

struct EpochSpan {
  size_t first_launch = 0;  // the first kernel launch (kernel, GEMM, graph) of the epoch's first step
  size_t sync = 0;          // the epoch's end: the first host synchronisation after its last step
  std::vector<size_t> step_ends;
};

// Finds each epoch in the main thread's calls. Steps end with the SGD update (or a
// graph replay); epoch j is steps [j*S, (j+1)*S); its end is the first host
// synchronisation after its last step; it begins with the first kernel launch
// (kernel, GEMM or graph replay — not a copy or a collective, which set_params may
// issue) after the previous epoch's end, or, where an evaluation ran in between, after
// the evaluation's first readback.
inline std::vector<EpochSpan> find_epochs(const Trace& all, const Plan& plan, Problems* p) {
  std::vector<size_t> main;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].tid == 0) main.push_back(i);
  }
  std::vector<size_t> ends;
  for (size_t i : main) {
    if (is_step_end(all[i])) ends.push_back(i);
  }
  const size_t want = static_cast<size_t>(plan.total_epochs()) * static_cast<size_t>(plan.steps);
  if (ends.size() != want) {
    p->push_back("expected " + std::to_string(want) + " training steps (SGD updates or graph replays), found " +
                 std::to_string(ends.size()));
    return {};
  }
  // The first main-thread call at or after `begin` that satisfies pred (all.size(): none).
  auto find = [&](size_t begin, bool (*pred)(const Call&)) {
    for (size_t i : main) {
      if (i >= begin && pred(all[i])) return i;
    }
    return all.size();
  };
  std::vector<EpochSpan> out;
  size_t from = 0;  // where the next epoch's first kernel launch is looked for
  for (int j = 0; j < plan.total_epochs(); ++j) {
    EpochSpan e;
    e.step_ends.assign(ends.begin() + j * plan.steps, ends.begin() + (j + 1) * plan.steps);
    if (plan.eval_before(j)) {  // skip the evaluation: its kernels, then its readback
      from = find(find(from, is_kernel_launch), is_host_sync) + 1;
      if (from > e.step_ends.front()) {
        p->push_back("epoch " + std::to_string(j) + ": no evaluation (kernels + readback) before its first step");
        return {};
      }
    }
    e.first_launch = find(from, is_kernel_launch);
    e.sync = find(e.step_ends.back() + 1, is_host_sync);
    if (e.first_launch > e.step_ends.front() || e.sync >= all.size()) {
      p->push_back("epoch " + std::to_string(j) + ": cannot delimit it in the trace");
      return {};
    }
    out.push_back(e);
    from = e.sync + 1;
  }
  return out;
}

// The documented design of the GPU trainers ("no allocation and no host sync inside a
// step", "one host synchronisation per epoch"): from the first kernel launch of an
// epoch's first step to the epoch's end — its one host synchronisation, a stream sync —
// no allocation or release, no stream/event/handle/communicator created or destroyed,
// no other host synchronisation and no copy from pageable memory; and none of these
// between that end and the next epoch's first kernel launch either (within a
// repetition), apart from at most one pageable upload (the next epoch's visiting order,
// issued while the streams are idle). The CUDA-graph capture of the first full step
// (graph creation, instantiation) is allowed: it happens once, and check_capture and
// the graph tests hold it to its own rules.
inline Problems check_epochs(const Trace& t, const Plan& plan, std::vector<EpochSpan>* spans = nullptr) {
  Problems p;
  const std::vector<EpochSpan> ep = find_epochs(t, plan, &p);
  if (spans) *spans = ep;
  for (size_t j = 0; j < ep.size(); ++j) {
    const std::string where = "epoch " + std::to_string(j) + ": ";
    for (size_t i = ep[j].first_launch; i < ep[j].sync; ++i) {
      const Call& c = t[i];
      if (c.tid != 0) continue;
      if (is_alloc(c)) p.push_back(where + "allocation inside the epoch: " + show(c));
      if (is_resource(c)) p.push_back(where + "resource created/destroyed inside the epoch: " + show(c));
      if (is_host_sync(c)) p.push_back(where + "host synchronisation inside the epoch (before its end): " + show(c));
      if (is_pageable_upload(c)) p.push_back(where + "copy from pageable memory inside the epoch: " + show(c));
    }
    const Call& end = t[ep[j].sync];
    if (end.fn != "cudaStreamSynchronize") p.push_back(where + "ends with " + show(end) + ", not a stream sync");
    const bool same_rep = j + 1 < ep.size() && !plan.eval_before(static_cast<int>(j) + 1) &&
                          static_cast<int>(j) + 1 != plan.warmup;
    if (same_rep) {
      int uploads = 0;
      for (size_t i = ep[j].sync + 1; i < ep[j + 1].first_launch; ++i) {
        const Call& c = t[i];
        if (c.tid != 0) continue;
        if (is_alloc(c) || is_resource(c) || is_host_sync(c)) {
          p.push_back(where + "between epochs: " + show(c));
        }
        uploads += is_pageable_upload(c);
      }
      if (uploads > 1) p.push_back(where + std::to_string(uploads) + " pageable uploads before the next epoch");
    }
  }
  return p;
}

// All the generic checks at once, labelled.
inline Problems check_all(const Trace& t) {
  Problems all;
  for (auto [label, p] : {std::pair{"device", check_devices(t)}, std::pair{"release", check_released(t)},
                          std::pair{"capture", check_capture(t)}, std::pair{"ordering", check_ordering(t)},
                          std::pair{"lazy loading", check_loaded_before_capture(t)}}) {
    for (const std::string& s : p) all.push_back(std::string(label) + ": " + s);
  }
  return all;
}

inline std::string report(const Problems& p, size_t max = 12) {
  std::string s;
  for (size_t i = 0; i < p.size() && i < max; ++i) s += "  " + p[i] + "\n";
  if (p.size() > max) s += "  ... and " + std::to_string(p.size() - max) + " more\n";
  return s;
}

}  // namespace tb::trace
