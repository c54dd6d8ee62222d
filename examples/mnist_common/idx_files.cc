#include "idx_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "example_error.h"

namespace train_mnist {
namespace {

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail("Cannot open MNIST file '" + path + "': " + std::strerror(errno) +
         " (expected an IDX file; scripts/prepare_mnist.sh prepares them)");
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("Cannot read MNIST file '" + path + "': " + std::strerror(errno));
  return bytes;
}

uint32_t big_endian_u32(const std::string& bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return value;
}

void append_big_endian_u32(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

// Checks the magic number and that the file is exactly header + items; returns
// the dimensions.
std::vector<uint32_t> parse_header(const std::string& path, const std::string& bytes,
                                   uint32_t magic, const char* what) {
  const size_t dims = magic & 0xff;
  const size_t header_size = 4 * (1 + dims);
  if (bytes.size() < header_size) {
    fail("MNIST file '" + path + "' is " + std::to_string(bytes.size()) +
         " bytes, shorter than the " + std::to_string(header_size) + "-byte IDX header of " + what);
  }
  const uint32_t found = big_endian_u32(bytes, 0);
  if (found != magic) {
    fail("MNIST file '" + path + "' has magic number " + hex32(found) + ", expected " +
         hex32(magic) + " (IDX " + what + ")");
  }
  std::vector<uint32_t> shape;
  uint64_t payload = 1;
  for (size_t d = 0; d < dims; ++d) {
    shape.push_back(big_endian_u32(bytes, 4 * (1 + d)));
    payload *= shape.back();
  }
  const uint64_t expected = header_size + payload;
  if (bytes.size() != expected) {
    std::ostringstream dims_text;
    for (size_t d = 0; d < dims; ++d) dims_text << (d ? " x " : "") << shape[d];
    fail("MNIST file '" + path + "' is " + std::to_string(bytes.size()) + " bytes, expected " +
         std::to_string(expected) + " (" + std::to_string(header_size) + "-byte header + " +
         dims_text.str() + " bytes as its header says): " +
         (bytes.size() < expected ? "truncated" : "trailing data"));
  }
  return shape;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fail("Cannot write IDX file '" + path + "': " + std::strerror(errno));
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  const std::string bytes = read_whole_file(path);
  const std::vector<uint32_t> shape = parse_header(path, bytes, kIdxImagesMagic, "images: N x rows x cols unsigned bytes");
  IdxImages images;
  images.count = shape[0];
  images.rows = shape[1];
  images.cols = shape[2];
  images.pixels.assign(bytes.begin() + 16, bytes.end());
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  const std::string bytes = read_whole_file(path);
  parse_header(path, bytes, kIdxLabelsMagic, "labels: N unsigned bytes");
  std::vector<uint8_t> labels(bytes.begin() + 8, bytes.end());
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] > 9) {
      fail("MNIST file '" + path + "' has label " + std::to_string(labels[i]) + " at index " +
           std::to_string(i) + ", expected 0-9");
    }
  }
  return labels;
}

void write_idx_images(const std::string& path, const IdxImages& images) {
  if (static_cast<int64_t>(images.pixels.size()) != images.count * images.rows * images.cols) {
    fail("write_idx_images('" + path + "'): " + std::to_string(images.pixels.size()) +
         " pixels, expected count x rows x cols = " +
         std::to_string(images.count * images.rows * images.cols));
  }
  std::string bytes;
  append_big_endian_u32(bytes, kIdxImagesMagic);
  append_big_endian_u32(bytes, static_cast<uint32_t>(images.count));
  append_big_endian_u32(bytes, static_cast<uint32_t>(images.rows));
  append_big_endian_u32(bytes, static_cast<uint32_t>(images.cols));
  bytes.append(images.pixels.begin(), images.pixels.end());
  write_file(path, bytes);
}

void write_idx_labels(const std::string& path, const std::vector<uint8_t>& labels) {
  std::string bytes;
  append_big_endian_u32(bytes, kIdxLabelsMagic);
  append_big_endian_u32(bytes, static_cast<uint32_t>(labels.size()));
  bytes.append(labels.begin(), labels.end());
  write_file(path, bytes);
}

std::string mnist_images_file(MnistSplit split) {
  return split == MnistSplit::kTrain ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
}

std::string mnist_labels_file(MnistSplit split) {
  return split == MnistSplit::kTrain ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
}

MnistRaw load_mnist_raw(const std::string& data_dir, MnistSplit split) {
  const std::string images_path = data_dir + "/" + mnist_images_file(split);
  const std::string labels_path = data_dir + "/" + mnist_labels_file(split);
  MnistRaw raw;
  raw.images = read_idx_images(images_path);
  raw.labels = read_idx_labels(labels_path);
  if (raw.images.rows != kMnistSide || raw.images.cols != kMnistSide) {
    fail("MNIST file '" + images_path + "' holds " + std::to_string(raw.images.rows) + "x" +
         std::to_string(raw.images.cols) + " images, expected 28x28");
  }
  if (raw.images.count != static_cast<int64_t>(raw.labels.size())) {
    fail("MNIST files '" + images_path + "' and '" + labels_path + "' disagree: " +
         std::to_string(raw.images.count) + " images but " + std::to_string(raw.labels.size()) +
         " labels (expected one label per image)");
  }
  if (raw.images.count == 0) {
    fail("MNIST file '" + images_path + "' holds no images, expected at least one");
  }
  return raw;
}

}  // namespace train_mnist
