// tests/fuzz/libfuzzer_entry.cpp — libFuzzer's entry point for one target, chosen at
// compile time (TB_FUZZ_TARGET = csv_loader, idx_loader, suite or flags): the program
// tb_fuzz_<target> of the TB_FUZZ=ON build (tests/fuzz/CMakeLists.txt, `make fuzz`).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tb::fuzz::TB_FUZZ_TARGET(data, size);
}
