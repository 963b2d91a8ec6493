// tests/harness/test_env_at_startup.cpp — TB_NVML_SAMPLE_MS, read later (on GPU
// machines only), is checked as `run` and `suite` start on any machine: a bad value is
// one line naming the variable and what it allows, exit 2, nothing written. Good values,
// unset and empty are taken as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "harness/gpu_telemetry.h"
#include "tests/shell.h"

namespace {

namespace fs = std::filesystem;
using tb::test::tmp;

// NAME set to VALUE (nullopt: unset) for the scope, then as it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::optional<std::string>& v) {
    if (v) ::setenv(name_, v->c_str(), 1);
    else ::unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

// What fn() throws as std::invalid_argument, or "" when it returns.
template <class F>
std::string refusal(F fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(EnvAtStartup, SampleIntervalIsAWholeNumberOfMillisecondsFrom1To1000) {
  {
    ScopedEnv unset("TB_NVML_SAMPLE_MS", std::nullopt);
    EXPECT_EQ(tb::sample_interval_ms(), 50);
  }
  for (const auto& [text, ms] : {std::pair<const char*, int>{"", 50}, {"1", 1}, {"7", 7}, {"1000", 1000}}) {
    ScopedEnv e("TB_NVML_SAMPLE_MS", text);
    EXPECT_EQ(tb::sample_interval_ms(), ms) << "'" << text << "'";
  }
  // Each of these was 50 ms in silence.
  for (const char* bad : {"abc", "0", "5000", "1001", "10ms", "-1", "1.5", " 7", "+7", "99999999999"}) {
    ScopedEnv e("TB_NVML_SAMPLE_MS", bad);
    EXPECT_EQ(refusal([] { (void)tb::sample_interval_ms(); }),
              std::string("TB_NVML_SAMPLE_MS: '") + bad +
                  "' is not allowed (allowed: a whole number of milliseconds, 1 to 1000; unset or empty: 50)");
  }
}

const char* kTiny = "--model linear --layers 8,1 --samples 200 --batch 50 --epochs 1 --warmup 0 --reps 1";

// `ASSIGN trainbench run ...` and `ASSIGN trainbench suite ...` exit 2 at once with one
// line containing `must`, and write nothing. The suite's entries run in this process
// (cpu-hogwild) and in ranks it launches (cpu-ddp; unavailable, a skipped row).
void expect_refused_at_startup(const std::string& assign, const std::string& must) {
  const std::string out = tmp("env-startup.csv"), dir = tmp("env-startup-suite"), suite = tmp("env-startup.suite");
  fs::remove(out);
  fs::remove(out + ".env.json");
  fs::remove_all(dir);
  std::ofstream(suite) << "h: " << kTiny << " --backends cpu-hogwild --workers 2 --threads 1\n"
                       << "d: " << kTiny << " --backends cpu-ddp --world-sizes 2 --threads 1\n";
  for (const std::string& cmd : {"run --backend cpu-hogwild --workers 2 " + std::string(kTiny) + " --out " + out,
                                 "suite " + suite + " --out " + dir}) {
    const tb::test::ShellResult r = tb::test::shell(assign + " timeout 100 " + TB_TRAINBENCH_EXE + " " + cmd);
    EXPECT_EQ(r.code, 2) << assign << " " << cmd << ": " << r.out;
    EXPECT_NE(r.out.find(must), std::string::npos) << assign << " " << cmd << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << assign << " " << cmd << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(out)) << assign;
  EXPECT_FALSE(fs::exists(out + ".env.json")) << assign;
  EXPECT_FALSE(fs::exists(dir)) << assign;
}

TEST(EnvAtStartup, ABadSampleIntervalIsBadInputOnAMachineWithoutAGpu) {
  for (const char* bad : {"abc", "0", "5000", "10ms"}) {
    expect_refused_at_startup(std::string("TB_NVML_SAMPLE_MS=") + bad,
                              std::string("trainbench: TB_NVML_SAMPLE_MS: '") + bad +
                                  "' is not allowed (allowed: a whole number of milliseconds, 1 to 1000");
  }
  // Unset, empty or in range: the run goes on.
  for (const char* good : {"", "7"}) {
    const std::string out = tmp("env-startup-ok.csv");
    fs::remove(out);
    const tb::test::ShellResult r = tb::test::shell(std::string("TB_NVML_SAMPLE_MS=") + good + " " +
                                                    TB_TRAINBENCH_EXE + " run --backend reference " + kTiny +
                                                    " --out " + out);
    EXPECT_EQ(r.code, 0) << good << ": " << r.out;
    EXPECT_TRUE(fs::exists(out)) << good;
  }
}

}  // namespace
