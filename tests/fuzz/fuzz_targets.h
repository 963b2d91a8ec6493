// tests/fuzz/fuzz_targets.h — the fuzz targets' entry functions: bytes in, 0 out. Bad
// input must end in the parser's own error (DataError, UsageError); anything else — another
// exception, a crash, a hang, a broken invariant (fuzz_require aborts) — is a bug.
// Built twice: as libFuzzer programs (TB_FUZZ=ON with clang, `make fuzz`) and into the
// normal build's corpus regression test (corpus_regression.cpp, gcc, every corpus file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tb::fuzz {

// datasets/csv_loader: the input is the CSV file, loaded as regression and classification,
// with the default and with a named target column.
int csv_loader(const uint8_t* data, size_t size);
// datasets/idx_loader: a 4-byte little-endian length L, then L bytes of the images file,
// then the labels file.
int idx_loader(const uint8_t* data, size_t size);
// tb::parse_suite (harness/suite.h) and expand_suite: the input is the suite file.
int suite(const uint8_t* data, size_t size);
// tb::parse_run_flags + validate_run_flags (harness/cli.h): one argument per line, parsed
// as `run` flags and as a suite line (lists allowed).
int flags(const uint8_t* data, size_t size);

struct Target {
  const char* name;  // also the corpus folder tests/fuzz/corpus/<name>/
  int (*run)(const uint8_t*, size_t);
};
inline constexpr Target kTargets[] = {
    {"csv_loader", csv_loader}, {"idx_loader", idx_loader}, {"suite", suite}, {"flags", flags}};

// An invariant the code promises but broke: say which, and abort (libFuzzer and the
// regression test both report the input).
[[noreturn]] inline void broken(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz: invariant broken at %s:%d: %s\n", file, line, what);
  std::abort();
}
#define TB_FUZZ_REQUIRE(cond) ((cond) ? (void)0 : ::tb::fuzz::broken(#cond, __FILE__, __LINE__))

// Writes the bytes to NAME in this process's scratch folder (under TMPDIR) and returns its
// path: the loaders under test read files.
std::string scratch_file(const std::string& name, const uint8_t* data, size_t size);

}  // namespace tb::fuzz
