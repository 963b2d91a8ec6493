// tests/fuzz/fuzz_scratch.cpp — the fuzz targets' scratch files: one folder per process
// under TMPDIR (removed at exit), each input written over the previous one.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/fuzz/fuzz_targets.h"

namespace tb::fuzz {
namespace {

struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    dir = std::filesystem::temp_directory_path() / ("tb-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

std::string scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  static Scratch scratch;
  const std::filesystem::path p = scratch.dir / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) broken("cannot write the scratch file", __FILE__, __LINE__);
  return p.string();
}

}  // namespace tb::fuzz
