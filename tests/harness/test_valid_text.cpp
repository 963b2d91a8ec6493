// tests/harness/test_valid_text.cpp — whatever bytes come in, what trainbench writes
// is valid UTF-8 and valid JSON: the UTF-8 checks (harness/utf8.h), JSON through
// nlohmann with invalid bytes replaced and no NaN/Inf literals (harness/json_out.h),
// a workload name that is not UTF-8 refused (exit 2, nothing written), and env.json /
// workload.json from a command line and a file name with odd bytes read by Python.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/json_out.h"
#include "harness/utf8.h"
#include "tests/shell.h"

namespace tb {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const char* kSmall = "--model linear --layers 8,1 --samples 200 --batch 50 --epochs 1 --warmup 0 --reps 1 ";

std::string fresh(const std::string& name) {
  const fs::path dir = fs::path(TB_TEST_TMPDIR) / ("text_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(Utf8, FindsTheFirstIllFormedByte) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x88\x92 \xF0\x9F\x98\x80"));
  EXPECT_EQ(first_invalid_utf8("caf\xE9"), 3u);             // Latin-1 é
  EXPECT_EQ(first_invalid_utf8("a\xC0\x80"), 1u);           // overlong NUL
  EXPECT_EQ(first_invalid_utf8("ab\xED\xA0\x80"), 2u);      // a surrogate
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);    // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("x\xE2\x88"), 1u);           // truncated
  EXPECT_EQ(to_valid_utf8("caf\xE9!"), "caf\xEF\xBF\xBD!");
  EXPECT_EQ(to_valid_utf8("ok"), "ok");
}

TEST(JsonOut, AnyBytesAndNonFiniteNumbersGiveValidJson) {
  Json j;
  j["bytes"] = std::string("caf\xE9 \"q\" \\ \x01 tab\t");
  j["nan"] = std::numeric_limits<double>::quiet_NaN();
  j["inf"] = -std::numeric_limits<double>::infinity();
  const std::string text = json_text(j);
  EXPECT_TRUE(is_valid_utf8(text)) << text;
  nlohmann::json back;
  ASSERT_NO_THROW(back = nlohmann::json::parse(text)) << text;  // strict: no NaN literals, UTF-8 only
  EXPECT_TRUE(back["nan"].is_null());
  EXPECT_TRUE(back["inf"].is_null());
  EXPECT_EQ(back["bytes"], "caf\xEF\xBF\xBD \"q\" \\ \x01 tab\t");
}

TEST(ValidText, AWorkloadNameThatIsNotUtf8IsRefusedAndNothingIsWritten) {
  const std::string dir = fresh("utf8");
  const std::string out = dir + "/r.csv";
  test::ShellResult r = test::trainbench(std::string("run ") + kSmall + "--workload \"$(printf 'caf\\351')\" --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--workload: not valid UTF-8 (byte 0xE9 at offset 3)"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".env.json"));
  // A suite entry's NAME: the same, naming the file and line; no output folder.
  std::ofstream(dir + "/t.suite") << "ok: " << kSmall << "\ncaf\xE9: " << kSmall << "\n";
  r = test::trainbench("suite " + dir + "/t.suite --out " + dir + "/out");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("t.suite:2: NAME: not valid UTF-8 (byte 0xE9 at offset 3)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

TEST(ValidText, OddBytesOnTheCommandLineStillGiveValidJsonAndUtf8Csv) {
  const std::string dir = fresh("odd");
  // The --out path (so the command line env.json records) and the dataset's file name
  // (so the CSV's dataset cell and export's workload.json) carry bytes that are not UTF-8,
  // a control character, a quote and a backslash.
  const std::string odd = "odd-\xE9-\x01-\"q\"-\\";
  const std::string data = dir + "/" + odd + ".csv";
  std::ofstream(data) << "a,b,y\n1,2,3\n4,5,6\n7,8,9\n";
  ::setenv("TB_ODD_OUT", (dir + "/" + odd + "-results.csv").c_str(), 1);
  ::setenv("TB_ODD_DATA", data.c_str(), 1);
  const test::ShellResult r = test::trainbench(
      "run --model linear --layers 2,1 --batch 2 --epochs 1 --warmup 0 --reps 1 --dataset \"csv:$TB_ODD_DATA\" "
      "--out \"$TB_ODD_OUT\"");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string env_path = std::string(std::getenv("TB_ODD_OUT")) + ".env.json";
  const std::string env = slurp(env_path);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(env)) << env;
  EXPECT_NE(j["command_line"].get<std::string>().find("odd-\xEF\xBF\xBD-\x01-\"q\"-\\"), std::string::npos);
  const std::string csv = slurp(std::getenv("TB_ODD_OUT"));
  EXPECT_TRUE(is_valid_utf8(csv)) << csv;
  const test::ShellResult ex = test::trainbench(
      "export --model linear --layers 2,1 --batch 2 --dataset \"csv:$TB_ODD_DATA\" --out " + dir + "/exp");
  ASSERT_EQ(ex.code, 0) << ex.out;
  nlohmann::json w;
  ASSERT_NO_THROW(w = nlohmann::json::parse(slurp(dir + "/exp/workload.json")));
  EXPECT_EQ(w["dataset"].get<std::string>().find("odd-\xEF\xBF\xBD-"), 0u + std::string("csv:").size() + dir.size() + 1);
  // And as the reports read them: Python's json, strict about UTF-8 (exit 99: no python3 here).
  const test::ShellResult py = test::shell(
      "command -v python3 >/dev/null || exit 99; python3 -c 'import json, sys\n"
      "for p in sys.argv[1:]: json.load(open(p, encoding=\"utf-8\"))' \"$TB_ODD_OUT.env.json\" " + dir +
      "/exp/workload.json");
  if (py.code != 99) {
    EXPECT_EQ(py.code, 0) << py.out;
  }
}

}  // namespace
}  // namespace tb
