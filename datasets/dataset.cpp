// datasets/dataset.cpp — the --dataset value and the dispatch from a spec to a
// generator or a loader. Shapes as in dataset.h: N rows, D features, O outputs.
#include "datasets/dataset.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "datasets/csv_loader.h"
#include "datasets/idx_loader.h"
#include "datasets/synthetic.h"

namespace tb {

const char* task_name(Task t) {
  switch (t) {
    case Task::kRegression: return "regression";
    case Task::kClassification: return "classification";
  }
  return "unknown";
}

int64_t Dataset::local_row(int64_t row) const {
  if (!subset) {
    if (row < 0 || row >= n) throw std::out_of_range("dataset row " + std::to_string(row) + " is not in [0, " + std::to_string(n) + ")");
    return row;
  }
  const auto it = std::lower_bound(row_ids.begin(), row_ids.end(), row);
  if (it == row_ids.end() || *it != row) {
    throw std::out_of_range("dataset row " + std::to_string(row) + " is not among the " +
                            std::to_string(row_ids.size()) + " rows this process holds");
  }
  return it - row_ids.begin();
}

namespace {

constexpr const char* kAllowed =
    "synthetic, synthetic-regression, synthetic-classification, csv:PATH, idx:IMAGES,LABELS";

[[noreturn]] void bad_value(const std::string& value, const std::string& why) {
  throw std::invalid_argument("--dataset: " + why + " '" + value + "' (allowed: " + kAllowed + ")");
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

DatasetSpec parse_dataset_arg(const std::string& value) {
  DatasetSpec spec;
  if (value == "synthetic") {
    spec.kind = "synthetic";  // the caller resolves the task from the model
  } else if (value == "synthetic-regression") {
    spec.kind = value;
    spec.task = Task::kRegression;
  } else if (value == "synthetic-classification") {
    spec.kind = value;
    spec.task = Task::kClassification;
  } else if (starts_with(value, "csv:")) {
    spec.kind = "csv";
    spec.path = value.substr(4);
    if (spec.path.empty()) bad_value(value, "empty PATH in");
  } else if (starts_with(value, "idx:")) {
    // IMAGES,LABELS split at the last comma (an images path may contain commas;
    // a labels path containing one is not supported).
    const std::string rest = value.substr(4);
    const size_t comma = rest.rfind(',');
    if (comma == std::string::npos) bad_value(value, "missing ',LABELS' in");
    spec.kind = "idx";
    spec.path = rest.substr(0, comma);
    spec.labels_path = rest.substr(comma + 1);
    spec.task = Task::kClassification;
    if (spec.path.empty()) bad_value(value, "empty IMAGES path in");
    if (spec.labels_path.empty()) bad_value(value, "empty LABELS path in");
  } else {
    bad_value(value, "unknown value");
  }
  return spec;
}

namespace {

// A file the loaders can read: a directory (or a device) is refused by name before a
// stream tries to read it.
void check_regular_file(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return;  // the loader says "no such file"
  if (std::filesystem::is_directory(st)) throw DataError(path + ": is a directory (expected a file)");
  if (!std::filesystem::is_regular_file(st)) throw DataError(path + ": not a regular file");
}

// Error messages quote cells and lines of the file: keep them to one readable line.
std::string cut(const std::string& what) {
  constexpr size_t kMax = 300;
  if (what.size() <= kMax) return what;
  return what.substr(0, kMax) + "... (message cut: " + std::to_string(what.size()) + " bytes)";
}

Dataset load_file_dataset(const DatasetSpec& spec) {
  check_regular_file(spec.path);
  if (spec.kind == "idx") check_regular_file(spec.labels_path);
  if (spec.kind == "csv") {
    const int64_t classes = spec.task == Task::kClassification ? spec.o : 0;
    Dataset ds = load_csv(spec.path, spec.target, spec.task, classes);
    ds.description = dataset_description(spec);
    return ds;
  }
  if (spec.kind == "idx") {
    Dataset ds = load_idx(spec.path, spec.labels_path, spec.o);
    ds.description = dataset_description(spec);
    return ds;
  }
  throw std::logic_error("load_file_dataset: not a file kind");
}

}  // namespace

std::string dataset_description(const DatasetSpec& spec) {
  if (spec.kind == "csv") return "csv:" + spec.path;
  if (spec.kind == "idx") return "idx:" + spec.path + "," + spec.labels_path;
  return synthetic_description(spec);
}

Dataset load_dataset(const DatasetSpec& spec) {
  if (spec.kind == "synthetic" || spec.kind == "synthetic-regression" ||
      spec.kind == "synthetic-classification") {
    return make_synthetic(spec);  // fills description; the task follows the kind (see synthetic.cpp)
  }
  if (spec.kind == "csv" || spec.kind == "idx") {
    try {
      return load_file_dataset(spec);
    } catch (const DataError& e) {
      throw DataError(cut(e.what()));
    }
  }
  throw std::invalid_argument("load_dataset: unknown dataset kind '" + spec.kind +
                              "' (allowed: synthetic, synthetic-regression, synthetic-classification, csv, idx)");
}

}  // namespace tb
