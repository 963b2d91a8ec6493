// harness/params_file.h — a parameter vector on disk, for comparing backends
// element by element (tests) and for handing a workload to outside peers.
// Layout (little-endian): 8-byte magic "TBPARAM1", int64 count, count float32.
// numpy: np.fromfile(path, dtype='<f4', offset=16).
#pragma once

#include <string>
#include <vector>

namespace tb {

void write_params_file(const std::string& path, const std::vector<float>& params);
// Throws std::runtime_error naming the file on a missing file, wrong magic or size.
std::vector<float> read_params_file(const std::string& path);

}  // namespace tb
