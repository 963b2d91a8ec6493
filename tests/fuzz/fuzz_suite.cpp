// tests/fuzz/fuzz_suite.cpp — fuzz target for tb::parse_suite and expand_suite
// (harness/suite.h): any bytes as a suite file either parse into valid entries (each
// one validated, expanding to configurations with sane threads and world sizes) or fail
// with UsageError; never a crash, a hang or unbounded work (include cycles).
#include "harness/suite.h"
#include "tests/fuzz/fuzz_targets.h"

namespace tb::fuzz {

int suite(const uint8_t* data, size_t size) {
  // A short name, so `include: s` (itself) is within the fuzzer's reach.
  const std::string path = scratch_file("s", data, size);
  try {
    const std::vector<SuiteEntry> entries = parse_suite(path);
    TB_FUZZ_REQUIRE(!entries.empty());
    size_t expected = 0;
    for (const SuiteEntry& e : entries) {
      TB_FUZZ_REQUIRE(!e.name.empty() && e.line >= 1 && !e.flags.backends.empty());
      TB_FUZZ_REQUIRE(!e.flags.threads.empty() && !e.flags.world_sizes.empty());
      expected += e.flags.backends.size();
    }
    const std::vector<RunConfig> configs = expand_suite(entries);
    TB_FUZZ_REQUIRE(configs.size() >= expected);
    for (const RunConfig& c : configs) {
      TB_FUZZ_REQUIRE(c.threads >= 1 && c.world_size >= 1 && c.batch >= 1 && c.epochs >= 1 && c.reps >= 1);
      TB_FUZZ_REQUIRE(c.batches_per_epoch() >= 0 && c.rows_per_epoch() >= 0);
    }
  } catch (const UsageError&) {
  }
  return 0;
}

}  // namespace tb::fuzz
