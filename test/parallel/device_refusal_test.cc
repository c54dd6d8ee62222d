// A tensor on a device no backend of this rank serves is refused at
// submission by every collective, with an error that says why: this build
// has no CUDA; this rank sees no GPU; the tensor is on another GPU than the
// one this rank is bound to. chorus::supports() and chorus::check_device()
// give the same answer before anything is submitted. After a refusal the
// same names still work on the CPU: nothing was left in flight.
//
// Which case a rank is in depends on the machine: without a GPU (this
// suite's usual machine) the "sees no CUDA device" refusal is checked for
// real; with one, the refusal of another GPU is.
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus_test {
namespace {

using chorus::Device;
using chorus::StatusCode;

// GPUs CUDA shows this rank (0 in a build without CUDA or without a driver).
int visible_gpus() {
#ifdef CHORUS_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

std::string visible_devices_text() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return value == nullptr ? "CUDA_VISIBLE_DEVICES unset" : "CUDA_VISIBLE_DEVICES=" + std::string(value);
}

// Every collective that takes a tensor, submitting `t` under `name` (a
// group's member is `name`.1).
std::vector<std::pair<std::string, std::function<chorus::Handle(const std::string&, const chorus::Tensor&)>>>
every_submission() {
  return {
      {"allreduce", [](const std::string& n, const chorus::Tensor& t) { return chorus::allreduce_async(n, t); }},
      {"grouped_allreduce",
       [](const std::string& n, const chorus::Tensor& t) {
         static float cpu_data[4] = {1, 2, 3, 4};
         const chorus::Tensor cpu(cpu_data, DataType::kFloat32, {4});
         return chorus::grouped_allreduce_async(n, {cpu, t}, {cpu, t});
       }},
      {"allgather", [](const std::string& n, const chorus::Tensor& t) { return chorus::allgather_async(n, t); }},
      {"broadcast", [](const std::string& n, const chorus::Tensor& t) { return chorus::broadcast_async(n, t, 0); }},
      {"alltoall", [](const std::string& n, const chorus::Tensor& t) { return chorus::alltoall_async(n, t); }},
      {"reducescatter",
       [](const std::string& n, const chorus::Tensor& t) { return chorus::reducescatter_async(n, t); }},
  };
}

class DeviceRefusalTest : public ChorusSuite {
 protected:
  // Submits a float32 tensor of `size()` x 4 on `device` through every
  // collective; each must throw `expected(name)` (the name refused) before
  // anything runs. The data is host memory: nothing may touch it.
  void expect_every_collective_refuses(const Device& device,
                                       const std::function<void(const chorus::Status&, const std::string&)>& check) {
    std::vector<float> data(static_cast<size_t>(4 * size()), 1.0f);
    const chorus::Tensor on_device(data.data(), DataType::kFloat32, {size(), 4}, device);
    for (const auto& [op, call] : every_submission()) {
      SCOPED_TRACE(op);
      const std::string name = "refused." + op;
      const chorus::Status status = thrown_by([&, call = call] { (void)call(name, on_device); });
      EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
      check(status, op == "grouped_allreduce" ? name + ".1" : name);
    }
    EXPECT_FALSE(chorus::supports(device));
    const chorus::Status asked = chorus::check_device("asked", device);
    EXPECT_EQ(asked.code(), StatusCode::kInvalidArgument);
    check(asked, "asked");

    // The names are free: the same collectives on the CPU go through.
    std::vector<float> cpu_data(data.size(), 1.0f);
    const chorus::Tensor cpu(cpu_data.data(), DataType::kFloat32, {size(), 4});
    for (const auto& [op, call] : every_submission()) {
      SCOPED_TRACE(op + " on the CPU");
      if (op == "grouped_allreduce") continue;  // its CPU member would be submitted twice
      chorus::Handle handle = submit([&, call = call] { return call("refused." + op, cpu); });
      EXPECT_DONE(handle);
    }
  }
};

TEST_F(DeviceRefusalTest, TheCpuIsServed) {
  EXPECT_TRUE(chorus::supports(Device::cpu()));
  EXPECT_TRUE(chorus::check_device("x", Device::cpu()).ok());
}

TEST_F(DeviceRefusalTest, ACudaTensorOnARankWithoutAGpuIsRefusedSayingWhy) {
  if (visible_gpus() > 0) {
    GTEST_SKIP() << "this rank sees " << visible_gpus()
                 << " GPU(s): the refusal of a rank without one needs a machine without a GPU";
  }
#ifdef CHORUS_WITH_CUDA
  // e.g. "... (CUDA_VISIBLE_DEVICES unset; cudaGetDeviceCount failed: ...)"
  const std::string why = "but this rank sees no CUDA device (" + visible_devices_text() + "; ";
#else
  const std::string why = "but this build of Chorus has no CUDA support (built with CHORUS_WITH_CUDA=OFF)";
#endif
  expect_every_collective_refuses(Device::cuda(0), [&](const chorus::Status& status, const std::string& name) {
    const std::string head = "tensor '" + name + "' is on cuda:0 " + why;
    EXPECT_EQ(status.message().substr(0, head.size()), head) << status.message();
  });
}

TEST_F(DeviceRefusalTest, ATensorOnAnotherGpuThanTheRanksIsRefusedNamingBoth) {
  const int visible = visible_gpus();
  if (visible == 0) GTEST_SKIP() << "this rank sees no GPU, so it is bound to none (" << visible_devices_text() << ")";
  const char* chosen = std::getenv("CHORUS_CUDA_DEVICE");
  const int bound = chosen != nullptr ? std::stoi(chosen) : chorus::local_rank() % visible;
  ASSERT_TRUE(chorus::supports(Device::cuda(bound)));
  // An index this rank does not see is never its own.
  expect_every_collective_refuses(Device::cuda(visible), [&](const chorus::Status& status, const std::string& name) {
    const std::string head = "tensor '" + name + "' is on cuda:" + std::to_string(visible) +
                             " but this rank's device is cuda:" + std::to_string(bound) + " (";
    EXPECT_EQ(status.message().substr(0, head.size()), head) << status.message();
  });
}

TEST_F(DeviceRefusalTest, ADeviceNoBackendKnowsKeepsTheGeneralRefusal) {
  expect_every_collective_refuses(Device::custom(3), [](const chorus::Status& status, const std::string& name) {
    EXPECT_EQ(status.message(), "'" + name + "': no backend in this build supports tensors on custom:3");
  });
}

}  // namespace
}  // namespace chorus_test
