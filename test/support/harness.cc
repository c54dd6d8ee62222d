#include "support/harness.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

namespace chorus_test {
namespace {

bool g_init_attempted = false;
std::string g_init_error;

// Created on first use, which every rank reaches at the same point. A
// communicator of its own keeps the tests' barriers apart from whatever
// Chorus does on MPI_COMM_WORLD or its duplicates.
MPI_Comm test_comm() {
  static MPI_Comm comm = [] {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    return c;
  }();
  return comm;
}

}  // namespace

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

void test_barrier() { MPI_Barrier(test_comm()); }

std::vector<int> exchange(int value) {
  std::vector<int> all(static_cast<size_t>(world_size()));
  MPI_Allgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, test_comm());
  return all;
}

std::string shared_token() {
  char token[64] = {};
  if (world_rank() == 0) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::snprintf(token, sizeof(token), "chorus_test_%ld_%lld", static_cast<long>(getpid()),
                  static_cast<long long>(now % 1000000007));
  }
  MPI_Bcast(token, sizeof(token), MPI_CHAR, 0, test_comm());
  return token;
}

chorus::Status finish(const chorus::Handle& handle, std::chrono::milliseconds timeout) {
  if (!handle.valid()) return chorus::Status::InvalidArgument("test harness: invalid handle");
  try {
    if (!handle.wait_for(timeout)) {
      return chorus::Status::Timeout("test harness: '" + handle.name() + "' still in flight after " +
                                     std::to_string(timeout.count()) + " ms");
    }
    return handle.status();
  } catch (const chorus::Error& e) {
    return chorus::Status(e.code(), e.what());
  }
}

::testing::AssertionResult is_ok(const chorus::Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << chorus::status_code_name(status.code()) << ": "
                                       << status.message();
}

chorus::Status thrown_by(const std::function<void()>& call) {
  try {
    call();
  } catch (const chorus::Error& e) {
    return chorus::Status(e.code(), e.what());
  } catch (const std::exception& e) {
    return chorus::Status::Internal(std::string("not a chorus::Error: ") + e.what());
  }
  return chorus::Status::OK();
}

chorus::Handle submit(const std::function<chorus::Handle()>& call) {
  try {
    return call();
  } catch (const chorus::Error& e) {
    ADD_FAILURE() << "submission threw: " << e.what();
  }
  return chorus::Handle();
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

ScopedEnv::ScopedEnv(std::vector<std::pair<std::string, const char*>> values) {
  for (const auto& [name, value] : values) {
    const char* old = std::getenv(name.c_str());
    saved_.push_back({name, {old != nullptr, old ? old : ""}});
    if (value) setenv(name.c_str(), value, 1);
    else unsetenv(name.c_str());
  }
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second.first) setenv(it->first.c_str(), it->second.second.c_str(), 1);
    else unsetenv(it->first.c_str());
  }
}

::testing::AssertionResult init_chorus() {
  g_init_attempted = true;
  g_init_error.clear();
  const chorus::Status status = thrown_by([] { chorus::init(); });
  if (status.ok()) return ::testing::AssertionSuccess();
  g_init_error = status.message();
  return ::testing::AssertionFailure() << "chorus::init() failed: " << status.message();
}

void shutdown_chorus() { (void)thrown_by([] { chorus::shutdown(); }); }

bool init_attempted() { return g_init_attempted; }

void ChorusSuite::SetUpTestSuite() { (void)init_chorus(); }

void ChorusSuite::TearDownTestSuite() {
  // Every rank ends the suite's tests before any shuts down: a rank whose
  // last test is local (an argument check, say) would otherwise shut down
  // while another still runs that test, whose call then fails with "rank 0
  // shut down" instead of the error it checks.
  test_barrier();
  shutdown_chorus();
}

void ChorusSuite::SetUp() {
  ASSERT_TRUE(chorus::is_initialized()) << "chorus::init() failed: " << g_init_error;
  ASSERT_EQ(chorus::rank(), world_rank());
  ASSERT_EQ(chorus::size(), world_size());
}

}  // namespace chorus_test
