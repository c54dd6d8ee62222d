// Test harness for the parallel tests: Chorus init/shutdown per suite or per
// test, waits that never block forever, and a synchronisation channel of the
// tests' own (an MPI communicator Chorus does not use) to order events
// between ranks, e.g. "rank 1 submits only after rank 0 has checked that its
// handle is still pending".
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "chorus/chorus.h"

namespace chorus_test {

// MPI_COMM_WORLD's rank and size: known before chorus::init().
int world_rank();
int world_size();

// A barrier among all ranks on the tests' own communicator. Every rank must
// reach the same calls in the same order (the first call is collective too).
void test_barrier();
// Every rank's `value`, indexed by rank; collective. For checks that ranks
// agree (e.g. on the last joined rank), never for computing references.
std::vector<int> exchange(int value);
// The same string on every rank and different for every job; collective.
std::string shared_token();

// Long enough for np=4 oversubscribed on 2 cores; short enough that a hung
// collective fails the test well before ctest's timeout.
constexpr std::chrono::milliseconds kWaitTimeout{45000};

// Waits for `handle` for at most `timeout`: its final status, or a kTimeout
// status from the harness when it is still in flight (the test then fails
// instead of blocking forever).
chorus::Status finish(const chorus::Handle& handle,
                      std::chrono::milliseconds timeout = kWaitTimeout);
// Success when `status` is OK; otherwise a failure that prints it.
::testing::AssertionResult is_ok(const chorus::Status& status);
#define EXPECT_DONE(handle) EXPECT_TRUE(::chorus_test::is_ok(::chorus_test::finish(handle)))
#define ASSERT_DONE(handle) ASSERT_TRUE(::chorus_test::is_ok(::chorus_test::finish(handle)))

// Runs `call`; returns the chorus::Error it threw as a Status, or OK when it
// did not throw. Other exceptions become kInternal with their what().
chorus::Status thrown_by(const std::function<void()>& call);

// Runs a submission; a chorus::Error it throws becomes a test failure and an
// invalid handle (which finish() reports), so one rank's failed submission
// does not skip the rest of the test's collectives on that rank.
chorus::Handle submit(const std::function<chorus::Handle()>& call);

// Polls `condition` every few milliseconds until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Sets CHORUS_* (or any) environment variables for its lifetime; a null
// value unsets the variable. Restores the previous values on destruction.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, const char*>> values);
  ScopedEnv(const std::string& name, const char* value) : ScopedEnv({{name, value}}) {}
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

// chorus::init(), reporting a thrown error as a failure instead of aborting
// the binary. Records that init was attempted (see init_attempted()).
::testing::AssertionResult init_chorus();
// chorus::shutdown(), swallowing errors (it is documented to be safe twice).
void shutdown_chorus();
// Whether any test in this process has called init_chorus() yet.
bool init_attempted();

// Base fixture: Chorus is initialised once per suite, shut down after it.
class ChorusSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  int rank() const { return world_rank(); }
  int size() const { return world_size(); }
};

}  // namespace chorus_test
