// tests/datasets/test_idx_loader.cpp — MNIST IDX loading: a small hand-made image and
// label pair loads exactly (pixels / 255), and every error names the file and the
// byte offset (missing, short header, truncated payload, bad magic, count mismatch,
// label out of range).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/idx_loader.h"

namespace tb {
namespace {

using Bytes = std::vector<unsigned char>;

void put_be32(Bytes* b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b->push_back(static_cast<unsigned char>(v >> s));
}

Bytes images_file(uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols, const Bytes& pixels) {
  Bytes b;
  put_be32(&b, magic);
  put_be32(&b, n);
  put_be32(&b, rows);
  put_be32(&b, cols);
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

Bytes labels_file(uint32_t magic, uint32_t n, const Bytes& labels) {
  Bytes b;
  put_be32(&b, magic);
  put_be32(&b, n);
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

// A file under TB_TEST_TMPDIR named after the running test (unique per test).
std::string write_tmp(const std::string& suffix, const Bytes& content) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string path =
      std::string(TB_TEST_TMPDIR) + "/idx_" + info->test_suite_name() + "_" + info->name() + "_" + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
  return path;
}

void expect_error(const std::string& images, const std::string& labels, int64_t classes,
                  std::initializer_list<std::string> fragments) {
  try {
    load_idx(images, labels, classes);
    ADD_FAILURE() << "no DataError for " << images << ", " << labels;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

// 3 images of 2 x 2 pixels.
const Bytes kPixels = {0, 255, 51, 102, 1, 2, 3, 4, 254, 128, 0, 17};
const Bytes kLabels = {7, 0, 9};

TEST(IdxLoader, LoadsPixelsAndLabelsExactly) {
  const std::string img = write_tmp("images", images_file(0x803, 3, 2, 2, kPixels));
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, kLabels));
  const Dataset ds = load_idx(img, lab, 10);
  EXPECT_EQ(ds.task, Task::kClassification);
  EXPECT_EQ(ds.n, 3);
  EXPECT_EQ(ds.d, 4);
  EXPECT_EQ(ds.o, 10);
  ASSERT_EQ(ds.x.size(), kPixels.size());
  for (size_t k = 0; k < kPixels.size(); ++k) EXPECT_EQ(ds.x[k], static_cast<float>(kPixels[k]) / 255.0f) << k;
  EXPECT_EQ(ds.x[0], 0.0f);
  EXPECT_EQ(ds.x[1], 1.0f);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{7, 0, 9}));
  EXPECT_TRUE(ds.y.empty());
  EXPECT_EQ(ds.description, "idx:" + img + "," + lab);
}

TEST(IdxLoader, MissingFiles) {
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, kLabels));
  const std::string img = write_tmp("images", images_file(0x803, 3, 2, 2, kPixels));
  const std::string nowhere = std::string(TB_TEST_TMPDIR) + "/no_such_images";
  expect_error(nowhere, lab, 10, {nowhere + ": no such file or cannot open"});
  expect_error(img, nowhere, 10, {nowhere + ": no such file or cannot open"});
}

TEST(IdxLoader, ShorterThanHeader) {
  const std::string img = write_tmp("images", Bytes{0, 0, 8, 3, 0, 0, 0, 3, 0, 0});
  const std::string lab = write_tmp("labels", Bytes{0, 0, 8, 1, 0, 0});
  const std::string good_img = write_tmp("good_images", images_file(0x803, 3, 2, 2, kPixels));
  const std::string good_lab = write_tmp("good_labels", labels_file(0x801, 3, kLabels));
  expect_error(img, good_lab, 10, {img + ": truncated at byte 10: the images header needs 16 bytes, file has 10"});
  expect_error(good_img, lab, 10, {lab + ": truncated at byte 6: the labels header needs 8 bytes, file has 6"});
}

TEST(IdxLoader, TruncatedPayload) {
  const Bytes short_pixels(kPixels.begin(), kPixels.end() - 5);  // 7 of 12 bytes
  const std::string img = write_tmp("images", images_file(0x803, 3, 2, 2, short_pixels));
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, kLabels));
  expect_error(img, lab, 10, {img + ": truncated at byte 23: expected 12 bytes of pixels", "file has 7"});
  const std::string short_lab = write_tmp("short_labels", labels_file(0x801, 3, Bytes{1, 2}));
  const std::string good_img = write_tmp("good_images", images_file(0x803, 3, 2, 2, kPixels));
  expect_error(good_img, short_lab, 10, {short_lab + ": truncated at byte 10: expected 3 bytes of labels", "file has 2"});
  // Dimensions whose product overflows 64 bits are truncation too, not a crash.
  const std::string huge = write_tmp("huge_images", images_file(0x803, 0xffffffffu, 0xffffffffu, 0xffffffffu, kPixels));
  expect_error(huge, lab, 10, {huge + ": truncated at byte 28"});
}

TEST(IdxLoader, TrailingBytes) {
  Bytes extra = kPixels;
  extra.push_back(0);
  const std::string img = write_tmp("images", images_file(0x803, 3, 2, 2, extra));
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, kLabels));
  expect_error(img, lab, 10, {img + ": 1 unexpected trailing bytes at byte 28"});
}

TEST(IdxLoader, BadMagic) {
  const std::string img = write_tmp("images", images_file(0x802, 3, 2, 2, kPixels));
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, kLabels));
  expect_error(img, lab, 10, {img + ": bad magic 0x00000802 at byte 0 (expected 0x00000803 for images)"});
  // Images and labels swapped: each file's magic is wrong for its role.
  expect_error(lab, img, 10, {lab + ": bad magic 0x00000801 at byte 0 (expected 0x00000803 for images)"});
  const std::string good_img = write_tmp("good_images", images_file(0x803, 3, 2, 2, kPixels));
  const std::string bad_lab = write_tmp("bad_labels", labels_file(0x0d01, 3, kLabels));
  expect_error(good_img, bad_lab, 10, {bad_lab + ": bad magic 0x00000d01 at byte 0 (expected 0x00000801 for labels)"});
}

TEST(IdxLoader, CountMismatch) {
  const std::string img = write_tmp("images", images_file(0x803, 3, 2, 2, kPixels));
  const std::string lab = write_tmp("labels", labels_file(0x801, 2, Bytes{1, 2}));
  expect_error(img, lab, 10, {lab + ": 2 labels (count at byte 4) but " + img + " has 3 images"});
}

TEST(IdxLoader, LabelOutOfRange) {
  const std::string img = write_tmp("images", images_file(0x803, 3, 2, 2, kPixels));
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, Bytes{1, 11, 2}));
  expect_error(img, lab, 10, {lab + ": label 11 at byte 9 out of range [0, 10)"});
  EXPECT_NO_THROW(load_idx(img, lab, 12));
  EXPECT_THROW(load_idx(img, lab, 1), std::invalid_argument);
}

TEST(IdxLoader, ZeroDimension) {
  const std::string img = write_tmp("images", images_file(0x803, 3, 0, 2, Bytes{}));
  const std::string lab = write_tmp("labels", labels_file(0x801, 3, kLabels));
  expect_error(img, lab, 10, {img + ": dimension 1 is 0 at byte 8"});
}

}  // namespace
}  // namespace tb
