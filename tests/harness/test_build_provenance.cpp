// tests/harness/test_build_provenance.cpp — the build-time git facts baked into the
// binary (harness/build_provenance.h) against git in the source tree now (built just
// before the tests run, so they agree unless the tree changed in between), and the CUDA
// toolkit version against the nvcc CMake compiled with.
#include <gtest/gtest.h>

#include <string>

#include "harness/build_provenance.h"
#include "tests/shell.h"

namespace tb {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

const std::string kGit = std::string("git --no-optional-locks -C '") + TB_SOURCE_DIR + "' ";

TEST(BuildProvenance, CommitIsTheSourceTreesHead) {
  const test::ShellResult head = test::shell(kGit + "rev-parse HEAD");
  const BuildProvenance p = build_provenance();
  if (head.code != 0) {
    EXPECT_EQ(p.commit, "") << "not a git checkout, yet a commit was recorded";
    EXPECT_NE(p.describe.find("unknown"), std::string::npos) << p.describe;
    return;
  }
  EXPECT_EQ(p.commit, trimmed(head.out));
  EXPECT_EQ(p.commit.size(), 40u);
  EXPECT_FALSE(p.describe.empty());
  EXPECT_EQ(p.describe.size() >= 6 && p.describe.substr(p.describe.size() - 6) == "-dirty", p.dirty) << p.describe;
}

TEST(BuildProvenance, DirtyFlagMatchesGitStatus) {
  const test::ShellResult st = test::shell(kGit + "-c core.fileMode=false status --porcelain --untracked-files=no");
  if (st.code != 0) GTEST_SKIP() << "not a git checkout: " << st.out;
  EXPECT_EQ(build_provenance().dirty, !trimmed(st.out).empty()) << st.out;
}

TEST(BuildProvenance, CudaToolkitIsTheNvccCompiledWith) {
  const std::string v = cuda_toolkit_version();
#if defined(TB_TEST_NVCC)
  ASSERT_FALSE(v.empty()) << "built with CUDA but no toolkit version recorded";
  const test::ShellResult r = test::shell(std::string("'") + TB_TEST_NVCC + "' --version");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("V" + v), std::string::npos) << v << " vs:\n" << r.out;  // "Cuda compilation tools, ... V13.0.88"
#else
  EXPECT_EQ(v, "") << "built without CUDA";
#endif
}

}  // namespace
}  // namespace tb
