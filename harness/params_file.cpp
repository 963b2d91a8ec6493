// harness/params_file.cpp — see params_file.h.
#include "harness/params_file.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "harness/csv_writer.h"

namespace tb {
namespace {
constexpr char kMagic[9] = "TBPARAM1";
}

void write_params_file(const std::string& path, const std::vector<float>& params) {
  std::string bytes(kMagic, 8);
  const int64_t n = static_cast<int64_t>(params.size());
  bytes.append(reinterpret_cast<const char*>(&n), sizeof n);
  bytes.append(reinterpret_cast<const char*>(params.data()), params.size() * sizeof(float));
  write_file_atomically(path, bytes);
}

std::vector<float> read_params_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 16 || bytes.compare(0, 8, kMagic) != 0) throw std::runtime_error(path + ": not a TBPARAM1 file");
  int64_t n = 0;
  std::memcpy(&n, bytes.data() + 8, sizeof n);
  if (n < 0 || bytes.size() != 16 + static_cast<size_t>(n) * sizeof(float)) {
    throw std::runtime_error(path + ": size does not match its count " + std::to_string(n));
  }
  std::vector<float> p(static_cast<size_t>(n));
  std::memcpy(p.data(), bytes.data() + 16, p.size() * sizeof(float));
  return p;
}

}  // namespace tb
