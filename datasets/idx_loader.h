// datasets/idx_loader.h — MNIST IDX files (big-endian; magic 0x00000803 images,
// 0x00000801 labels). Pixels are scaled to [0, 1]; N x (rows*cols) features.
#pragma once

#include <string>

#include "datasets/dataset.h"

namespace tb {

// Throws DataError naming the file and byte offset on a missing or truncated file,
// a wrong magic number, mismatched counts or a label >= classes.
Dataset load_idx(const std::string& images_path, const std::string& labels_path, int64_t classes);

}  // namespace tb
