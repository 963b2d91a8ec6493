// tests/json_file.h — a whole JSON file (env.json, summary.json) parsed, for the tests
// that check what trainbench wrote. J: nlohmann::json, or tb::Json (ordered) to keep
// the writer's key order.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace tb::test {

template <class J = nlohmann::json>
J read_json_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return J::parse(ss.str());
}

}  // namespace tb::test
