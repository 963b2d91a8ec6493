// datasets/idx_loader.cpp — MNIST-style IDX image + label files -> Dataset.
// Shapes: N images of R x C unsigned bytes -> X is N x D (D = R*C) float in [0, 1]
// (pixel / 255); labels N int32 in [0, K), K = classes = O.
// Layout (big-endian): images = magic 0x00000803, N, R, C, then N*R*C bytes;
// labels = magic 0x00000801, N, then N bytes. Every error names the file and a
// byte offset.
#include "datasets/idx_loader.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803u;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801u;  // unsigned byte, 1 dimension

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw DataError(path + ": no such file or cannot open (" + std::strerror(errno) + ")");
  const std::streamoff size = in.tellg();
  if (size < 0) throw DataError(path + ": cannot determine the file size");
  std::vector<unsigned char> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    throw DataError(path + ": read error");
  }
  return bytes;
}

uint32_t be32(const std::vector<unsigned char>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | uint32_t{b[at + 3]};
}

std::string hex32(uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return s.str();
}

// Checks the size, the magic and the payload length; returns the header's dims.
std::vector<uint32_t> read_header(const std::string& path, const std::vector<unsigned char>& bytes, uint32_t magic,
                                  int ndims, const char* what, const char* payload_name) {
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  auto short_header = [&] {
    return DataError(path + ": truncated at byte " + std::to_string(bytes.size()) + ": the " + what + " header needs " +
                     std::to_string(header) + " bytes, file has " + std::to_string(bytes.size()));
  };
  // The magic first, so a wrong kind of file (say images and labels swapped) says so.
  if (bytes.size() < 4) throw short_header();
  const uint32_t got = be32(bytes, 0);
  if (got != magic) {
    throw DataError(path + ": bad magic " + hex32(got) + " at byte 0 (expected " + hex32(magic) + " for " + what +
                    ")");
  }
  if (bytes.size() < header) throw short_header();
  std::vector<uint32_t> dims(static_cast<size_t>(ndims));
  uint64_t payload = 1;
  bool overflow = false;
  for (int k = 0; k < ndims; ++k) {
    dims[k] = be32(bytes, 4 + 4 * static_cast<size_t>(k));
    if (dims[k] == 0) {
      throw DataError(path + ": dimension " + std::to_string(k) + " is 0 at byte " + std::to_string(4 + 4 * k));
    }
    // A product past 2^64 cannot fit in any file: report it as truncation.
    if (payload > UINT64_MAX / dims[k]) {
      overflow = true;
    } else {
      payload *= dims[k];
    }
  }
  const uint64_t have = bytes.size() - header;
  if (overflow) {
    std::string shape;
    for (int k = 0; k < ndims; ++k) shape += (k ? " x " : "") + std::to_string(dims[k]);
    throw DataError(path + ": truncated at byte " + std::to_string(bytes.size()) + ": expected " + shape +
                    " bytes of " + payload_name + " (over 2^64), file has " + std::to_string(have));
  }
  if (have < payload) {
    throw DataError(path + ": truncated at byte " + std::to_string(bytes.size()) + ": expected " +
                    std::to_string(payload) + " bytes of " + payload_name + " after the " + std::to_string(header) +
                    "-byte header, file has " + std::to_string(have));
  }
  if (have > payload) {
    throw DataError(path + ": " + std::to_string(have - payload) + " unexpected trailing bytes at byte " +
                    std::to_string(header + payload) + " (expected " + std::to_string(payload) + " bytes of " +
                    payload_name + " after the " + std::to_string(header) + "-byte header)");
  }
  return dims;
}

}  // namespace

Dataset load_idx(const std::string& images_path, const std::string& labels_path, int64_t classes) {
  if (classes < 2) {
    throw std::invalid_argument("load_idx(" + images_path + "): classification needs classes >= 2 (got " +
                                std::to_string(classes) + ")");
  }
  const std::vector<unsigned char> img = read_file(images_path);
  const std::vector<uint32_t> idims = read_header(images_path, img, kImagesMagic, 3, "images", "pixels");
  const std::vector<unsigned char> lab = read_file(labels_path);
  const std::vector<uint32_t> ldims = read_header(labels_path, lab, kLabelsMagic, 1, "labels", "labels");
  if (idims[0] != ldims[0]) {
    throw DataError(labels_path + ": " + std::to_string(ldims[0]) + " labels (count at byte 4) but " + images_path +
                    " has " + std::to_string(idims[0]) + " images (count at byte 4)");
  }

  Dataset ds;
  ds.task = Task::kClassification;
  ds.n = idims[0];
  ds.d = static_cast<int64_t>(idims[1]) * idims[2];
  ds.o = classes;
  constexpr size_t kImgHeader = 16, kLabHeader = 8;
  ds.labels.resize(static_cast<size_t>(ds.n));
  for (int64_t i = 0; i < ds.n; ++i) {
    const unsigned char l = lab[kLabHeader + static_cast<size_t>(i)];
    if (l >= classes) {
      throw DataError(labels_path + ": label " + std::to_string(l) + " at byte " +
                      std::to_string(kLabHeader + static_cast<size_t>(i)) + " out of range [0, " +
                      std::to_string(classes) + ")");
    }
    ds.labels[static_cast<size_t>(i)] = l;
  }
  const size_t total = static_cast<size_t>(ds.n * ds.d);
  ds.x.resize(total);
  const unsigned char* px = img.data() + kImgHeader;
  float* x = ds.x.data();
#pragma omp parallel for schedule(static) if (total > (size_t{1} << 20))
  for (int64_t k = 0; k < static_cast<int64_t>(total); ++k) x[k] = static_cast<float>(px[k]) / 255.0f;
  ds.description = "idx:" + images_path + "," + labels_path;
  return ds;
}

}  // namespace tb
