// tests/cuda_trace/test_device_buffer_trace.cpp — kernels/cuda/device_buffer.h's copies
// go to the stream the buffer was given, not to the legacy stream: the GPU test
// CudaKernels.DeviceBufferCopiesOnItsStream (tests/cuda/test_cuda_kernels.cpp) runs on one
// fake GPU that computes (TB_FAKE_EXECUTE=1) with its call trace written, and the trace
// must show every host<->device copy as a cudaMemcpyAsync on the test's non-blocking
// stream, each followed by a synchronisation of that stream before the thread's next
// call (the host reads or reuses the vector right after), and no legacy cudaMemcpy.
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda_trace/traced_run.h"

namespace {

using namespace tb::trace;

TEST(DeviceBufferTrace, CopiesGoToTheBuffersStreamAndAreWaitedFor) {
  const std::string base = trace_path("device-buffer");
  const std::string log = base + ".0.log";
  std::filesystem::remove(log);
  const tb::test::ShellResult r = tb::test::shell(
      "env TB_FAKE_GPUS=1 TB_FAKE_EXECUTE=1 TB_TRACE_FILE=" + base + ".%r.log LD_PRELOAD=" + TB_TRACE_SHIM + " " +
      TB_TESTS_CUDA_EXE + " --gtest_filter=CudaKernels.DeviceBufferCopiesOnItsStream");
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << "the GPU test did not run and pass:\n" << r.out;
  const Trace t = read_trace(log);
  ASSERT_FALSE(t.empty()) << "no trace in " << log;

  std::string stream;  // the test fixture's stream
  for (const Call& c : t)
    if (c.fn == "cudaStreamCreateWithFlags" && c.get("flags") == "1") stream = c.get("stream");
  ASSERT_FALSE(stream.empty()) << "no non-blocking stream created";

  int copies = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const Call& c = t[i];
    EXPECT_NE(c.fn, "cudaMemcpy") << "a legacy-stream copy: " << c.line;
    if (c.fn != "cudaMemcpyAsync") continue;
    ++copies;
    EXPECT_EQ(c.get("stream"), stream) << c.line;
    const Call* next = nullptr;
    for (size_t j = i + 1; j < t.size() && next == nullptr; ++j)
      if (t[j].tid == c.tid) next = &t[j];
    ASSERT_NE(next, nullptr) << "nothing after " << c.line;
    EXPECT_EQ(next->fn, "cudaStreamSynchronize") << "after " << c.line << ": " << next->line;
    EXPECT_EQ(next->get("stream"), stream) << next->line;
  }
  // Two buffers uploaded, one upload and one download later.
  EXPECT_EQ(copies, 4);
}

}  // namespace
