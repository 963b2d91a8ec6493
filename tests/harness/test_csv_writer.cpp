// tests/harness/test_csv_writer.cpp — rows are whole, quoted, and schemas never mix.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness/csv_writer.h"

namespace tb {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tmp(const std::string& name) {
  const std::string p = std::string(TB_TEST_TMPDIR) + "/" + name;
  std::remove(p.c_str());
  return p;
}

TEST(CsvWriter, QuotesFieldsWithCommasAndQuotes) {
  EXPECT_EQ(csv_line({"a", "b,c", "say \"hi\"", ""}), "a,\"b,c\",\"say \"\"hi\"\"\",\n");
}

TEST(CsvWriter, CreatesWithHeaderThenAppends) {
  const std::string p = tmp("w1.csv");
  {
    CsvWriter w(p, {"x", "y"});
    w.append({"1", "2"});
  }
  {
    CsvWriter w(p, {"x", "y"});  // same header: append, header not repeated
    w.append({"3", "4"});
  }
  EXPECT_EQ(slurp(p), "x,y\n1,2\n3,4\n");
}

TEST(CsvWriter, RefusesAFileWithAnotherHeaderAndLeavesItIntact) {
  const std::string p = tmp("w2.csv");
  std::ofstream(p) << "other,header\n1,2\n";
  try {
    CsvWriter w(p, {"x", "y"});
    FAIL() << "expected CsvError";
  } catch (const CsvError& e) {
    EXPECT_NE(std::string(e.what()).find("different header"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
  }
  EXPECT_EQ(slurp(p), "other,header\n1,2\n");
}

TEST(CsvWriter, AFileStartingWithABlankLineIsRefusedNotWiped) {
  const std::string p = tmp("w5.csv");
  std::ofstream(p) << "\nimportant,data\n1,2\n";
  EXPECT_THROW(CsvWriter(p, {"x", "y"}), CsvError);
  EXPECT_EQ(slurp(p), "\nimportant,data\n1,2\n");
}

TEST(CsvWriter, AFileWithoutAFinalNewlineIsRefused) {
  const std::string p = tmp("w6.csv");
  std::ofstream(p) << "x,y\n1,2";  // a row would be glued onto "1,2"
  try {
    CsvWriter w(p, {"x", "y"});
    FAIL() << "expected CsvError";
  } catch (const CsvError& e) {
    EXPECT_NE(std::string(e.what()).find("newline"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(p), "x,y\n1,2");
}

TEST(CsvWriter, FieldsRoundTripThroughTheParser) {
  const std::vector<std::string> f = {"a", "b,c", "say \"hi\"", "", "failed: x, y"};
  std::string line = csv_line(f);
  line.pop_back();  // newline
  EXPECT_EQ(csv_fields(line), f);
}

TEST(CsvWriter, RejectsRowsOfTheWrongWidth) {
  const std::string p = tmp("w3.csv");
  CsvWriter w(p, {"x", "y"});
  EXPECT_THROW(w.append({"1"}), CsvError);
  EXPECT_EQ(slurp(p), "x,y\n");
}

TEST(CsvWriter, UnwritablePathIsAnError) {
  EXPECT_THROW(CsvWriter("/nonexistent-dir/x.csv", {"a"}), CsvError);
}

TEST(CsvWriter, AtomicWriteReplacesWholeFile) {
  const std::string p = tmp("w4.json");
  write_file_atomically(p, "{\"a\": 1}\n");
  write_file_atomically(p, "{\"b\": 2}\n");
  EXPECT_EQ(slurp(p), "{\"b\": 2}\n");
}

}  // namespace
}  // namespace tb
