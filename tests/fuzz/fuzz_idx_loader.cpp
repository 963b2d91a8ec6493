// tests/fuzz/fuzz_idx_loader.cpp — fuzz target for datasets/idx_loader: an images and a
// labels file cut from one input either load (N x R*C pixels in [0, 1], N labels < K) or
// fail with DataError naming one of the files.
#include <cstring>

#include "datasets/idx_loader.h"
#include "tests/fuzz/fuzz_targets.h"

namespace tb::fuzz {

int idx_loader(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t images_len = 0;
  std::memcpy(&images_len, data, 4);  // little-endian on every machine this builds on
  const size_t rest = size - 4;
  const size_t cut = rest == 0 ? 0 : images_len % (rest + 1);
  const std::string images = scratch_file("images.idx", data + 4, cut);
  const std::string labels = scratch_file("labels.idx", data + 4 + cut, rest - cut);
  for (int64_t classes : {2, 10, 256}) {
    try {
      const Dataset ds = load_idx(images, labels, classes);
      TB_FUZZ_REQUIRE(ds.task == Task::kClassification && ds.n >= 1 && ds.d >= 1 && ds.o == classes);
      TB_FUZZ_REQUIRE(ds.x.size() == static_cast<size_t>(ds.n * ds.d));
      TB_FUZZ_REQUIRE(ds.labels.size() == static_cast<size_t>(ds.n) && ds.y.empty());
      for (float v : ds.x) TB_FUZZ_REQUIRE(v >= 0.0f && v <= 1.0f);
      for (int32_t l : ds.labels) TB_FUZZ_REQUIRE(l >= 0 && l < classes);
    } catch (const DataError& e) {
      const std::string what = e.what();
      TB_FUZZ_REQUIRE(what.rfind(images, 0) == 0 || what.rfind(labels, 0) == 0);
    }
  }
  return 0;
}

}  // namespace tb::fuzz
