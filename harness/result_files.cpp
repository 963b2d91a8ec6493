// harness/result_files.cpp — see result_files.h.
#include "harness/result_files.h"

#include <fstream>

namespace tb {

ResultFiles::ResultFiles(const std::string& results, const std::string& curves)
    : results_(results, results_header()) {
  try {
    if (!curves.empty()) curves_ = std::make_unique<CsvWriter>(curves, curves_header());
  } catch (...) {
    results_.discard_if_new();
    throw;
  }
}

void ResultFiles::discard_if_new() {
  results_.discard_if_new();
  if (curves_) curves_->discard_if_new();
}

void ResultFiles::add(const ResultRow& row, const std::vector<CurvePoint>& curve) {
  results_.append(result_fields(row));
  if (!curves_) return;
  for (const CurvePoint& p : curve) curves_->append(curve_fields(row, p));
}

void ResultFiles::add_lines(const std::vector<std::string>& row_lines, const std::vector<std::string>& curve_lines) {
  for (const std::string& line : row_lines) results_.append_line(line);
  if (!curves_) return;
  for (const std::string& line : curve_lines) curves_->append_line(line);
}

std::vector<std::string> read_data_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace tb
