// harness/model.cpp — flat parameter layout and PyTorch-default initialisation.
#include "harness/model.h"

#include <algorithm>
#include <cmath>

#include "datasets/philox.h"

namespace tb {

const char* model_name(ModelKind m) { return m == ModelKind::kLinear ? "linear" : "mlp"; }

int64_t ModelSpec::max_width() const { return *std::max_element(layers.begin(), layers.end()); }

ParamLayout make_layout(const ModelSpec& m) {
  ParamLayout p;
  int64_t off = 0;
  for (int l = 0; l < m.num_layers(); ++l) {
    LayerView v;
    v.in = m.layers[l];
    v.out = m.layers[l + 1];
    v.w_offset = off;
    off += v.in * v.out;
    v.b_offset = off;
    off += v.out;
    p.layers.push_back(v);
  }
  p.total = off;
  return p;
}

std::vector<float> init_params(const ModelSpec& m, uint64_t seed) {
  const ParamLayout lay = make_layout(m);
  std::vector<float> p(static_cast<size_t>(lay.total));
  for (size_t l = 0; l < lay.layers.size(); ++l) {
    const LayerView& v = lay.layers[l];
    const float bound = 1.0f / std::sqrt(static_cast<float>(v.in));
    const auto ws = static_cast<uint32_t>(kStreamInitBase + 2 * l);
    for (int64_t o = 0; o < v.out; ++o) {
      for (int64_t i = 0; i < v.in; ++i) {
        p[v.w_offset + o * v.in + i] = uniform_at(seed, ws, o, i, -bound, bound);
      }
      p[v.b_offset + o] = uniform_at(seed, ws + 1, o, 0, -bound, bound);
    }
  }
  return p;
}

std::string layers_to_string(const std::vector<int64_t>& layers) {
  std::string s;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(layers[i]);
  }
  return s;
}

double param_checksum(const std::vector<float>& params) {
  double s = 0;
  for (float v : params) s += v;
  return s;
}

}  // namespace tb
