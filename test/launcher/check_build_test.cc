// chorusrun --check-build's checklist: the GPU lines follow what the build
// has (the expected lines are written out here, not derived from the code).
#include <gtest/gtest.h>

#include <string>

#include "check_build.h"

namespace chorus::launcher {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(CheckBuild, ReportsTheGpuHalfWithItsVersions) {
  BuildFeatures features;
  features.version = "0.1.0";
  features.cuda = "13.0; driver supports CUDA 13.0; 8 GPUs visible";
  features.nccl = "2.28.9";
  features.cudnn = "9.19.0";
  const std::string text = format_check_build(features);
  EXPECT_TRUE(has_line(text, "    [X] NCCL (CUDA) 2.28.9")) << text;
  EXPECT_TRUE(has_line(text, "    [X] CUDA through host memory (ranks sharing a GPU, or no NCCL)")) << text;
  EXPECT_TRUE(has_line(text, "    [X] CUDA 13.0; driver supports CUDA 13.0; 8 GPUs visible")) << text;
  EXPECT_TRUE(has_line(text, "    [X] cuDNN 9.19.0 (the train_mnist_cuda example)")) << text;
}

TEST(CheckBuild, SaysWhenTheBuildHasNoGpuSupport) {
  BuildFeatures features;
  features.version = "0.1.0";
  const std::string text = format_check_build(features);
  EXPECT_TRUE(has_line(text, "    [ ] NCCL (CUDA)")) << text;
  EXPECT_TRUE(has_line(text, "    [ ] CUDA through host memory (ranks sharing a GPU, or no NCCL)")) << text;
  EXPECT_TRUE(has_line(text, "    [ ] CUDA (built with CHORUS_WITH_CUDA=OFF)")) << text;
  EXPECT_TRUE(has_line(text, "    [ ] cuDNN (the train_mnist_cuda example)")) << text;
}

}  // namespace
}  // namespace chorus::launcher
