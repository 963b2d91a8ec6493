// harness/json_out.h — the one way trainbench turns a JSON document into text
// (env.json, export's workload.json, `trainbench schema --json`): nlohmann/json,
// two-space indent, key order as inserted, invalid UTF-8 bytes replaced by U+FFFD
// (so the output parses for any input), NaN and infinities written as null.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tb {

using Json = nlohmann::ordered_json;

// Pretty-printed document with a final newline.
inline std::string json_text(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace tb
