// tests/cuda_trace/results_csv.h — the rows a traced run wrote to its results CSV, by
// column name, for the trace tests that check what a figure adds up (the numbers of a
// traced run are otherwise meaningless).
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace tb::trace {

using Row = std::map<std::string, std::string>;

// results.csv rows by column name (RFC 4180 quoting: "a,b" and "" inside quotes).
inline std::vector<Row> read_results(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        f.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        f.emplace_back();
      } else {
        f.back() += c;
      }
    }
    lines.push_back(f);
  }
  std::vector<Row> rows;
  for (size_t r = 1; r < lines.size(); ++r) {
    Row row;
    for (size_t k = 0; k < lines[0].size() && k < lines[r].size(); ++k) row[lines[0][k]] = lines[r][k];
    rows.push_back(row);
  }
  return rows;
}

}  // namespace tb::trace
