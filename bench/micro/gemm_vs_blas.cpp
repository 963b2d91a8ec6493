// bench/micro/gemm_vs_blas.cpp — tb::cpu::gemm against the system BLAS's cblas_sgemm
// at an MLP training step's GEMM shapes, in one process, the two calls alternating.
//
// Why one process: on a shared or virtual machine the CPU's speed drifts by 5-10%
// within minutes (docs/performance.md, issue #18), so two rates measured apart (the
// suite's step rate against bench/peers/sgemm_rate.py's) compare two machines. Here
// each repetition runs ours and the BLAS back to back, the order flipping every
// repetition, and the medians of the same repetitions are compared.
//
// Shapes, per layer l (in -> out) and batch B, as harness/backends/cpu_model.cpp calls them:
//   forward  Z (B x out)   = A (B x in) W^T       gemm(N, T, B, out, in)
//   dW       dW (out x in) = dZ^T (out x B) A     gemm(T, N, out, in, B)
//   dA       dA (B x in)   = dZ (B x out) W       gemm(N, N, B, in, out)   (not for layer 1)
// each 2*m*n*k FLOPs. The BLAS is loaded at run time (dlopen), so the build needs no
// BLAS: --blas, else TB_BLAS_LIB, else libopenblas.so.0, libblas.so.3, libcblas.so.3.
// Without one it prints "tb_gemm_vs_blas: skipped: <why>" and exits 0.
// Both results are checked against a double dot product at 64 sampled elements
// (bench/micro/gemm_check.h); a wrong result exits 1. Bad flags exit 2.
#include <dlfcn.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/micro/gemm_check.h"
#include "harness/csv_writer.h"
#include "kernels/cpu/gemm.h"

namespace {

using Clock = std::chrono::steady_clock;

// CBLAS's enums (cblas.h) as the ABI passes them.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);

struct Args {
  std::vector<int64_t> layers{1024, 4096, 4096, 4096, 1000};
  int64_t batch = 1024;
  int threads = 0;  // 0: every CPU this process may use
  int reps = 7;
  std::string blas, out;
};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr,
               "tb_gemm_vs_blas: %s\nusage: tb_gemm_vs_blas [--layers D,H,...,O] [--batch B] [--threads N|all] "
               "[--reps R] [--blas LIB.so] [--out FILE.json]\n",
               what.c_str());
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || x < lo || x > hi)
    usage_error(flag + " '" + v + "': allowed values are integers " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

// --out is replaced by rename(): refuse anything but a regular file (a device such as
// /dev/null would be replaced, as root) and a folder we cannot write, before minutes of
// measuring rather than after.
void check_out(const std::string& out) {
  struct stat st {};
  if (::stat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    usage_error("--out '" + out + "': not a regular file (allowed: a new or regular .json file path)");
  const size_t slash = out.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0)
    usage_error("--out '" + out + "': folder '" + dir + "' is not writable: " + std::strerror(errno));
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--help" || f == "-h") usage_error("help");
    if (i + 1 >= argc) usage_error(f + " needs a value");
    const std::string v = argv[++i];
    if (f == "--layers") {
      a.layers.clear();
      size_t start = 0;
      while (start <= v.size()) {
        const size_t comma = v.find(',', start);
        a.layers.push_back(parse_int("--layers", v.substr(start, comma - start), 1, 1 << 16));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (a.layers.size() < 2) usage_error("--layers '" + v + "': allowed values are 2 or more widths D,...,O");
    } else if (f == "--batch") {
      a.batch = parse_int(f, v, 1, 1 << 16);
    } else if (f == "--threads") {
      a.threads = v == "all" ? 0 : static_cast<int>(parse_int(f, v, 1, 4096));
    } else if (f == "--reps") {
      a.reps = static_cast<int>(parse_int(f, v, 1, 1000));
    } else if (f == "--blas") {
      a.blas = v;
    } else if (f == "--out") {
      a.out = v;
    } else {
      usage_error("unknown flag '" + f + "' (allowed: --layers, --batch, --threads, --reps, --blas, --out)");
    }
  }
  if (!a.out.empty()) check_out(a.out);
  return a;
}

struct Blas {
  CblasSgemm sgemm = nullptr;
  std::string path, core, config, tried;
};

// The first library that has cblas_sgemm; OpenBLAS's thread count set to `threads`
// (its OpenMP build follows omp_set_num_threads anyway, its pthreads build does not).
Blas load_blas(const Args& a, int threads) {
  std::vector<std::string> names;
  if (!a.blas.empty()) {
    names.push_back(a.blas);
  } else if (const char* env = std::getenv("TB_BLAS_LIB"); env != nullptr && *env != '\0') {
    names.push_back(env);
  } else {
    names = {"libopenblas.so.0", "libblas.so.3", "libcblas.so.3"};
  }
  Blas b;
  for (const std::string& n : names) {
    b.tried += (b.tried.empty() ? "" : ", ") + n;
    void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) continue;
    b.sgemm = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    if (b.sgemm == nullptr) {  // a BLAS without the CBLAS interface: try the next
      dlclose(h);
      continue;
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(b.sgemm), &info) != 0 && info.dli_fname != nullptr) {
      char* real = realpath(info.dli_fname, nullptr);
      b.path = real != nullptr ? real : info.dli_fname;
      std::free(real);
    }
    using SetThreads = void (*)(int);
    using GetName = const char* (*)();
    if (auto set = reinterpret_cast<SetThreads>(dlsym(h, "openblas_set_num_threads"))) set(threads);
    if (auto core = reinterpret_cast<GetName>(dlsym(h, "openblas_get_corename"))) b.core = core();
    if (auto config = reinterpret_cast<GetName>(dlsym(h, "openblas_get_config"))) b.config = config();
    return b;
  }
  return b;
}

struct Shape {
  int layer;
  std::string gemm;
  bool ta, tb;
  int64_t m, n, k;
};

std::vector<Shape> step_shapes(const std::vector<int64_t>& layers, int64_t batch) {
  std::vector<Shape> s;
  for (size_t l = 0; l + 1 < layers.size(); ++l) {
    const int64_t in = layers[l], out = layers[l + 1];
    const int layer = static_cast<int>(l) + 1;
    s.push_back({layer, "forward", false, true, batch, out, in});
    s.push_back({layer, "dW", true, false, out, in, batch});
    if (l > 0) s.push_back({layer, "dA", false, false, batch, in, out});
  }
  return s;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const int threads = args.threads > 0 ? args.threads : omp_get_num_procs();
  omp_set_num_threads(threads);
  const Blas blas = load_blas(args, threads);
  if (blas.sgemm == nullptr) {
    std::printf("tb_gemm_vs_blas: skipped: no library with cblas_sgemm (tried %s); on Debian/Ubuntu: apt-get install "
                "libopenblas0-openmp\n",
                blas.tried.c_str());
    return 0;
  }
  const std::vector<Shape> shapes = step_shapes(args.layers, args.batch);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  nlohmann::json rows = nlohmann::json::array();
  double flops = 0, ours_s = 0, blas_s = 0;
  bool wrong = false;
  std::printf("tb::cpu::gemm vs %s (core %s), %d threads, B=%lld, median of %d alternating repetitions\n",
              blas.path.c_str(), blas.core.empty() ? "n/a" : blas.core.c_str(), threads,
              static_cast<long long>(args.batch), args.reps);
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
    std::vector<float> c_ours(static_cast<size_t>(s.m * s.n)), c_blas(c_ours.size());
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    auto ours = [&] {
      tb::cpu::gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c_ours.data(), s.n);
    };
    auto theirs = [&] {
      blas.sgemm(kRowMajor, s.ta ? kTrans : kNoTrans, s.tb ? kTrans : kNoTrans, int(s.m), int(s.n), int(s.k), 1.0f,
                 a.data(), int(lda), b.data(), int(ldb), 0.0f, c_blas.data(), int(s.n));
    };
    auto seconds = [](const auto& fn) {
      const auto t0 = Clock::now();
      fn();
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    ours();  // untimed: buffers grown, pages touched, thread pools awake
    theirs();
    std::vector<double> t_ours, t_blas;
    for (int r = 0; r < args.reps; ++r) {
      if (r % 2 == 0) {
        t_ours.push_back(seconds(ours));
        t_blas.push_back(seconds(theirs));
      } else {
        t_blas.push_back(seconds(theirs));
        t_ours.push_back(seconds(ours));
      }
    }
    const double f = 2.0 * double(s.m) * double(s.n) * double(s.k);
    const double mo = median(t_ours), mb = median(t_blas);
    const tb::bench::GemmOperands ops{s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb};
    const double err_ours = tb::bench::gemm_error(ops, c_ours.data(), s.n, 64).worst;
    const double err_blas = tb::bench::gemm_error(ops, c_blas.data(), s.n, 64).worst;
    wrong = wrong || !(err_ours <= 1.0) || !(err_blas <= 1.0);
    flops += f;
    ours_s += mo;
    blas_s += mb;
    const std::string mnk = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    std::printf("  layer %d %-7s %-16s ours %7.1f GFLOP/s  blas %7.1f GFLOP/s  ours/blas %.3f%s\n", s.layer,
                s.gemm.c_str(), mnk.c_str(), f / mo / 1e9, f / mb / 1e9, mb / mo,
                err_ours <= 1.0 && err_blas <= 1.0 ? "" : "  WRONG RESULT");
    rows.push_back({{"layer", s.layer},
                    {"gemm", s.gemm},
                    {"trans", std::string(s.ta ? "T" : "N") + (s.tb ? "T" : "N")},
                    {"m_n_k", mnk},
                    {"gflop", f / 1e9},
                    {"ours_median_s", mo},
                    {"blas_median_s", mb},
                    {"ours_gflop_per_s", f / mo / 1e9},
                    {"blas_gflop_per_s", f / mb / 1e9},
                    {"ours_over_blas", mb / mo},
                    {"ours_error_over_bound", err_ours},
                    {"blas_error_over_bound", err_blas}});
  }
  const double share = blas_s / ours_s;
  std::printf("  step: ours %.1f GFLOP/s, blas %.1f GFLOP/s: ours = %.1f%% of the BLAS rate\n", flops / ours_s / 1e9,
              flops / blas_s / 1e9, 100.0 * share);
  if (!args.out.empty()) {
    const nlohmann::json j = {
        {"layers", args.layers},
        {"batch", args.batch},
        {"threads", threads},
        {"reps", args.reps},
        {"method", "each repetition runs both GEMMs back to back, order alternating; medians per shape; step = "
                   "sum of FLOPs / sum of median seconds"},
        {"blas_library", blas.path},
        {"openblas_core", blas.core},
        {"openblas_config", blas.config},
        {"OPENBLAS_CORETYPE", env_or_empty("OPENBLAS_CORETYPE")},
        {"OPENBLAS_L2_SIZE", env_or_empty("OPENBLAS_L2_SIZE")},
        {"our_gemm", tb::cpu::gemm_implementation()},
        {"units", {{"gflop_per_s", "GFLOP/s (1e9 FLOP/s)"}, {"median_s", "s"}, {"gflop", "1e9 FLOP"}}},
        {"step_gflop", flops / 1e9},
        {"step_ours_gflop_per_s", flops / ours_s / 1e9},
        {"step_blas_gflop_per_s", flops / blas_s / 1e9},
        {"step_ours_over_blas", share},
        {"results_checked", !wrong},
        {"gemms", rows}};
    try {
      tb::write_file_atomically(args.out, j.dump(2) + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tb_gemm_vs_blas: %s\n", e.what());
      return 1;
    }
  }
  if (wrong) {
    std::fprintf(stderr, "tb_gemm_vs_blas: FAILED: a result is outside fp32 rounding of the exact product (see the "
                         "WRONG RESULT lines)\n");
    return 1;
  }
  return 0;
}
