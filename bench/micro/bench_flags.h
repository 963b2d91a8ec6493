// bench/micro/bench_flags.h — our own flags on a Google Benchmark command line.
#pragma once

#include <cstring>

namespace tb::bench {

// Removes every `flag` from argv (Google Benchmark rejects flags it does not know)
// and returns whether it was there. argv stays null-terminated.
inline bool take_flag(int* argc, char** argv, const char* flag) {
  bool found = false;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) {
      found = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return found;
}

}  // namespace tb::bench
