// datasets/csv_loader.cpp — numeric CSV with a header row -> Dataset.
// Shapes: N data rows, C columns; D = C - 1 features (every column but the target,
// in file order), O = 1 output (regression) or O = classes (classification).
// Line ends may be \n or \r\n; cells are trimmed of spaces and tabs; blank lines
// are allowed only at the end. Every error names the file and the 1-based line.
#include "datasets/csv_loader.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

namespace {

[[noreturn]] void fail(const std::string& path, int64_t line, const std::string& what) {
  throw DataError(path + ":" + std::to_string(line) + ": " + what);
}

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

// Splits one line (without its line end) into trimmed cells.
void split_cells(std::string_view line, std::vector<std::string_view>* cells) {
  cells->clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      cells->push_back(trim(line.substr(start)));
      return;
    }
    cells->push_back(trim(line.substr(start, comma - start)));
    start = comma + 1;
  }
}

// Full-consumption parse of a decimal number (a leading '+' is accepted).
bool parse_double(std::string_view s, double* out) {
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) return false;  // "+-1", "++1"
  }
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

// Reads the whole file and cuts it into lines (\n or \r\n; a final line without
// a line end counts).
std::vector<std::string_view> split_lines(const std::string& text) {
  std::vector<std::string_view> lines;
  std::string_view rest(text);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = nl == std::string_view::npos ? rest : rest.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return lines;
}

}  // namespace

Dataset load_csv(const std::string& path, const std::string& target, Task task, int64_t classes) {
  if (task == Task::kClassification && classes < 2) {
    throw std::invalid_argument("load_csv(" + path + "): classification needs classes >= 2 (got " +
                                std::to_string(classes) + ")");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": no such file or cannot open (" + std::strerror(errno) + ")");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError(path + ": read error");
  const std::vector<std::string_view> lines = split_lines(text);

  // Header: column names, and which one is the target.
  if (lines.empty() || trim(lines[0]).empty()) fail(path, 1, "missing header row (column names)");
  std::vector<std::string_view> cells;
  split_cells(lines[0], &cells);
  const std::vector<std::string> names(cells.begin(), cells.end());
  const int64_t ncols = static_cast<int64_t>(names.size());
  if (ncols < 2) {
    fail(path, 1, "need at least 2 columns (features and a target), got " + std::to_string(ncols));
  }
  int64_t target_col = ncols - 1;
  if (!target.empty()) {
    target_col = -1;
    for (int64_t c = 0; c < ncols; ++c) {
      if (names[c] != target) continue;
      if (target_col >= 0) fail(path, 1, "target column '" + target + "' appears more than once");
      target_col = c;
    }
    if (target_col < 0) {
      std::string all;
      for (int64_t c = 0; c < ncols; ++c) all += (c ? ", " : "") + names[c];
      fail(path, 1, "target column '" + target + "' not found (columns: " + all + ")");
    }
  }

  // Blank lines are allowed only at the end of the file.
  size_t last = lines.size();
  while (last > 1 && trim(lines[last - 1]).empty()) --last;

  Dataset ds;
  ds.task = task;
  ds.d = ncols - 1;
  ds.o = task == Task::kRegression ? 1 : classes;
  const size_t nrows_hint = last - 1;
  ds.x.reserve(nrows_hint * static_cast<size_t>(ds.d));
  if (task == Task::kRegression) {
    ds.y.reserve(nrows_hint);
  } else {
    ds.labels.reserve(nrows_hint);
  }

  for (size_t li = 1; li < last; ++li) {
    const int64_t line_no = static_cast<int64_t>(li) + 1;
    if (trim(lines[li]).empty()) fail(path, line_no, "empty line before the end of the data");
    split_cells(lines[li], &cells);
    if (static_cast<int64_t>(cells.size()) != ncols) {
      fail(path, line_no, "expected " + std::to_string(ncols) + " cells, got " + std::to_string(cells.size()));
    }
    for (int64_t c = 0; c < ncols; ++c) {
      const std::string_view cell = cells[c];
      double v = 0.0;
      if (!parse_double(cell, &v)) {
        fail(path, line_no, "cell " + std::to_string(c + 1) + " ('" + std::string(cell) + "') is not a number");
      }
      if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) {
        fail(path, line_no,
             "cell " + std::to_string(c + 1) + " ('" + std::string(cell) + "') is not a finite float");
      }
      if (c != target_col) {
        ds.x.push_back(static_cast<float>(v));
      } else if (task == Task::kRegression) {
        ds.y.push_back(static_cast<float>(v));
      } else {
        if (v != std::floor(v)) fail(path, line_no, "label " + std::string(cell) + " is not an integer");
        if (v < 0.0 || v >= static_cast<double>(classes)) {
          fail(path, line_no,
               "label " + std::string(cell) + " out of range [0, " + std::to_string(classes) + ")");
        }
        ds.labels.push_back(static_cast<int32_t>(v));
      }
    }
    ++ds.n;
  }
  if (ds.n == 0) throw DataError(path + ": no data rows");
  ds.description = "csv:" + path;
  return ds;
}

}  // namespace tb
