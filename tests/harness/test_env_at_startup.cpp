// tests/harness/test_env_at_startup.cpp — TB_NVML_SAMPLE_MS and TB_FAULT, read later
// (on GPU machines; by the trainers that take faults, inside a configuration), are
// checked as `run` and `suite` start on any machine: a bad value is one line naming the
// variable and what it allows, exit 2, nothing written. Good values, unset and empty are
// taken as before.
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

#include "harness/fault_plan.h"
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

TEST(EnvAtStartup, FaultPlanTakesEachOfRankStepAndKindOnceInAnyOrder) {
  {
    ScopedEnv unset("TB_FAULT", std::nullopt);
    EXPECT_FALSE(tb::fault_from_env().armed());
  }
  {
    ScopedEnv empty("TB_FAULT", "");
    EXPECT_FALSE(tb::fault_from_env().armed());
  }
  struct Good {
    const char* text;
    int rank;
    int64_t step;
    const char* kind;
  };
  for (const Good& g : {Good{"rank=1,step=3,kind=throw", 1, 3, "throw"}, Good{"kind=hang,step=0,rank=2", 2, 0, "hang"},
                        Good{"rank=0,step=5,kind=setup", 0, 5, "setup"}, Good{"rank=1,step=3,kind=nan", 1, 3, "nan"},
                        Good{"rank=1,step=0,kind=exit", 1, 0, "exit"}, Good{"rank=3,step=007,kind=kill", 3, 7, "kill"},
                        Good{"rank=2147483647,step=9223372036854775807,kind=throw", 2147483647,
                             9223372036854775807LL, "throw"}}) {
    ScopedEnv e("TB_FAULT", g.text);
    tb::Fault f;
    ASSERT_EQ(refusal([&f] { f = tb::fault_from_env(); }), "") << g.text;
    EXPECT_TRUE(f.armed()) << g.text;
    EXPECT_EQ(f.rank, g.rank) << g.text;
    EXPECT_EQ(f.step, g.step) << g.text;
    EXPECT_EQ(f.kind, g.kind) << g.text;
  }
}

TEST(EnvAtStartup, AMalformedFaultPlanIsRefusedSayingWhatIsWrong) {
  // atoi read 'x' as rank 0, '3abc' as step 3; unknown keys and items without '=' were
  // skipped; a key given twice took the last value.
  const std::pair<const char*, const char*> cases[] = {
      {"rank=x,step=2,kind=throw", "rank 'x' is not a whole number >= 0"},
      {"rank=1,step=3abc,kind=throw", "step '3abc' is not a whole number >= 0"},
      {"rnk=1,step=2,kind=throw", "unknown key 'rnk'"},
      {"rank=1,step=2,kind=throw,verbose", "'verbose' is not key=value"},
      {"rank=1,step=2,kind=throw,", "'' is not key=value"},
      {"rank=1,,step=2,kind=throw", "'' is not key=value"},
      {"rank=1,step=2,kind=throw,step=3", "step given twice"},
      {"rank=1,rank=1,step=2,kind=throw", "rank given twice"},
      {"rank=1,step=2", "missing kind"},
      {"step=2,kind=throw", "missing rank"},
      {"rank=1,kind=throw", "missing step"},
      {"rank=-1,step=2,kind=throw", "rank '-1' is not a whole number >= 0"},
      {"rank=+1,step=2,kind=throw", "rank '+1' is not a whole number >= 0"},
      {"rank= 1,step=2,kind=throw", "rank ' 1' is not a whole number >= 0"},
      {"rank=,step=2,kind=throw", "rank '' is not a whole number >= 0"},
      {"rank=2147483648,step=2,kind=throw", "rank '2147483648' is not a whole number >= 0"},
      {"rank=1,step=9223372036854775808,kind=throw", "step '9223372036854775808' is not a whole number >= 0"},
      {"rank=1,step=2,kind=bogus", "unknown kind 'bogus'"},
      {"rank=1,step=2,kind=", "unknown kind ''"},
      {"rank=1,step=0,kind=throw", "step 0 (before joining the job) is for kind exit|kill|hang only"},
      {"RANK=1,step=2,kind=throw", "unknown key 'RANK'"},
  };
  for (const auto& [text, why] : cases) {
    ScopedEnv e("TB_FAULT", text);
    EXPECT_EQ(refusal([] { (void)tb::fault_from_env(); }),
              std::string("TB_FAULT: ") + why +
                  " (allowed: rank=R,step=S,kind=throw|exit|kill|hang|nan|setup, each once, R and S whole numbers "
                  ">= 0, S >= 1 unless kind is exit|kill|hang; got '" + text + "')");
  }
}

const char* kTiny = "--model linear --layers 8,1 --samples 200 --batch 50 --epochs 1 --warmup 0 --reps 1";

// `ASSIGN trainbench run ...` and `ASSIGN trainbench suite ...` exit 2 at once with one
// line containing `must`, and write nothing. The suite's entries run the backends that
// read the variables later (cpu-hogwild takes faults in this process, cpu-ddp in ranks
// it launches; unavailable, it is a skipped row): the check must not wait for them.
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

TEST(EnvAtStartup, AMalformedFaultPlanIsBadInputBeforeAnyConfigurationRuns) {
  // Before: rank=x injected the fault on rank 0; a plan the trainers refused became a
  // `failed:` row (cpu-hogwild) or a job whose ranks never formed (cpu-ddp), exit 1.
  expect_refused_at_startup("TB_FAULT=rank=x,step=2,kind=throw", "trainbench: TB_FAULT: rank 'x' is not a whole");
  expect_refused_at_startup("TB_FAULT=rnk=1,step=2,kind=throw", "trainbench: TB_FAULT: unknown key 'rnk'");
  expect_refused_at_startup("TB_FAULT=rank=1,step=3abc,kind=throw", "trainbench: TB_FAULT: step '3abc' is not a");
  expect_refused_at_startup("TB_FAULT=rank=1,step=2,kind=bogus", "trainbench: TB_FAULT: unknown kind 'bogus'");
  // A backend that takes no faults does not excuse it: the variable is wrong either way.
  const std::string out = tmp("env-startup-ref.csv");
  fs::remove(out);
  const tb::test::ShellResult r = tb::test::shell(std::string("TB_FAULT=rank=1,step2,kind=throw ") +
                                                  TB_TRAINBENCH_EXE + " run --backend reference " + kTiny +
                                                  " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("TB_FAULT: 'step2' is not key=value"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace

namespace {

// Help runs nothing: a bad variable does not stand between a user and the flags (it was
// exit 2 with the variable's message, for `run --help`, `suite --help` and `help run`).
TEST(EnvAtStartup, HelpPrintsTheFlagsWhateverTheVariables) {
  for (const char* assign : {"TB_FAULT=rank=x", "TB_NVML_SAMPLE_MS=0", "TB_CPU_GEMM_KERNEL=bogus"}) {
    for (const char* cmd : {"run --help", "suite --help", "help run", "run --model linear -h"}) {
      const tb::test::ShellResult r =
          tb::test::shell(std::string(assign) + " " + TB_TRAINBENCH_EXE + " " + cmd + " 2>&1");
      EXPECT_EQ(r.code, 0) << assign << " " << cmd << ": " << r.out;
      EXPECT_NE(r.out.find("usage: trainbench "), std::string::npos) << assign << " " << cmd << ": " << r.out;
    }
  }
}

}  // namespace

namespace {

// An error quoting a value that holds a newline is still one line (it printed the newline).
TEST(EnvAtStartup, AnErrorQuotingANewlineIsOneLine) {
  const std::string out = tmp("env-startup-newline.csv");
  fs::remove(out);
  for (const std::string& cmd :
       {std::string("TB_FAULT=\"$(printf 'rank=1\\nstep=2,kind=throw')\" ") + TB_TRAINBENCH_EXE +
            " run --backend reference " + kTiny + " --out " + out,
        std::string(TB_TRAINBENCH_EXE) + " run --backend reference " + kTiny +
            " --threads \"$(printf '2\\n3')\" --out " + out}) {
    const tb::test::ShellResult r = tb::test::shell(cmd + " 2>&1");
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("\\n"), std::string::npos) << cmd << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
