// datasets/csv_loader.h — numeric CSV with a header row.
// All columns but the target are features; the target column (by name, default
// the last) is a regression output or an integer class label in [0, classes).
#pragma once

#include <string>

#include "datasets/dataset.h"

namespace tb {

// classes == 0 for regression. Throws DataError naming file and line on a missing
// file, ragged row, non-numeric cell, unknown target column or label out of range.
Dataset load_csv(const std::string& path, const std::string& target, Task task, int64_t classes);

}  // namespace tb
