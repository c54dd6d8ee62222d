// chorusrun --check-build's checklist: the GPU lines follow what the build
// has (the expected lines are written out here, not derived from the code);
// and what detect_build_features() and `chorusrun --check-build` report in
// this very build, against facts CMake passes in (the options it was
// configured with, the versions in NCCL's and cuDNN's headers, the CUDA
// Toolkit's version, the MPI implementation's mpi.h) and the machine's own
// answers (nvidia-smi, srun --version).
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <regex>
#include <string>

#include "about/check_build.h"

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

TEST(CheckBuild, ListsTheSharedMemoryProbesCache) {
  BuildFeatures features;
  features.version = "0.1.0";
  features.probe_folder = "/home/u/.cache/chorus";
  EXPECT_TRUE(has_line(format_check_build(features), "    nothing measured yet on this machine"));
  features.probes = {"host=h;ranks=2: plain stores; mpi from 0 B, shm from 32 KiB (...)"};
  const std::string text = format_check_build(features);
  EXPECT_TRUE(has_line(text, "Shared-memory allreduce, measured at start-up (CHORUS_SHM_PROBE; cache "
                             "/home/u/.cache/chorus):")) << text;
  EXPECT_TRUE(has_line(text, "    host=h;ranks=2: plain stores; mpi from 0 B, shm from 32 KiB (...)")) << text;
}

// --- The build this test runs in -------------------------------------------

// CMake's facts (test/launcher/CMakeLists.txt): "" where the build has no such part.
const std::string kVersion = EXPECTED_CHORUS_VERSION;
const std::string kCuda = EXPECTED_CUDA_VERSION;    // "13.0": the toolkit's major.minor
const std::string kNccl = EXPECTED_NCCL_VERSION;    // "2.28.9": nccl.h's NCCL_MAJOR/MINOR/PATCH
const std::string kCudnn = EXPECTED_CUDNN_VERSION;  // "9.19.0": cudnn_version.h's
const bool kTorch = EXPECTED_TORCH;

// The Open MPI this build compiled against, as chorusrun names it; its
// mpirun is the one next to CMake's MPIEXEC_EXECUTABLE, which the tests put
// first on PATH.
std::string built_mpi() {
#ifdef OMPI_MAJOR_VERSION
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
         std::to_string(OMPI_RELEASE_VERSION);
#else
  return "";  // chorusrun launches with Open MPI's mpirun only
#endif
}

// Runs a shell command; its stdout and exit status (-1: could not run).
std::string shell(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int raw = pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

class CheckBuildHere : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string mpiexec = MPIEXEC_PATH;
    const std::string dir = mpiexec.substr(0, mpiexec.rfind('/'));
    const char* path = getenv("PATH");
    setenv("PATH", (dir + ":" + (path ? path : "/usr/bin:/bin")).c_str(), 1);
  }

  // What GPUs the machine shows this process: the GPU part of the CUDA line
  // after the toolkit's version, as a regex.
  static std::string expected_gpu_part() {
    int status = 0;
    const std::string listing = shell("nvidia-smi -L 2>/dev/null", &status);
    if (status != 0) return "; (no CUDA driver on this machine|driver supports CUDA [0-9]+\\.[0-9]+; no GPU visible .*)";
    if (getenv("CUDA_VISIBLE_DEVICES") != nullptr) return "; driver supports CUDA [0-9]+\\.[0-9]+; [0-9]+ GPUs? visible";
    int gpus = 0;
    for (size_t at = 0; (at = listing.find("GPU ", at)) != std::string::npos; at += 4) {
      if (at == 0 || listing[at - 1] == '\n') ++gpus;
    }
    return "; driver supports CUDA [0-9]+\\.[0-9]+; " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") +
           " visible";
  }

  // srun on PATH and whether 'srun --version' works here (it needs a Slurm
  // configuration): what the srun line must say, as a regex.
  static std::string expected_srun_line() {
    int status = 0;
    shell("command -v srun >/dev/null", &status);
    if (status != 0) return "    \\[ \\] srun \\(Slurm: not on PATH\\)";
    shell("srun --version >/dev/null 2>&1", &status);
    if (status == 0) return "    \\[X\\] srun \\(Slurm: slurm [0-9]+\\.[0-9]+\\.[0-9]+\\)";
    return "    \\[ \\] srun \\(Slurm: on PATH, but 'srun --version' failed: .*\\)";
  }

  // Every line of the checklist that depends on the build or the machine.
  static void expect_lines_of_this_build(const std::string& text) {
    const auto x = [](bool on) { return std::string(on ? "    [X] " : "    [ ] "); };
    EXPECT_EQ(text.substr(0, text.find('\n')), "Chorus v" + kVersion + ":");
    EXPECT_TRUE(has_line(text, x(kTorch) + "LibTorch (C++)")) << text;
    EXPECT_TRUE(has_line(text, x(!kNccl.empty()) + "NCCL (CUDA)" + (kNccl.empty() ? "" : " " + kNccl))) << text;
    EXPECT_TRUE(has_line(text, x(!kCuda.empty()) + "CUDA through host memory (ranks sharing a GPU, or no NCCL)"))
        << text;
    EXPECT_TRUE(has_line(text, x(!kCudnn.empty()) + "cuDNN" + (kCudnn.empty() ? "" : " " + kCudnn) +
                                   " (the train_mnist_cuda example)"))
        << text;
    const std::string mpi = built_mpi();
    EXPECT_TRUE(has_line(text, mpi.empty() ? "    [ ] mpirun (no Open MPI mpirun on PATH)" : "    [X] mpirun (" + mpi + ")"))
        << text;
    std::smatch line;
    if (kCuda.empty()) {
      EXPECT_TRUE(has_line(text, "    [ ] CUDA (built with CHORUS_WITH_CUDA=OFF)")) << text;
    } else {
      ASSERT_TRUE(std::regex_search(text, line, std::regex("\n    \\[X\\] CUDA ([0-9][^\n]*)\n"))) << text;
      const std::string cuda = line[1];
      EXPECT_TRUE(std::regex_match(cuda, std::regex(std::regex_replace(kCuda, std::regex("\\."), "\\.") +
                                                    expected_gpu_part())))
          << cuda;
    }
    ASSERT_TRUE(std::regex_search(text, line, std::regex("\n(    \\[.\\] srun [^\n]*)\n"))) << text;
    EXPECT_TRUE(std::regex_match(std::string(line[1]), std::regex(expected_srun_line()))) << line[1];
  }
};

TEST_F(CheckBuildHere, DetectBuildFeaturesReportsThisBuild) {
  const BuildFeatures f = detect_build_features();
  EXPECT_EQ(f.version, kVersion);
  EXPECT_EQ(f.nccl, kNccl);
  EXPECT_EQ(f.cudnn, kCudnn);
  EXPECT_EQ(f.torch, kTorch);
  EXPECT_EQ(f.mpirun, built_mpi());
  if (kCuda.empty()) {
    EXPECT_EQ(f.cuda, "");
  } else {
    EXPECT_EQ(f.cuda.substr(0, kCuda.size() + 1), kCuda + ";") << f.cuda;
  }
  expect_lines_of_this_build(format_check_build(f));
}

// What a user sees: the chorusrun program of this build, run as they run it.
TEST_F(CheckBuildHere, ChorusrunCheckBuildReportsThisBuild) {
  int status = 0;
  const std::string text = shell(std::string("'") + CHORUSRUN_PATH + "' --check-build 2>&1", &status);
  EXPECT_EQ(status, 0) << text;
  expect_lines_of_this_build(text);
}

}  // namespace
}  // namespace chorus::launcher
