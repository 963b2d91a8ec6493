// tests/harness/test_communicator.cpp — the collective checks of comm/communicator.h
// against a stand-in world of two ranks: this one, and a peer whose contribution to
// allreduce_max is given. The real MPI path runs in tests/mpi.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/comm/communicator.h"

namespace tb {
namespace {

// Rank 0 of 2; allreduce_max folds in `peer` (what the other rank would contribute).
class TwoRanks final : public Communicator {
 public:
  explicit TwoRanks(std::vector<double> peer) : peer_(std::move(peer)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  std::string name() const override { return "two-ranks"; }
  void allreduce_max(double* data, int64_t n) override {
    ASSERT_EQ(static_cast<size_t>(n), peer_.size());
    for (int64_t i = 0; i < n; ++i) data[i] = std::max(data[i], peer_[static_cast<size_t>(i)]);
  }
  void allreduce_sum(float*, int64_t) override { unused(); }
  void allreduce_sum(double*, int64_t) override { unused(); }
  int iallreduce_sum(float*, int64_t) override { unused(); }
  void wait(int) override { unused(); }
  void poke() override {}
  void allgather(const float*, int64_t, float*) override { unused(); }
  void allgather(const double*, int64_t, double*) override { unused(); }
  void broadcast(float*, int64_t, int) override { unused(); }
  void broadcast(char*, int64_t, int) override { unused(); }
  void barrier() override {}
  [[noreturn]] void abort(int, const std::string& why) override { throw std::logic_error("abort: " + why); }

 private:
  [[noreturn]] static void unused() { throw std::logic_error("not used by these checks"); }
  std::vector<double> peer_;
};

TEST(Communicator, RanksWithTheSameParametersAgree) {
  const std::vector<float> params = {0.5f, -1.25f, 3.0f};  // sum 2.25, exact
  TwoRanks world({2.25, -2.25});
  EXPECT_NO_THROW(check_ranks_agree(world, params));
}

TEST(Communicator, RanksWithDifferentParametersFailWithBothChecksums) {
  const std::vector<float> params = {0.5f, -1.25f, 3.0f};
  for (double peer_sum : {2.5, 2.0}) {  // a peer above and one below this rank
    TwoRanks world({peer_sum, -peer_sum});
    try {
      check_ranks_agree(world, params);
      FAIL() << "a peer with sum " << peer_sum << " was not caught";
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("ranks ended with different parameters"), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(std::min(2.25, peer_sum))), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(std::max(2.25, peer_sum))), std::string::npos) << m;
    }
  }
}

TEST(Communicator, AllRanksOkOnlyWhenEveryRankIs) {
  TwoRanks fine({0.0}), failing({1.0});
  EXPECT_TRUE(all_ranks_ok(fine, true));
  EXPECT_FALSE(all_ranks_ok(fine, false));
  EXPECT_FALSE(all_ranks_ok(failing, true));
}

}  // namespace
}  // namespace tb
