// tests/fuzz/fuzz_flags.cpp — fuzz target for tb::parse_run_flags + validate_run_flags
// (harness/cli.h): any argument list either yields a configuration within the flags'
// documented ranges or fails with UsageError.
#include <cmath>

#include "harness/cli.h"
#include "tests/fuzz/fuzz_targets.h"

namespace tb::fuzz {
namespace {

void check(const RunFlags& f) {
  const RunConfig& c = f.config;
  TB_FUZZ_REQUIRE(!f.backends.empty() && !f.threads.empty() && !f.world_sizes.empty());
  for (int t : f.threads) TB_FUZZ_REQUIRE(t >= 1);
  for (int w : f.world_sizes) TB_FUZZ_REQUIRE(w >= 1);
  for (int d : c.dp_devices) TB_FUZZ_REQUIRE(d >= 0);
  TB_FUZZ_REQUIRE(c.threads >= 1 && c.device >= 0 && !c.workload.empty());
  TB_FUZZ_REQUIRE(c.batch >= 1 && c.epochs >= 1 && c.reps >= 1 && c.warmup >= 0);
  TB_FUZZ_REQUIRE(std::isfinite(c.lr) && c.lr > 0 && c.momentum >= 0 && c.momentum < 1 && c.weight_decay >= 0);
  TB_FUZZ_REQUIRE(c.bucket_mb > 0 && c.comm_timeout_s > 0);
  TB_FUZZ_REQUIRE(c.model.layers.size() >= 2);
  for (int64_t l : c.model.layers) TB_FUZZ_REQUIRE(l >= 1);
  TB_FUZZ_REQUIRE(c.batches_per_epoch() >= 0 && c.rows_per_epoch() >= 0);
  (void)default_workload_name(c);
}

}  // namespace

int flags(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  for (bool lists : {false, true}) {
    try {
      RunFlags f;
      parse_run_flags(args, lists, &f);
      validate_run_flags(&f);
      check(f);
    } catch (const UsageError&) {
    }
  }
  return 0;
}

}  // namespace tb::fuzz
