// datasets/synthetic.h — synthetic regression and classification data, row-pure.
// Every value is a function of (seed, stream, row, col) only (datasets/philox.h),
// so generate_rows(spec, a, b) equals rows [a, b) of the whole, bitwise, for any
// split — the property DDP ranks rely on to make their own shards.
//   regression:     x ~ U(-1, 1)^D; y = x W* + b* + noise, W* ~ U(-1,1)/sqrt(D) (D x O),
//                   b* ~ U(-1, 1), noise ~ N(0, spec.noise^2)
//   classification: x ~ U(-1, 1)^D; label = argmax_k (x T + c)_k, a fixed random
//                   linear teacher T (D x K) ~ N(0,1), c ~ U(-0.5, 0.5): learnable, K-way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace tb {

// Fills rows [row_begin, row_end) of the synthetic set described by spec into
// x (rows x D), and y (rows x O, regression) or labels (rows, classification).
void generate_rows(const DatasetSpec& spec, int64_t row_begin, int64_t row_end, float* x, float* y,
                   int32_t* labels);

Dataset make_synthetic(const DatasetSpec& spec);

// What make_synthetic(spec) names its data ("synthetic-regression(seed=1,noise=0.1)"),
// without making it.
std::string synthetic_description(const DatasetSpec& spec);

// Only the given rows (ascending, distinct, within [0, spec.n)): a subset Dataset
// (dataset.h) whose row i is bitwise row rows[i] of make_synthetic(spec).
Dataset make_synthetic_rows(const DatasetSpec& spec, std::vector<int64_t> rows);

}  // namespace tb
