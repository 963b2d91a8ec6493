// tests/fuzz/corpus_regression.cpp — the fuzz corpus as a regression test of the normal
// build (gcc, no libFuzzer): `tb_fuzz_corpus TARGET DIR` feeds every file of DIR (seeds
// and every crash or hang input fuzzing found) to TARGET's entry function. A crash or a
// broken invariant aborts, after the file's name was printed; ctest's timeout catches hangs.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tb_fuzz_corpus TARGET DIR (targets:";
    for (const auto& t : tb::fuzz::kTargets) std::cerr << ' ' << t.name;
    std::cerr << ")\n";
    return 2;
  }
  const auto* target = std::find_if(std::begin(tb::fuzz::kTargets), std::end(tb::fuzz::kTargets),
                                    [&](const tb::fuzz::Target& t) { return std::strcmp(t.name, argv[1]) == 0; });
  if (target == std::end(tb::fuzz::kTargets)) {
    std::cerr << "tb_fuzz_corpus: unknown target '" << argv[1] << "'\n";
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(argv[2])) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "tb_fuzz_corpus: " << argv[2] << ": no corpus files\n";
    return 1;
  }
  for (const auto& f : files) {
    std::cout << f.filename().string() << std::endl;  // named before it runs: a crash shows which
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target->run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << target->name << ": " << files.size() << " corpus inputs, no crash\n";
  return 0;
}
