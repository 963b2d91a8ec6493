// tests/datasets/test_csv_loader.cpp — numeric CSV loading: happy paths (regression,
// classification, target by name or last column, CRLF) with exact values, and every
// error message naming the file and the line.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "datasets/csv_loader.h"

namespace tb {
namespace {

// A file under TB_TEST_TMPDIR named after the running test (unique per test).
std::string write_tmp(const std::string& suffix, const std::string& content) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string path = std::string(TB_TEST_TMPDIR) + "/csv_" + info->test_suite_name() + "_" + info->name() +
                           suffix + ".csv";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
  return path;
}

// Runs load_csv, expecting a DataError whose message contains every fragment.
void expect_error(const std::string& path, const std::string& target, Task task, int64_t classes,
                  std::initializer_list<std::string> fragments) {
  try {
    load_csv(path, target, task, classes);
    ADD_FAILURE() << "no DataError for " << path;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

TEST(CsvLoader, RegressionDefaultTargetIsLastColumn) {
  const std::string p = write_tmp("", "a,b,price\n1,2.5,3\n-4, 5e-1 ,+6.25\n0.1,0,-0\n\n\n");
  const Dataset ds = load_csv(p, "", Task::kRegression, 0);
  EXPECT_EQ(ds.task, Task::kRegression);
  EXPECT_EQ(ds.n, 3);
  EXPECT_EQ(ds.d, 2);
  EXPECT_EQ(ds.o, 1);
  EXPECT_EQ(ds.x, (std::vector<float>{1.0f, 2.5f, -4.0f, 0.5f, 0.1f, 0.0f}));
  EXPECT_EQ(ds.y, (std::vector<float>{3.0f, 6.25f, -0.0f}));
  EXPECT_TRUE(ds.labels.empty());
  EXPECT_EQ(ds.description, "csv:" + p);
}

TEST(CsvLoader, TargetByNameInTheMiddle) {
  const std::string p = write_tmp("", " a , price ,c\n1,10,2\n3,20,4\n");
  const Dataset ds = load_csv(p, "price", Task::kRegression, 0);
  EXPECT_EQ(ds.n, 2);
  EXPECT_EQ(ds.d, 2);
  EXPECT_EQ(ds.x, (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
  EXPECT_EQ(ds.y, (std::vector<float>{10.0f, 20.0f}));
}

TEST(CsvLoader, ClassificationWithCrlfAndNoFinalNewline) {
  const std::string p = write_tmp("", "label,x1,x2\r\n2,0.25,1\r\n0,-1,3\r\n9.0,7,8");
  const Dataset ds = load_csv(p, "label", Task::kClassification, 10);
  EXPECT_EQ(ds.task, Task::kClassification);
  EXPECT_EQ(ds.n, 3);
  EXPECT_EQ(ds.d, 2);
  EXPECT_EQ(ds.o, 10);
  EXPECT_EQ(ds.x, (std::vector<float>{0.25f, 1.0f, -1.0f, 3.0f, 7.0f, 8.0f}));
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{2, 0, 9}));
  EXPECT_TRUE(ds.y.empty());
}

TEST(CsvLoader, MissingFile) {
  expect_error(std::string(TB_TEST_TMPDIR) + "/does_not_exist.csv", "", Task::kRegression, 0,
               {"does_not_exist.csv: no such file or cannot open"});
}

TEST(CsvLoader, RaggedRow) {
  const std::string p = write_tmp("", "a,b,c,d,e\n1,2,3,4,5\n1,2,3,4,5\n1,2,3,4,5\n1,2,3,4,5\n1,2,3,4,5\n1,2,3,4\n");
  expect_error(p, "", Task::kRegression, 0, {p + ":7: expected 5 cells, got 4"});
}

TEST(CsvLoader, NonNumericCell) {
  const std::string p = write_tmp("", "a,b,c\n1,2,3\n4,abc,6\n");
  expect_error(p, "", Task::kRegression, 0, {p + ":3: cell 2 ('abc') is not a number"});
}

TEST(CsvLoader, PartlyNumericAndEmptyCells) {
  expect_error(write_tmp("_a", "a,b\n1,2x\n"), "", Task::kRegression, 0, {":2: cell 2 ('2x') is not a number"});
  expect_error(write_tmp("_b", "a,b\n1,\n"), "", Task::kRegression, 0, {":2: cell 2 ('') is not a number"});
  expect_error(write_tmp("_c", "a,b\n1,+-2\n"), "", Task::kRegression, 0, {":2: cell 2 ('+-2') is not a number"});
  expect_error(write_tmp("_d", "a,b\n1,nan\n"), "", Task::kRegression, 0, {":2: cell 2 ('nan') is not a finite"});
  expect_error(write_tmp("_e", "a,b\n1e39,1\n"), "", Task::kRegression, 0, {":2: cell 1 ('1e39') is not a finite"});
}

TEST(CsvLoader, TargetNotFound) {
  const std::string p = write_tmp("", "a,b,c\n1,2,3\n");
  expect_error(p, "price", Task::kRegression, 0, {p + ":1: target column 'price' not found (columns: a, b, c)"});
}

TEST(CsvLoader, LabelNotAnInteger) {
  const std::string p = write_tmp("", "x,y\n1,1\n1,2\n1,3\n1,0\n1,1\n1,2\n1,3\n1,3.5\n");
  expect_error(p, "", Task::kClassification, 10, {p + ":9: label 3.5 is not an integer"});
}

TEST(CsvLoader, LabelOutOfRange) {
  const std::string p = write_tmp("", "x,y\n1,1\n1,2\n1,3\n1,0\n1,1\n1,2\n1,3\n1,12\n");
  expect_error(p, "", Task::kClassification, 10, {p + ":9: label 12 out of range [0, 10)"});
  const std::string q = write_tmp("_neg", "x,y\n1,-1\n");
  expect_error(q, "", Task::kClassification, 10, {q + ":2: label -1 out of range [0, 10)"});
}

TEST(CsvLoader, NoDataRows) {
  const std::string p = write_tmp("", "a,b,c\n\n");
  expect_error(p, "", Task::kRegression, 0, {p + ": no data rows"});
}

TEST(CsvLoader, EmptyFileAndSingleColumn) {
  const std::string p = write_tmp("_empty", "");
  expect_error(p, "", Task::kRegression, 0, {p + ":1: missing header row"});
  const std::string q = write_tmp("_one", "y\n1\n");
  expect_error(q, "", Task::kRegression, 0, {q + ":1: need at least 2 columns"});
}

TEST(CsvLoader, BlankLineInTheMiddle) {
  const std::string p = write_tmp("", "a,b\n1,2\n\n3,4\n");
  expect_error(p, "", Task::kRegression, 0, {p + ":3: empty line"});
}

TEST(CsvLoader, ClassificationNeedsClasses) {
  const std::string p = write_tmp("", "a,b\n1,0\n");
  EXPECT_THROW(load_csv(p, "", Task::kClassification, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tb
