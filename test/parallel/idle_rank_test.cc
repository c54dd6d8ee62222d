// An idle rank costs no CPU: once nothing has been queued for a while, the
// background thread sleeps until something concerns it, instead of waking
// to poll. Checked through the kernel's count of the thread's context
// switches (/proc): a thread that never runs makes none. Every rank of a
// ctest job is on one host, where the cycle trigger goes through shared
// memory; then a collective after the idle window checks that a sleeping
// rank still wakes for work.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

// The background thread's id, found by its name.
std::string background_thread_dir() {
  const std::string tasks = "/proc/self/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return "";
  std::string found;
  while (dirent* entry = readdir(dir)) {
    const std::string path = tasks + "/" + entry->d_name;
    std::ifstream comm(path + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "chorus-bg") found = path;
  }
  closedir(dir);
  return found;
}

// voluntary_ctxt_switches + nonvoluntary_ctxt_switches of a thread.
long context_switches(const std::string& thread_dir) {
  std::ifstream status(thread_dir + "/status");
  std::string line;
  long total = 0;
  while (std::getline(status, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && line.find("ctxt_switches") != std::string::npos) {
      total += std::stol(line.substr(colon + 1));
    }
  }
  return total;
}

class IdleRank : public ChorusSuite {};

TEST_F(IdleRank, BackgroundThreadDoesNotRunWhileNothingIsQueued) {
  // Some work first, small and large, as a training step leaves it.
  for (int64_t elements : {int64_t{1024}, int64_t{1} << 20}) {
    std::vector<float> data(static_cast<size_t>(elements), static_cast<float>(rank() + 1));
    ASSERT_DONE(chorus::allreduce_async("idle.warm." + std::to_string(elements),
                                        chorus::Tensor(data.data(), chorus::DataType::kFloat32, {elements}),
                                        {chorus::ReduceOp::kSum}));
    EXPECT_EQ(data[0], static_cast<float>(size() * (size() + 1) / 2));
  }
  const std::string thread = background_thread_dir();
  ASSERT_FALSE(thread.empty()) << "no thread named chorus-bg in this process";
  // The background thread backs off for ~40 ms after its last cycle
  // (ShmCycleTrigger); wait that out, then watch it for a second. The
  // barriers (on the tests' own communicator) keep every rank's next
  // collective out of the others' windows: it would rightly wake them.
  test_barrier();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long before = context_switches(thread);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long after = context_switches(thread);
  test_barrier();
  EXPECT_EQ(after - before, 0) << "the idle background thread ran " << after - before << " times in 1 s";

  // Still wakes for work.
  std::vector<float> data(16, static_cast<float>(rank() + 1));
  ASSERT_DONE(chorus::allreduce_async("idle.after", chorus::Tensor(data.data(), chorus::DataType::kFloat32, {16}),
                                      {chorus::ReduceOp::kSum}));
  EXPECT_EQ(data[15], static_cast<float>(size() * (size() + 1) / 2));
}

}  // namespace
}  // namespace chorus_test
