// harness/utf8.h — UTF-8 validity for text trainbench writes into CSV and JSON.
// A workload name that is not UTF-8 is refused where it is typed (cli.cpp); any other
// text a row carries (a file path in the dataset description, an error message) is
// written with its invalid bytes replaced by U+FFFD, so no output ever holds them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tb {

// Offset of the first byte that does not start a well-formed UTF-8 sequence
// (overlong forms, surrogates and code points above U+10FFFF are not well-formed),
// or std::string_view::npos when the whole text is valid.
size_t first_invalid_utf8(std::string_view s);

inline bool is_valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

// s with each ill-formed sequence (a bad lead byte and the stray continuation bytes
// after it) replaced by one U+FFFD.
std::string to_valid_utf8(std::string_view s);

}  // namespace tb
