// harness/result_files.h — the one place rows become CSV: results.csv (one row per
// repetition, appended whole as soon as it ends) and, for suites, curves.csv (the
// mean training loss of every epoch). `run --out -` writes results to stdout.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/csv_writer.h"
#include "harness/runner.h"

namespace tb {

class ResultFiles final : public RowSink {
 public:
  // results: a path or "-" (stdout); curves: a path or "" (no curves file).
  // Throws CsvError when a file cannot be opened or has another header.
  ResultFiles(const std::string& results, const std::string& curves);
  void add(const ResultRow& row, const std::vector<CurvePoint>& curve) override;
  // Rows another process wrote with the same header (a suite's multi-process worker).
  void add_lines(const std::vector<std::string>& row_lines, const std::vector<std::string>& curve_lines);
  // Removes the files these writers created and wrote no row to (CsvWriter::discard_if_new):
  // a run or suite that could not start leaves nothing half-written.
  void discard_if_new();

 private:
  CsvWriter results_;
  std::unique_ptr<CsvWriter> curves_;
};

// Data lines (after the header) of a CSV file; none when it does not exist.
std::vector<std::string> read_data_lines(const std::string& path);

}  // namespace tb
