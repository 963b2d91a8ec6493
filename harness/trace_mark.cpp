// harness/trace_mark.cpp — see trace_mark.h: the shim's tb_trace_mark, looked up once
// among the process's global symbols (an LD_PRELOADed library is one of them).
#include "harness/trace_mark.h"

#include <dlfcn.h>

namespace tb {

void trace_mark(const char* what) {
  using Mark = void (*)(const char*);
  static const Mark mark = reinterpret_cast<Mark>(dlsym(RTLD_DEFAULT, "tb_trace_mark"));
  if (mark) mark(what);
}

}  // namespace tb
