#include "mnist_idx.h"

namespace train_mnist {

MnistData load_mnist(const std::string& data_dir, MnistSplit split) {
  MnistRaw raw = load_mnist_raw(data_dir, split);
  const int64_t count = raw.images.count;
  MnistData data;
  data.images = torch::from_blob(raw.images.pixels.data(), {count, 1, kMnistSide, kMnistSide},
                                 torch::kUInt8)
                    .to(torch::kFloat32)
                    .div_(255.0f)
                    .sub_(kMnistPixelMean)
                    .div_(kMnistPixelStd);
  data.labels = torch::from_blob(raw.labels.data(), {count}, torch::kUInt8).to(torch::kInt64);
  return data;
}

}  // namespace train_mnist
