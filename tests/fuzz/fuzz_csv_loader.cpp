// tests/fuzz/fuzz_csv_loader.cpp — fuzz target for datasets/csv_loader: any bytes as a
// CSV file either load (N >= 1 rows of D features, finite, labels in range) or fail with
// DataError naming the file.
#include <cmath>

#include "datasets/csv_loader.h"
#include "tests/fuzz/fuzz_targets.h"

namespace tb::fuzz {

int csv_loader(const uint8_t* data, size_t size) {
  const std::string path = scratch_file("data.csv", data, size);
  struct Mode {
    Task task;
    int64_t classes;
    const char* target;
  };
  for (const Mode m : {Mode{Task::kRegression, 0, ""}, Mode{Task::kClassification, 3, ""},
                       Mode{Task::kRegression, 0, "y"}, Mode{Task::kClassification, 10, "label"}}) {
    try {
      const Dataset ds = load_csv(path, m.target, m.task, m.classes);
      TB_FUZZ_REQUIRE(ds.n >= 1 && ds.d >= 1 && !ds.subset);
      TB_FUZZ_REQUIRE(ds.x.size() == static_cast<size_t>(ds.n * ds.d));
      for (float v : ds.x) TB_FUZZ_REQUIRE(std::isfinite(v));
      if (m.task == Task::kRegression) {
        TB_FUZZ_REQUIRE(ds.o == 1 && ds.y.size() == static_cast<size_t>(ds.n) && ds.labels.empty());
        for (float v : ds.y) TB_FUZZ_REQUIRE(std::isfinite(v));
      } else {
        TB_FUZZ_REQUIRE(ds.o == m.classes && ds.labels.size() == static_cast<size_t>(ds.n) && ds.y.empty());
        for (int32_t l : ds.labels) TB_FUZZ_REQUIRE(l >= 0 && l < m.classes);
      }
    } catch (const DataError& e) {
      TB_FUZZ_REQUIRE(std::string(e.what()).rfind(path, 0) == 0);  // the message names the file
    }
  }
  return 0;
}

}  // namespace tb::fuzz
