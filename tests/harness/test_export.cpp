// tests/harness/test_export.cpp — `trainbench export`: the files hold exactly the
// dataset, initial parameters and epoch orders the backends use (compared with
// load_dataset, init_params and epoch_order), in the documented byte layout
// (harness/export.h); bad input exits 2 and leaves nothing behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.h"
#include "datasets/shuffle.h"
#include "harness/model.h"
#include "harness/params_file.h"
#include "tests/shell.h"

namespace tb {
namespace {

namespace fs = std::filesystem;
using Result = test::ShellResult;
const auto& run = test::trainbench;

// A fresh folder under the test tmp dir; returns the path of `name` inside it.
std::string fresh(const std::string& test, const std::string& name) {
  const fs::path dir = fs::path(TB_TEST_TMPDIR) / ("export_" + test);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int64_t field(const std::string& bytes, int index) {  // int64 at byte 8 * index
  int64_t v = 0;
  std::memcpy(&v, bytes.data() + 8 * index, sizeof v);
  return v;
}

template <class T>
std::vector<T> array_at(const std::string& bytes, size_t offset, size_t count) {
  std::vector<T> v(count);
  std::memcpy(v.data(), bytes.data() + offset, count * sizeof(T));
  return v;
}

DatasetSpec spec(const std::string& kind, Task task, int64_t n, int64_t d, int64_t o) {
  DatasetSpec s;
  s.kind = kind;
  s.task = task;
  s.n = n;
  s.d = d;
  s.o = o;
  s.seed = 5;
  return s;
}

TEST(Export, RegressionDataParamsAndJsonMatchTheHarness) {
  const std::string dir = fresh("reg", "out");
  const Result r = run("export --model linear --layers 6,3 --samples 50 --batch 16 --epochs 2 --seed 5 "
                       "--lr 0.05 --momentum 0.9 --weight-decay 0.001 --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;

  const std::string data = slurp(dir + "/data.bin");
  ASSERT_EQ(data.size(), 64u + 4u * (50 * 6 + 50 * 3));
  EXPECT_EQ(data.compare(0, 8, std::string("TBDATA\0\0", 8)), 0);
  EXPECT_EQ(field(data, 1), 1);  // version
  EXPECT_EQ(field(data, 2), 0);  // regression
  EXPECT_EQ(field(data, 3), 50);
  EXPECT_EQ(field(data, 4), 6);
  EXPECT_EQ(field(data, 5), 3);
  const Dataset want = load_dataset(spec("synthetic-regression", Task::kRegression, 50, 6, 3));
  EXPECT_EQ(array_at<float>(data, 64, 300), want.x);
  EXPECT_EQ(array_at<float>(data, 64 + 4 * 300, 150), want.y);

  ModelSpec m;
  m.kind = ModelKind::kLinear;
  m.layers = {6, 3};
  m.task = Task::kRegression;
  EXPECT_EQ(read_params_file(dir + "/params.bin"), init_params(m, 5));
  EXPECT_FALSE(fs::exists(dir + "/orders.bin"));  // no --shuffle: rows in order

  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/workload.json"));  // throws when not JSON
  EXPECT_EQ(j["model"], "linear");
  EXPECT_EQ(j["layers"], nlohmann::json({6, 3}));
  EXPECT_EQ(j["task"], "regression");
  EXPECT_EQ(j["loss"], "mse_mean");
  for (const auto& [key, value] : std::vector<std::pair<const char*, int64_t>>{
           {"n", 50}, {"d", 6}, {"o", 3}, {"batch", 16}, {"epochs", 2}, {"seed", 5}, {"rows_per_epoch", 50},
           {"batches_per_epoch", 4}}) {
    EXPECT_EQ(j[key], value) << key;
  }
  EXPECT_EQ(j["lr"].get<double>(), 0.05);  // the exact double the harness trains with
  EXPECT_EQ(j["momentum"].get<double>(), 0.9);
  EXPECT_EQ(j["weight_decay"].get<double>(), 0.001);
  EXPECT_EQ(j["shuffle"], false);
  EXPECT_EQ(j["drop_last"], false);
  EXPECT_TRUE(j["files"]["orders"].is_null());
}

TEST(Export, ClassificationLabelsAndShuffledOrders) {
  const std::string dir = fresh("cls", "out");
  const Result r = run("export --model mlp --layers 5,7,4 --samples 40 --batch 8 --epochs 3 --seed 5 --shuffle "
                       "--drop-last --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string data = slurp(dir + "/data.bin");
  ASSERT_EQ(data.size(), 64u + 4u * (40 * 5 + 40));
  EXPECT_EQ(field(data, 2), 1);  // classification
  EXPECT_EQ(field(data, 5), 4);  // classes
  const Dataset want = load_dataset(spec("synthetic-classification", Task::kClassification, 40, 5, 4));
  EXPECT_EQ(array_at<int32_t>(data, 64 + 4 * 200, 40), want.labels);

  const std::string orders = slurp(dir + "/orders.bin");
  ASSERT_EQ(orders.size(), 64u + 8u * 3 * 40);
  EXPECT_EQ(orders.compare(0, 8, std::string("TBORDER\0", 8)), 0);
  EXPECT_EQ(field(orders, 1), 1);
  EXPECT_EQ(field(orders, 2), 3);
  EXPECT_EQ(field(orders, 3), 40);
  std::vector<int64_t> order;
  for (int64_t e = 0; e < 3; ++e) {
    epoch_order(5, e, 40, true, &order);
    EXPECT_EQ(array_at<int64_t>(orders, 64 + 8 * 40 * e, 40), order) << "epoch " << e;
  }
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/workload.json"));
  EXPECT_EQ(j["shuffle"], true);
  EXPECT_EQ(j["drop_last"], true);
  EXPECT_EQ(j["loss"], "cross_entropy_mean");
  EXPECT_EQ(j["files"]["orders"], "orders.bin");
}

TEST(Export, BadInputExitsTwoAndWritesNothing) {
  const std::string dir = fresh("bad", "out");
  const fs::path parent = fs::path(dir).parent_path();
  for (const std::string& args :
       {std::string("export --model linear --out ") + dir + " --layers 0,1",
        std::string("export --model linear --samples 10 --batch 20 --out ") + dir,
        std::string("export --backend cpu-omp --out ") + dir,
        std::string("export --save-params p.bin --out ") + dir,
        std::string("export --model mlp --dataset csv:/nonexistent.csv --out ") + dir,
        std::string("export --model linear"),
        std::string("export --model linear --out ") + dir + "/no/such/parent"}) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_TRUE(fs::is_empty(parent)) << args;  // no DIR, no temporary folder
  }
}

TEST(Export, RefusesAFolderThatHoldsFilesButFillsAnEmptyOne) {
  const std::string dir = fresh("taken", "out");
  fs::create_directories(dir);
  std::ofstream(dir + "/keep.txt") << "mine\n";
  Result r = run("export --model linear --samples 20 --batch 4 --out " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(slurp(dir + "/keep.txt"), "mine\n");
  EXPECT_FALSE(fs::exists(dir + "/data.bin"));

  fs::remove(dir + "/keep.txt");  // now empty: allowed
  r = run("export --model linear --samples 20 --batch 4 --out " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/data.bin"));
  EXPECT_EQ(std::distance(fs::directory_iterator(fs::path(dir).parent_path()), fs::directory_iterator{}), 1);
}

// A suite line's flags export as written (run_peers.py hands them over): a backend's knobs,
// --comm-timeout and --no-ceilings are accepted, as export --help says; --precision reaches
// workload.json for the PyTorch peers, the rest change nothing.
TEST(Export, TakesASuiteLinesKnobsAndKeepsOnlyThePrecision) {
  const std::string dir = fresh("knobs", "out");
  const Result r = run("export --model linear --layers 6,1 --samples 20 --batch 4 --precision tf32 --cuda-graph "
                       "--bucket-mb 5 --no-overlap --workers 2 --comm-timeout 5 --no-ceilings --out " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json w = nlohmann::json::parse(slurp(dir + "/workload.json"));
  EXPECT_EQ(w["precision"], "tf32");
  const Result help = run("export --help");
  EXPECT_NE(help.out.find("The rest of `run`'s flags (a backend's knobs,\n--comm-timeout, --no-ceilings"),
            std::string::npos) << help.out;
}

}  // namespace
}  // namespace tb
