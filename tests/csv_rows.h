// tests/csv_rows.h — a results CSV (harness/csv_writer.h's format) read back as rows of
// column -> cell, for tests that check what a run wrote.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "harness/csv_writer.h"

namespace tb::test {

// The rows under the header line; cells past a short row's end are absent (at() throws).
inline std::vector<std::map<std::string, std::string>> csv_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::map<std::string, std::string>> out;
  if (!std::getline(in, line)) return out;
  const std::vector<std::string> head = csv_fields(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_fields(line);
    std::map<std::string, std::string> r;
    for (size_t i = 0; i < head.size() && i < f.size(); ++i) r[head[i]] = f[i];
    out.push_back(r);
  }
  return out;
}

}  // namespace tb::test
