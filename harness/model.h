// harness/model.h — model description, flat parameter layout and initialisation.
// layers = {D, H1, ..., O}: L = layers.size() - 1 fully-connected layers; ReLU
// after every layer but the last. Layer l (0-based) holds W_l as out x in
// row-major (PyTorch's nn.Linear layout: y = x W^T + b) followed by b_l (out).
// All parameters live in one flat buffer; views are offsets into it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace tb {

enum class ModelKind { kLinear, kMlp };

const char* model_name(ModelKind m);

struct ModelSpec {
  ModelKind kind = ModelKind::kLinear;
  std::vector<int64_t> layers;      // {D, ..., O}
  Task task = Task::kRegression;    // decides the loss: MSE or softmax cross-entropy

  int num_layers() const { return static_cast<int>(layers.size()) - 1; }
  int64_t in_dim() const { return layers.front(); }
  int64_t out_dim() const { return layers.back(); }
  int64_t max_width() const;
};

struct LayerView {
  int64_t in = 0, out = 0;
  int64_t w_offset = 0;  // out x in
  int64_t b_offset = 0;  // out
};

struct ParamLayout {
  std::vector<LayerView> layers;
  int64_t total = 0;
};

ParamLayout make_layout(const ModelSpec& m);

// PyTorch's nn.Linear default init as a pure function of the seed:
// W, b ~ U(-1/sqrt(in), 1/sqrt(in)), element (o, i) of layer l from Philox stream 16+2l.
std::vector<float> init_params(const ModelSpec& m, uint64_t seed);

// "64,256,10" <-> {64, 256, 10}
std::string layers_to_string(const std::vector<int64_t>& layers);

// Order-independent summary of a parameter vector: sum of all values in double.
double param_checksum(const std::vector<float>& params);

}  // namespace tb
