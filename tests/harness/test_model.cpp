// tests/harness/test_model.cpp — parameter layout and seeded initialisation.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/model.h"

namespace tb {
namespace {

ModelSpec mlp(std::vector<int64_t> layers) {
  ModelSpec m;
  m.kind = ModelKind::kMlp;
  m.layers = std::move(layers);
  return m;
}

TEST(Model, LayoutIsContiguousWeightsThenBias) {
  const ParamLayout p = make_layout(mlp({5, 7, 3}));
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_EQ(p.layers[0].w_offset, 0);
  EXPECT_EQ(p.layers[0].b_offset, 35);
  EXPECT_EQ(p.layers[1].w_offset, 42);
  EXPECT_EQ(p.layers[1].b_offset, 63);
  EXPECT_EQ(p.total, 66);
}

TEST(Model, InitIsPyTorchUniformAndSeeded) {
  const ModelSpec m = mlp({100, 30, 4});
  const std::vector<float> a = init_params(m, 7), b = init_params(m, 7), c = init_params(m, 8);
  ASSERT_EQ(a, b);
  EXPECT_NE(a, c);
  const ParamLayout lay = make_layout(m);
  for (const LayerView& v : lay.layers) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(v.in));
    double sum = 0, sq = 0;
    const int64_t cnt = v.in * v.out;
    for (int64_t i = 0; i < cnt + v.out; ++i) {
      const float w = a[v.w_offset + i];
      ASSERT_LE(std::fabs(w), bound);
      if (i < cnt) {
        sum += w;
        sq += double(w) * w;
      }
    }
    // U(-k, k): mean 0, variance k^2 / 3. Loose 5-sigma-ish bounds for the sample sizes here.
    const double mean = sum / cnt, var = sq / cnt - mean * mean;
    EXPECT_NEAR(mean, 0.0, 5 * bound / std::sqrt(3.0 * cnt));
    EXPECT_NEAR(var / (bound * bound / 3.0), 1.0, 0.15);
  }
}

TEST(Model, LayersString) { EXPECT_EQ(layers_to_string({784, 256, 10}), "784,256,10"); }

}  // namespace
}  // namespace tb
