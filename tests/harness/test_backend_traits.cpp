// tests/harness/test_backend_traits.cpp — backends own their facts: every knob a
// backend does not honour makes the configuration a `skipped:` row naming the flag
// (decided from its traits, before anything is allocated, in `run` and in suites
// alike); suite expansion follows the traits; the Job of one process is the identity.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/job.h"
#include "harness/suite.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using namespace tb;

using tb::test::tmp;  // tests/shell.h

std::vector<std::string> lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Every (backend, knob) pair: set alone, the knob is refused by name exactly when the
// backend's traits do not list it.
TEST(BackendTraits, AKnobIsRefusedByNameExactlyWhenTheBackendDoesNotHonourIt) {
  int refused = 0, honoured = 0;
  for (const auto& b : all_backends()) {
    for (const KnobDef& k : knob_defs()) {
      RunConfig c;
      c.backend = b->name();
      switch (k.bit) {
        case kKnobTf32: c.precision = "tf32"; break;
        case kKnobCudaGraph: c.cuda_graph = true; break;
        case kKnobHostPlacement: c.data_placement = "host"; break;
        case kKnobDevice: c.device = 1; break;
        case kKnobDpDevices: c.dp_devices = {0, 0}; break;
        case kKnobDpMode: c.dp_mode = "persistent"; break;
        case kKnobBucket: c.bucket_mb = 4; break;
        case kKnobNoOverlap: c.overlap = false; break;
        case kKnobDeterministic: c.deterministic = true; break;
        case kKnobWorkers: c.workers = 2; break;
        case kKnobNoPhaseTiming: c.phase_timing = false; break;
        default: FAIL() << "knob " << k.flag << " has no case here: add one";
      }
      ASSERT_TRUE(k.is_set(c)) << k.flag;
      const std::string why = b->unsupported(c);
      const std::string want = std::string(k.flag) + " does not apply to " + b->name() + " (it applies to: ";
      if (b->traits().knobs & k.bit) {
        EXPECT_EQ(why.find(" does not apply to "), std::string::npos) << b->name() << " " << k.flag << ": " << why;
        ++honoured;
      } else {
        EXPECT_EQ(why.rfind(want, 0), 0u) << b->name() << " " << k.flag << ": " << why;
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(honoured, 0);
}

TEST(BackendTraits, DefaultsAreNoKnobAndTheTraitsSayWhatTheBackendIs) {
  for (const auto& b : all_backends()) {
    RunConfig c;
    c.backend = b->name();
    for (const KnobDef& k : knob_defs()) EXPECT_FALSE(k.is_set(c)) << k.flag;
    const BackendTraits t = b->traits();
    // A scaling base is a one-replica backend that exists.
    if (!t.scaling_base.empty()) {
      ASSERT_NE(find_backend(t.scaling_base), nullptr) << b->name();
      EXPECT_EQ(traits_of(t.scaling_base).parallelism, Parallelism::kNone) << b->name();
      EXPECT_NE(t.parallelism, Parallelism::kNone) << b->name();
    }
    if (t.one_gpu_per_rank) {
      EXPECT_TRUE(t.multi_process() && t.device == DeviceKind::kGpu) << b->name();
    }
  }
  int oracles = 0;
  for (const auto& b : all_backends()) oracles += b->traits().oracle;
  EXPECT_EQ(oracles, 1);
  EXPECT_THROW(traits_of("no-such-backend"), std::invalid_argument);
}

// Expansion: thread lists only for CPU-thread backends, world sizes only for
// multi-process ones; the others run once at 1.
TEST(BackendTraits, SuiteExpansionFollowsTheTraits) {
  std::string names;
  for (const auto& b : all_backends()) names += (names.empty() ? "" : ",") + b->name();
  const std::string path = tmp("traits.suite");
  std::ofstream(path) << "w: --model linear --layers 4,1 --samples 64 --batch 16 --threads 1,2 --world-sizes 1,3 "
                         "--backends "
                      << names << "\n";
  const std::vector<RunConfig> configs = expand_suite(parse_suite(path));
  size_t want = 0;
  for (const auto& b : all_backends()) {
    const BackendTraits t = b->traits();
    const size_t threads = t.cpu_threads ? 2 : 1, worlds = t.multi_process() ? 2 : 1;
    want += threads * worlds;
    size_t seen = 0;
    for (const RunConfig& c : configs) {
      if (c.backend != b->name()) continue;
      ++seen;
      if (!t.cpu_threads) {
        EXPECT_EQ(c.threads, 1) << c.backend;
      }
      if (!t.multi_process()) {
        EXPECT_EQ(c.world_size, 1) << c.backend;
      }
    }
    EXPECT_EQ(seen, threads * worlds) << b->name();
  }
  EXPECT_EQ(configs.size(), want);
}

// `run` and a suite give the same outcome for a knob that does not apply: a skipped
// row naming the flag, exit 0; the suite goes on with the next configuration.
TEST(BackendTraits, RunAndSuiteSkipAnInapplicableKnobTheSameWay) {
  const char* small = " --model linear --layers 8,1 --samples 64 --batch 16 --epochs 1 --warmup 0 --reps 2";
  const std::string out = tmp("knob-run.csv");
  const test::ShellResult r =
      test::trainbench(std::string("run --backend cpu-omp --cuda-graph") + small + " --out " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  std::vector<std::string> l = lines(out);
  ASSERT_EQ(l.size(), 2u) << r.out;  // header + one skipped row, not one per repetition
  EXPECT_NE(l[1].find("skipped: --cuda-graph does not apply to cpu-omp (it applies to: "), std::string::npos) << l[1];

  const std::string suite = tmp("knob.suite");
  std::ofstream(suite) << "a: " << small << " --backends reference,cpu-omp --threads 1 --data-placement host\n"
                       << "b: " << small << " --backends cpu-omp --threads 1\n";
  const std::string dir = tmp("knob-suite");
  const test::ShellResult s = test::trainbench("suite " + suite + " --out " + dir);
  EXPECT_EQ(s.code, 0) << s.out;
  l = lines(dir + "/results.csv");
  ASSERT_EQ(l.size(), 1u + 1 + 1 + 2) << s.out;  // header, two skipped rows, entry b's two repetitions
  EXPECT_NE(l[1].find("skipped: --data-placement host does not apply to reference"), std::string::npos) << l[1];
  EXPECT_NE(l[2].find("skipped: --data-placement host does not apply to cpu-omp"), std::string::npos) << l[2];
  EXPECT_NE(l[3].find(",ok"), std::string::npos) << l[3];
}

// Rank 0 of 1: every reduction is the identity.
TEST(Job, OneProcessIsRankZeroOfOne) {
  Job job;
  EXPECT_EQ(job.rank(), 0);
  EXPECT_EQ(job.size(), 1);
  EXPECT_TRUE(job.root());
  EXPECT_FALSE(job.multi_rank());
  EXPECT_EQ(job.max(2.5), 2.5);
  EXPECT_EQ(job.sum(-1.5), -1.5);
  double v[2] = {3, 4};
  job.max(v, 2);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 4);
  EXPECT_TRUE(job.all_ok(true));
  EXPECT_FALSE(job.all_ok(false));
  EXPECT_EQ(job.params_disagree({1.f, 2.f}), "");
  EXPECT_EQ(job.world(), nullptr);
}

}  // namespace
