// tests/harness/test_grad_reducer.cpp — the MPI GradReducer (harness/backends/
// mpi_grad_reducer.cpp) against a naive sum, over a stand-in communicator: rank 0 of a
// world whose other ranks' gradients (their sum, per element) are known. Every bucket
// of the plan (ddp_plan.h plan_buckets) must be reduced exactly once per step, with the
// non-blocking all-reduce for all but the last bucket (with overlap) started in
// layer_ready() as soon as its first layer is final, and the blocking one for the rest
// in finish() — the same calls whether or not the rank ran backward (an empty shard
// calls finish() only). The real MPI job: tests/mpi/mpi_grad_reducer_check.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backends/grad_reducer.h"
#include "harness/ddp_plan.h"
#include "tests/harness/test_helpers.h"

namespace tb {
namespace {

// Rank 0 of a world whose other ranks contribute `peer` (P floats, summed): every
// all-reduce of grads[off, off + n) adds peer[off, off + n) — the blocking one at once,
// a non-blocking one when it is waited for. Records the calls.
class PeerSum final : public Communicator {
 public:
  PeerSum(const float* base, std::vector<float> peer) : base_(base), peer_(std::move(peer)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  std::string name() const override { return "peer-sum"; }
  void allreduce_sum(float* data, int64_t n) override {
    log.push_back("allreduce@" + std::to_string(data - base_));
    add(data, n);
  }
  int iallreduce_sum(float* data, int64_t n) override {
    log.push_back("iallreduce@" + std::to_string(data - base_));
    pending_.push_back({data, n});
    return static_cast<int>(pending_.size()) - 1;
  }
  void wait(int h) override {
    log.push_back("wait@" + std::to_string(pending_.at(static_cast<size_t>(h)).data - base_));
    Pending& p = pending_.at(static_cast<size_t>(h));
    if (p.data == nullptr) throw std::logic_error("waited twice");
    add(p.data, p.n);
    p.data = nullptr;
  }
  void poke() override { log.push_back("poke"); }
  void allreduce_sum(double*, int64_t) override { unused(); }
  void allreduce_max(double*, int64_t) override { unused(); }
  void allgather(const float*, int64_t, float*) override { unused(); }
  void allgather(const double*, int64_t, double*) override { unused(); }
  void broadcast(float*, int64_t, int) override { unused(); }
  void broadcast(char*, int64_t, int) override { unused(); }
  void barrier() override { unused(); }
  [[noreturn]] void abort(int, const std::string& why) override { throw std::logic_error("abort: " + why); }

  std::vector<std::string> log;

 private:
  struct Pending {
    float* data;
    int64_t n;
  };
  void add(float* data, int64_t n) {
    const int64_t off = data - base_;
    for (int64_t i = 0; i < n; ++i) data[i] += peer_[static_cast<size_t>(off + i)];
  }
  [[noreturn]] static void unused() { throw std::logic_error("not used by the reducer"); }
  const float* base_;
  std::vector<float> peer_;
  std::vector<Pending> pending_;
};

struct Case {
  double bucket_mb;
  bool overlap;
  bool backward;  // false: an empty shard, finish() only
};

std::string describe(const Case& c) {
  return "bucket " + std::to_string(c.bucket_mb) + " MiB, overlap " + std::to_string(c.overlap) + ", backward " +
         std::to_string(c.backward);
}

TEST(MpiGradReducer, SumsEveryBucketOnceMatchingANaiveSum) {
  const ModelSpec spec = test::model({5, 7, 6, 4, 3}, Task::kRegression);  // 4 layers, P = 143
  const ParamLayout layout = make_layout(spec);
  const int L = spec.num_layers();
  for (const Case& c : {Case{1e-6, true, true}, Case{1e-6, false, true}, Case{1e-6, true, false},
                        Case{0.0002, true, true}, Case{25, true, true}, Case{1e-6, false, false}}) {
    SCOPED_TRACE(describe(c));
    RunConfig opt;
    opt.bucket_mb = static_cast<double>(static_cast<int64_t>(c.bucket_mb * (1 << 20))) / (1 << 20);
    opt.overlap = c.overlap;
    const std::vector<Bucket> buckets = plan_buckets(layout, opt.bucket_bytes());
    std::vector<float> grads(static_cast<size_t>(layout.total)), peer(grads.size());
    for (int64_t step = 0; step < 2; ++step) {
      for (size_t i = 0; i < grads.size(); ++i) {  // small integers: every sum is exact
        grads[i] = static_cast<float>((i * 7 + static_cast<size_t>(step)) % 13);
        peer[i] = static_cast<float>((i * 3 + 1) % 11);
      }
      std::vector<float> want(grads.size());
      for (size_t i = 0; i < grads.size(); ++i) want[i] = grads[i] + peer[i];
      PeerSum world(grads.data(), peer);
      std::unique_ptr<GradReducer> r = make_mpi_grad_reducer(world, opt);
      r->bind(GradBuffer{grads.data(), nullptr}, layout);
      r->begin_epoch(2);
      EXPECT_EQ(r->bytes_per_step(), layout.total * 4);

      std::vector<std::string> expected;  // the calls, as the interface promises them
      auto non_blocking = [&](size_t k) { return c.overlap && k + 1 < buckets.size(); };
      size_t next = 0;
      if (c.backward) {
        for (int l = L - 1; l >= 0; --l) {
          r->layer_ready(step, l);
          for (; next < buckets.size() && buckets[next].first_layer == l; ++next) {
            if (non_blocking(next)) expected.push_back("iallreduce@" + std::to_string(buckets[next].offset));
          }
          expected.push_back("poke");
        }
        EXPECT_GE(r->take_progress_seconds(), 0.0);
      }
      EXPECT_EQ(r->take_progress_seconds(), 0.0) << "taken: the progress time resets";
      r->finish(step);
      for (; next < buckets.size(); ++next) {
        if (non_blocking(next)) expected.push_back("iallreduce@" + std::to_string(buckets[next].offset));
      }
      for (size_t k = 0; k < buckets.size(); ++k) {
        expected.push_back((non_blocking(k) ? "wait@" : "allreduce@") + std::to_string(buckets[k].offset));
      }
      EXPECT_EQ(world.log, expected);
      EXPECT_EQ(grads, want);
      EXPECT_GE(r->epoch_busy_seconds(), 0.0);
    }
  }
}

}  // namespace
}  // namespace tb
