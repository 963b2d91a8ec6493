// tests/mpi/mpi_grad_reducer_check.cpp — run under mpirun by ctest (1, 2 and 3 ranks):
// the MPI GradReducer (harness/backends/mpi_grad_reducer.cpp) over the real MPI
// communicator sums every rank's gradients exactly as a naive sum does, for bucket
// plans of one bucket per layer, a few layers per bucket and one bucket, with and
// without overlap, over two epochs of three steps — while the last rank behaves as an
// empty shard (finish() without layer_ready()), which must issue the same collectives.
// Gradients are small integers, so every sum is exact. Exit 0 only if all ranks agree.
#include <cstdio>
#include <memory>
#include <vector>

#include "harness/backends/grad_reducer.h"
#include "harness/comm/mpi_session.h"
#include "harness/ddp_plan.h"

namespace {

// Rank r's gradient element i at step s: a small integer.
float grad_of(int r, size_t i, int64_t s) { return static_cast<float>((i * 5 + static_cast<size_t>(r * 3 + s)) % 17); }

}  // namespace

int main() {
  auto world = tb::mpi_world(30);
  const int R = world->size(), me = world->rank();
  tb::ModelSpec spec;
  spec.kind = tb::ModelKind::kMlp;
  spec.layers = {9, 33, 17, 8, 5};  // 4 layers, P = 1049
  const tb::ParamLayout layout = tb::make_layout(spec);
  int failures = 0;
  for (int64_t bucket_bytes : {int64_t{1}, int64_t{1500}, int64_t{25} << 20}) {
    for (bool overlap : {true, false}) {
      tb::RunConfig opt;
      opt.bucket_mb = static_cast<double>(bucket_bytes) / (1 << 20);
      opt.overlap = overlap;
      std::vector<float> grads(static_cast<size_t>(layout.total));
      std::unique_ptr<tb::GradReducer> r = tb::make_mpi_grad_reducer(*world, opt);
      r->bind(tb::GradBuffer{grads.data(), nullptr}, layout);
      for (int epoch = 0; epoch < 2; ++epoch) {
        r->begin_epoch(3);
        for (int64_t s = 0; s < 3; ++s) {
          for (size_t i = 0; i < grads.size(); ++i) grads[i] = grad_of(me, i, s);
          const bool empty_shard = R > 1 && me == R - 1;
          if (!empty_shard) {
            for (int l = spec.num_layers() - 1; l >= 0; --l) r->layer_ready(s, l);
          }
          r->finish(s);
          for (size_t i = 0; i < grads.size(); ++i) {
            float want = 0;
            for (int q = 0; q < R; ++q) want += grad_of(q, i, s);
            failures += grads[i] != want;
          }
        }
        if (!(r->epoch_busy_seconds() >= 0)) ++failures;
      }
      if (r->bytes_per_step() != layout.total * 4) ++failures;
    }
  }
  double f = failures;
  world->allreduce_sum(&f, 1);
  if (me == 0) std::printf("mpi grad reducer over %d ranks: %s\n", R, f == 0 ? "ok" : "FAILED");
  tb::mpi_finalize_if_initialised();
  return f == 0 ? 0 : 1;
}
