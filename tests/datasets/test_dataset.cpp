// tests/datasets/test_dataset.cpp — the --dataset value (parse_dataset_arg) and the
// dispatch from a spec to a generator or loader (load_dataset).
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

#include "datasets/dataset.h"
#include "datasets/synthetic.h"

namespace tb {
namespace {

TEST(Dataset, TaskNames) {
  EXPECT_STREQ(task_name(Task::kRegression), "regression");
  EXPECT_STREQ(task_name(Task::kClassification), "classification");
}

TEST(Dataset, ParsesEveryForm) {
  EXPECT_EQ(parse_dataset_arg("synthetic").kind, "synthetic");
  const DatasetSpec r = parse_dataset_arg("synthetic-regression");
  EXPECT_EQ(r.kind, "synthetic-regression");
  EXPECT_EQ(r.task, Task::kRegression);
  const DatasetSpec c = parse_dataset_arg("synthetic-classification");
  EXPECT_EQ(c.kind, "synthetic-classification");
  EXPECT_EQ(c.task, Task::kClassification);
  const DatasetSpec csv = parse_dataset_arg("csv:/data/house prices.csv");
  EXPECT_EQ(csv.kind, "csv");
  EXPECT_EQ(csv.path, "/data/house prices.csv");
  const DatasetSpec idx = parse_dataset_arg("idx:/m/train-images,/m/train-labels");
  EXPECT_EQ(idx.kind, "idx");
  EXPECT_EQ(idx.path, "/m/train-images");
  EXPECT_EQ(idx.labels_path, "/m/train-labels");
  EXPECT_EQ(idx.task, Task::kClassification);
}

void expect_invalid(const std::string& value, const std::string& fragment) {
  try {
    parse_dataset_arg(value);
    ADD_FAILURE() << "no error for '" << value << "'";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    EXPECT_NE(msg.find("(allowed: synthetic, synthetic-regression, synthetic-classification, csv:PATH, "
                       "idx:IMAGES,LABELS)"),
              std::string::npos)
        << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
}

TEST(Dataset, RejectsUnknownAndEmpty) {
  expect_invalid("foo", "--dataset: unknown value 'foo'");
  expect_invalid("", "--dataset: unknown value ''");
  expect_invalid("Synthetic", "unknown value 'Synthetic'");
  expect_invalid("csv:", "empty PATH");
  expect_invalid("idx:", "missing ',LABELS'");
  expect_invalid("idx:/a", "missing ',LABELS'");
  expect_invalid("idx:,/b", "empty IMAGES");
  expect_invalid("idx:/a,", "empty LABELS");
}

TEST(Dataset, LoadDatasetDispatchesSynthetic) {
  DatasetSpec s = parse_dataset_arg("synthetic");
  s.task = Task::kRegression;  // what the caller does for a linear model
  s.n = 64;
  s.d = 3;
  s.o = 2;
  s.seed = 9;
  const Dataset ds = load_dataset(s);
  EXPECT_EQ(ds.task, Task::kRegression);
  EXPECT_EQ(ds.description, "synthetic-regression(seed=9,noise=0.1)");
  EXPECT_EQ(dataset_description(s), ds.description);  // the same words without the data
  EXPECT_EQ(ds.x, make_synthetic(s).x);

  DatasetSpec c = parse_dataset_arg("synthetic-classification");
  c.n = 64;
  c.d = 3;
  c.o = 4;
  const Dataset dc = load_dataset(c);
  EXPECT_EQ(dc.task, Task::kClassification);
  EXPECT_EQ(dc.labels.size(), 64u);
  EXPECT_EQ(dc.description, "synthetic-classification(seed=1)");
  EXPECT_EQ(dataset_description(c), dc.description);
}

TEST(Dataset, LoadDatasetDispatchesCsv) {
  const std::string path = std::string(TB_TEST_TMPDIR) + "/dataset_dispatch.csv";
  std::ofstream(path) << "a,k,b\n1,2,3\n4,0,6\n";
  DatasetSpec s = parse_dataset_arg("csv:" + path);
  s.task = Task::kClassification;
  s.o = 3;
  s.target = std::string("k");  // not = "k": GCC 12 -O3 warns falsely (-Wrestrict, PR105651)
  const Dataset ds = load_dataset(s);
  EXPECT_EQ(ds.o, 3);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(ds.x, (std::vector<float>{1, 3, 4, 6}));
  EXPECT_EQ(ds.description, "csv:" + path);
  EXPECT_EQ(dataset_description(s), ds.description);
}

TEST(Dataset, LoadDatasetUnknownKindThrows) {
  DatasetSpec s;
  s.kind = "parquet";
  EXPECT_THROW(load_dataset(s), std::invalid_argument);
}

}  // namespace
}  // namespace tb
