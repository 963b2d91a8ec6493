// datasets/dataset.h — a training set in memory and the spec that produces it.
// Shapes: N rows (samples), D features, O outputs. X is N x D row-major float;
// regression targets Y are N x O row-major float; classification labels are N
// int32 in [0, O). Every backend reads the same bytes, so every backend trains
// on exactly the same data.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb {

enum class Task { kRegression, kClassification };

const char* task_name(Task t);

// Malformed or unreadable data: the message names the file and the line or byte offset.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Dataset {
  Task task = Task::kRegression;
  int64_t n = 0;  // rows of the whole dataset (also when only some are held, below)
  int64_t d = 0;  // features per row
  int64_t o = 0;  // regression outputs, or number of classes
  std::vector<float> x;         // n * d
  std::vector<float> y;         // n * o   (regression)
  std::vector<int32_t> labels;  // n       (classification)
  std::string description;      // e.g. "synthetic-regression(seed=1)" or "csv:data.csv"

  // A held subset (a DDP rank generates only the rows it reads; datasets/synthetic.h
  // make_synthetic_rows): x/y/labels hold the rows row_ids, ascending, one after
  // another. Otherwise every row r of n is held at index r.
  bool subset = false;
  std::vector<int64_t> row_ids;

  int64_t held_rows() const { return subset ? static_cast<int64_t>(row_ids.size()) : n; }
  // Index of global row `row` in x/y/labels; throws std::out_of_range when it is not held.
  int64_t local_row(int64_t row) const;
};

// Which data, as the CLI names it: "synthetic" (regression for linear models,
// classification for MLPs), "synthetic-regression", "synthetic-classification",
// "csv:PATH", "idx:IMAGES,LABELS".
struct DatasetSpec {
  std::string kind = "synthetic";  // synthetic | synthetic-regression | synthetic-classification | csv | idx
  std::string path;                // csv file, or idx images file
  std::string labels_path;         // idx labels file
  std::string target;              // csv: target column name (default: last column)
  Task task = Task::kRegression;   // resolved task (csv: from --task)
  int64_t n = 0;                   // synthetic rows
  int64_t d = 0;                   // synthetic features
  int64_t o = 0;                   // synthetic outputs / classes
  uint64_t seed = 1;
  float noise = 0.1f;              // synthetic regression label noise (std dev)
};

// Parses the --dataset value; throws std::invalid_argument naming the allowed forms.
DatasetSpec parse_dataset_arg(const std::string& value);

// Builds the whole dataset (generating or loading it). Throws DataError on bad files.
Dataset load_dataset(const DatasetSpec& spec);

// The description load_dataset(spec) gives its data ("csv:PATH", ...), without loading it:
// for rows of a configuration whose data was never made (skipped, out of memory).
std::string dataset_description(const DatasetSpec& spec);

}  // namespace tb
