// train_mnist_cuda's GPU code against the host reference (reference_mlp.h):
// the cuBLAS/cuDNN forward and backward (layouts, transposes, leading
// dimensions), the loss kernel, bias gradients, accumulation, the batch
// gather, Adam and the gradient norm. Every test skips, saying why, when no
// GPU is visible.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "adam.h"
#include "cuda_check.h"
#include "cuda_stream.h"
#include "device_buffer.h"
#include "device_selection.h"
#include "kernels.h"
#include "mlp_layout.h"
#include "mlp_model.h"
#include "reference_mlp.h"
#include "stream_event.h"

namespace train_mnist_cuda_test {
namespace {

using namespace train_mnist_cuda;

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& host, cudaStream_t stream) {
  DeviceBuffer<T> buffer(static_cast<int64_t>(host.size()));
  CUDA_CHECK(cudaMemcpyAsync(buffer.get(), host.data(), buffer.bytes(), cudaMemcpyHostToDevice, stream));
  wait_for_stream(stream);
  return buffer;
}

template <typename T>
std::vector<T> to_host(const T* device, int64_t count, cudaStream_t stream) {
  std::vector<T> host(static_cast<size_t>(count));
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
  wait_for_stream(stream);
  return host;
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceProbe probe = probe_devices();
    if (probe.count < 1) GTEST_SKIP() << no_device_message(0, probe, std::getenv("CUDA_VISIBLE_DEVICES"));
    use_device(0);
    stream_ = std::make_unique<CudaStream>();
  }
  cudaStream_t stream() const { return stream_->get(); }

  std::unique_ptr<CudaStream> stream_;
};

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> labels;
};

Batch random_batch(int rows, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Batch batch;
  for (int i = 0; i < rows * kInputs; ++i) batch.x.push_back(normal(generator));
  for (int i = 0; i < rows; ++i) batch.labels.push_back(static_cast<int32_t>(generator() % kClasses));
  return batch;
}

std::vector<double> as_double(const std::vector<float>& values) { return {values.begin(), values.end()}; }

// Largest |gpu - reference| over a slice, relative to the slice's largest |reference|.
double relative_error(const std::vector<float>& gpu, const std::vector<double>& reference, int64_t offset,
                      int64_t count) {
  double error = 0, scale = 1e-30;
  for (int64_t i = offset; i < offset + count; ++i) {
    error = std::max(error, std::fabs(gpu[static_cast<size_t>(i)] - reference[static_cast<size_t>(i)]));
    scale = std::max(scale, std::fabs(reference[static_cast<size_t>(i)]));
  }
  return error / scale;
}

// One pass of the trainer's sequence; returns the order in which the layers
// reported their gradients.
std::vector<Layer> run_pass(MlpModel& model, const DeviceBuffer<float>& x, const DeviceBuffer<int32_t>& labels,
                            int rows, bool accumulate, DeviceBuffer<double>& sums, cudaStream_t stream) {
  const float* log_probs = model.forward(x.get(), rows);
  launch_cross_entropy(log_probs, labels.get(), rows, kClasses, 1.0f / static_cast<float>(rows),
                       model.logits_gradient(), sums.get(), sums.get() + 1, sums.get() + 2, stream);
  std::vector<Layer> order;
  model.backward(x.get(), rows, accumulate, [&](Layer layer) { order.push_back(layer); });
  return order;
}

TEST_F(GpuTest, ForwardLossAndGradientsMatchTheReference) {
  for (const int rows : {1, 37, 64, 1000}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const std::vector<float> parameters = initial_parameters(9);
    const Batch batch = random_batch(rows, 4);
    MlpModel model(1000, stream());
    model.upload_parameters(parameters);
    const DeviceBuffer<float> x = to_device(batch.x, stream());
    const DeviceBuffer<int32_t> labels = to_device(batch.labels, stream());
    DeviceBuffer<double> sums = to_device(std::vector<double>(3, 0.0), stream());
    const std::vector<Layer> order = run_pass(model, x, labels, rows, /*accumulate=*/false, sums, stream());
    EXPECT_EQ(order, (std::vector<Layer>{Layer::kOutputLayer, Layer::kHiddenLayer}));

    const ReferencePass reference = reference_pass(as_double(parameters), batch.x, batch.labels, rows, 1.0 / rows);
    const std::vector<float> log_probs = to_host(model.forward(x.get(), rows), int64_t(rows) * kClasses, stream());
    for (size_t i = 0; i < log_probs.size(); ++i) ASSERT_NEAR(log_probs[i], reference.log_probs[i], 2e-4) << i;
    const std::vector<double> got_sums = to_host(sums.get(), 3, stream());
    EXPECT_NEAR(got_sums[0], reference.loss_sum, 1e-5 * reference.loss_sum);
    // The batch's sum, here the only batch (atomics may add in another order).
    EXPECT_NEAR(got_sums[1], got_sums[0], 1e-9 * got_sums[0]);
    EXPECT_EQ(got_sums[2], static_cast<double>(reference.correct));
    const std::vector<float> gradients = to_host(model.gradients(), kParameterCount, stream());
    for (const ParameterSlice& slice : kParameterSlices) {
      EXPECT_LT(relative_error(gradients, reference.gradients, slice.offset, slice.count()), 1e-4) << slice.name;
    }
  }
}

TEST_F(GpuTest, AccumulatedPassesAddTheirGradients) {
  const int rows = 19;
  const Batch batch = random_batch(rows, 8);
  MlpModel model(64, stream());
  model.upload_parameters(initial_parameters(3));
  const DeviceBuffer<float> x = to_device(batch.x, stream());
  const DeviceBuffer<int32_t> labels = to_device(batch.labels, stream());
  DeviceBuffer<double> sums = to_device(std::vector<double>(3, 0.0), stream());
  run_pass(model, x, labels, rows, false, sums, stream());
  const std::vector<float> once = to_host(model.gradients(), kParameterCount, stream());
  run_pass(model, x, labels, rows, true, sums, stream());
  const std::vector<float> twice = to_host(model.gradients(), kParameterCount, stream());
  std::vector<double> doubled(once.begin(), once.end());
  for (double& value : doubled) value *= 2;
  for (const ParameterSlice& slice : kParameterSlices) {
    EXPECT_LT(relative_error(twice, doubled, slice.offset, slice.count()), 1e-6) << slice.name;
  }
}

TEST_F(GpuTest, GatherTakesTheIndexedRows) {
  const int features = kInputs, count = 5;
  std::vector<float> images(static_cast<size_t>(count * features));
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i);
  const std::vector<int32_t> labels = {3, 1, 4, 1, 5};
  const std::vector<int32_t> indices = {4, 0, 4};
  const DeviceBuffer<float> images_d = to_device(images, stream());
  const DeviceBuffer<int32_t> labels_d = to_device(labels, stream());
  const DeviceBuffer<int32_t> indices_d = to_device(indices, stream());
  DeviceBuffer<float> x(3 * features);
  DeviceBuffer<int32_t> y(3);
  launch_gather_batch(images_d.get(), labels_d.get(), indices_d.get(), 3, features, x.get(), y.get(), stream());
  const std::vector<float> got = to_host(x.get(), x.count(), stream());
  EXPECT_EQ(to_host(y.get(), 3, stream()), (std::vector<int32_t>{5, 3, 5}));
  for (int row = 0; row < 3; ++row) {
    for (int col = 0; col < features; col += 97) {
      const size_t source = static_cast<size_t>(indices[static_cast<size_t>(row)] * features + col);
      EXPECT_EQ(got[static_cast<size_t>(row * features + col)], images[source]);
    }
  }
}

TEST_F(GpuTest, AdamMatchesTheReference) {
  const int64_t n = 4099;
  std::mt19937_64 generator(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> parameters(static_cast<size_t>(n)), gradients(static_cast<size_t>(n));
  for (float& p : parameters) p = normal(generator);
  DeviceBuffer<float> parameters_d = to_device(parameters, stream());
  AdamOptimizer adam(AdamSettings{2e-3}, n, stream());
  std::vector<double> reference = as_double(parameters), m(size_t(n), 0.0), v(size_t(n), 0.0);
  for (int64_t t = 1; t <= 4; ++t) {
    for (float& g : gradients) g = normal(generator) * 0.01f;
    const DeviceBuffer<float> gradients_d = to_device(gradients, stream());
    const float scale = t == 4 ? 0.5f : 1.0f;
    adam.step(parameters_d.get(), gradients_d.get(), scale);
    reference_adam(reference, as_double(gradients), m, v, t, 2e-3, scale);
  }
  EXPECT_EQ(adam.steps(), 4);
  const std::vector<float> got = to_host(parameters_d.get(), n, stream());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], reference[i], 1e-6) << i;
  const std::vector<float> got_m = adam.download_m();
  for (size_t i = 0; i < got_m.size(); ++i) ASSERT_NEAR(got_m[i], m[i], 1e-7) << i;
}

TEST_F(GpuTest, GradientNormIsTheL2NormOfAllGradients) {
  MlpModel model(8, stream());
  std::vector<float> gradients(static_cast<size_t>(kParameterCount), 0.0f);
  gradients[0] = 3.0f;
  gradients[static_cast<size_t>(kOutputBias.offset + 9)] = 4.0f;
  CUDA_CHECK(cudaMemcpy(model.gradients(), gradients.data(), gradients.size() * sizeof(float), cudaMemcpyHostToDevice));
  EXPECT_FLOAT_EQ(model.gradient_norm(), 5.0f);
}

TEST_F(GpuTest, StreamEventsReportTheirStreamsWork) {
  DeviceBuffer<float> buffer(1 << 20);
  CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), stream()));
  const std::shared_ptr<const StreamEvent> event = StreamEvent::record(stream());
  event->synchronize();
  EXPECT_TRUE(event->done());
}

}  // namespace
}  // namespace train_mnist_cuda_test
