// harness/suite_file.cpp — reading suite files (suite.h) and expanding their
// entries into configurations: one per backend, per thread count for backends on
// CPU threads, per world size for multi-process ones and per --workers value.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/backend.h"
#include "harness/suite.h"

namespace tb {
namespace {

std::vector<std::string> tokens(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> t;
  for (std::string w; in >> w;) t.push_back(w);
  return t;
}

}  // namespace

namespace {

constexpr int kMaxIncludeDepth = 8;

// Why `path` cannot be a suite file, or "" (a missing file is left to the open's message).
// Only a regular file: a folder reads as empty ("no entries"), and /dev/zero or a FIFO
// would be read forever (found by fuzzing).
std::string not_a_suite_file(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) return "";
  if (std::filesystem::is_directory(st)) {
    return "is a directory (expected a .suite file, e.g. bench/suites/quick.suite)";
  }
  if (!std::filesystem::is_regular_file(st)) return "not a regular file";
  return "";
}

std::vector<SuiteEntry> parse_suite_at(const std::string& path, int depth) {
  if (depth == 0) {
    if (const std::string why = not_a_suite_file(path); !why.empty()) throw UsageError(path + ": " + why);
  }
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open suite file: " + std::strerror(errno));
  std::vector<SuiteEntry> entries;
  RunFlags defaults;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    // bench/peers/run_peers.py reads these files too: a quote or backslash would be shell
    // quoting to one reader and part of a word to the other, so neither takes one.
    if (const auto q = line.find_first_of("'\"\\"); q != std::string::npos) {
      throw UsageError(path + ":" + std::to_string(no) + ": quoting is not supported (found " + line[q] +
                       "): a suite line is split at whitespace, by trainbench and run_peers.py alike; write it "
                       "without quotes or backslashes");
    }
    const auto colon = line.find(':');
    std::vector<std::string> head = tokens(line.substr(0, colon == std::string::npos ? line.size() : colon));
    if (head.empty()) continue;
    const std::string where = path + ":" + std::to_string(no) + ": ";
    if (colon == std::string::npos || head.size() != 1) {
      throw UsageError(where + "expected 'NAME: --flag value ...' or 'defaults: --flag value ...'");
    }
    try {
      if (head[0] == "include") {
        const std::vector<std::string> rest = tokens(line.substr(colon + 1));
        if (rest.size() != 1) throw UsageError("include: expected one suite file name");
        if (depth >= kMaxIncludeDepth) {
          throw UsageError("include: more than " + std::to_string(kMaxIncludeDepth) + " levels (a file includes itself?)");
        }
        const std::filesystem::path inc = std::filesystem::path(path).parent_path() / rest[0];
        if (const std::string why = not_a_suite_file(inc.string()); !why.empty()) {
          throw UsageError("include: " + inc.string() + ": " + why);
        }
        std::vector<SuiteEntry> more = parse_suite_at(inc.string(), depth + 1);
        entries.insert(entries.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        continue;
      }
      if (head[0] == "defaults") {
        parse_run_flags(tokens(line.substr(colon + 1)), true, &defaults);
        continue;
      }
      check_workload_name("NAME", head[0]);
      SuiteEntry e{head[0], path, no, defaults};
      e.flags.config.workload = head[0];
      parse_run_flags(tokens(line.substr(colon + 1)), true, &e.flags);
      if (!e.flags.out.empty()) throw UsageError("--out is not allowed in a suite (use `suite --out DIR`)");
      validate_run_flags(&e.flags);
      entries.push_back(std::move(e));
    } catch (const UsageError& err) {
      throw UsageError(where + err.what());
    }
  }
  if (entries.empty()) throw UsageError(path + ": no entries (expected lines like 'NAME: --model linear ...')");
  return entries;
}

}  // namespace

std::vector<SuiteEntry> parse_suite(const std::string& path) { return parse_suite_at(path, 0); }

std::vector<RunConfig> expand_suite(const std::vector<SuiteEntry>& entries) {
  std::vector<RunConfig> configs;
  for (const SuiteEntry& e : entries) {
    for (const std::string& b : e.flags.backends) {
      const BackendTraits traits = traits_of(b);
      std::vector<int> threads = traits.cpu_threads ? e.flags.threads : std::vector<int>{1};
      std::sort(threads.begin(), threads.end());
      threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
      const std::vector<int> worlds = traits.multi_process() ? e.flags.world_sizes : std::vector<int>{1};
      // --workers is a knob, so every backend runs each value; one that does not honour
      // a value other than 1 becomes a skipped row (as in `run`). Shared-memory workers
      // are the row's world size.
      std::vector<int> workers = e.flags.workers;
      std::sort(workers.begin(), workers.end());
      workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
      for (int k : workers) {
        for (int w : worlds) {
          for (int t : threads) {
            RunConfig c = e.flags.config;
            c.backend = b;
            c.threads = t;
            c.workers = k;
            c.world_size = traits.parallelism == Parallelism::kSharedMemory ? k : w;
            configs.push_back(c);
          }
        }
      }
    }
  }
  return configs;
}

}  // namespace tb
