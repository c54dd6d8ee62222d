#include "chorus/handle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/handle_state.h"

namespace chorus {
namespace {

using detail::HandleState;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Runs `call` and returns the chorus::Error it throws; fails if it throws
// nothing.
template <typename Call>
Error error_from(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected a chorus::Error";
  return Error(Status::Internal("no error was thrown"));
}

// ---------------------------------------------------------------------------
// HandleState

TEST(HandleStateTest, SingleMemberIsDoneAfterItsCompletion) {
  HandleState state("grad.w", OpType::kAllreduce, 1);
  EXPECT_EQ(state.name(), "grad.w");
  EXPECT_FALSE(state.done());
  EXPECT_EQ(state.status().code(), StatusCode::kInProgress);
  EXPECT_NE(state.status().message().find("grad.w"), std::string::npos) << state.status().message();

  state.complete_member(Status::OK());
  EXPECT_TRUE(state.done());
  EXPECT_TRUE(state.status().ok());
  EXPECT_TRUE(state.wait().ok());
}

TEST(HandleStateTest, GroupIsDoneOnlyAfterEveryMember) {
  HandleState state("group", OpType::kAllreduce, 3);
  state.complete_member(Status::OK());
  EXPECT_FALSE(state.done());
  EXPECT_EQ(state.status().code(), StatusCode::kInProgress);
  state.complete_member(Status::OK());
  EXPECT_FALSE(state.done());
  EXPECT_EQ(state.status().code(), StatusCode::kInProgress);
  state.complete_member(Status::OK());
  EXPECT_TRUE(state.done());
  EXPECT_TRUE(state.status().ok());
}

TEST(HandleStateTest, FirstErrorWins) {
  HandleState state("group", OpType::kAllreduce, 4);
  state.complete_member(Status::OK());
  state.complete_member(Status::Mismatch("first error"));
  // A failed member does not finish the group early.
  EXPECT_FALSE(state.done());
  EXPECT_EQ(state.status().code(), StatusCode::kInProgress);
  state.complete_member(Status::Internal("second error"));
  state.complete_member(Status::OK());
  ASSERT_TRUE(state.done());
  EXPECT_EQ(state.status().code(), StatusCode::kMismatch);
  EXPECT_EQ(state.status().message(), "first error");
  EXPECT_EQ(state.wait().message(), "first error");
}

TEST(HandleStateTest, ErrorOfTheLastMemberIsKept) {
  HandleState state("group", OpType::kAllreduce, 2);
  state.complete_member(Status::OK());
  state.complete_member(Status::Timeout("last one timed out"));
  EXPECT_EQ(state.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(state.status().message(), "last one timed out");
}

TEST(HandleStateTest, FinishMemberReportsOnlyTheCompletionThatMadeItDone) {
  HandleState state("group", OpType::kAllreduce, 2);
  EXPECT_FALSE(state.finish_member(Status::OK()));
  EXPECT_FALSE(state.done());
  EXPECT_TRUE(state.finish_member(Status::OK()));
  EXPECT_TRUE(state.done());
  // A completion beyond the member count neither counts nor changes the result.
  EXPECT_FALSE(state.finish_member(Status::Internal("late")));
  EXPECT_TRUE(state.status().ok());
}

TEST(HandleStateTest, BatchIsDoneBeforeAnyoneIsNotified) {
  // The runtime finishes a batch of handles first and notifies afterwards.
  HandleState a("a", OpType::kAllreduce, 1);
  HandleState b("b", OpType::kAllreduce, 2);
  HandleState c("c", OpType::kAllreduce, 1);

  std::promise<void> started;
  auto waiter = std::async(std::launch::async, [&] {
    started.set_value();
    const Status status = a.wait();
    // By the time the first handle's waiter runs, the whole batch is done.
    return std::make_pair(status, b.done() && c.done());
  });
  started.get_future().wait();
  std::this_thread::sleep_for(milliseconds(20));

  // `a` is finished last, so whenever its waiter returns (even on a spurious
  // wake-up) the rest of the batch must already be done.
  EXPECT_FALSE(b.finish_member(Status::OK()));
  EXPECT_TRUE(b.finish_member(Status::OK()));
  EXPECT_TRUE(c.finish_member(Status::OK()));
  EXPECT_TRUE(a.finish_member(Status::Shutdown("batch error")));
  // Done (and readable without blocking) before notify_done().
  EXPECT_TRUE(a.done());
  EXPECT_TRUE(b.done());
  EXPECT_TRUE(c.done());
  EXPECT_EQ(a.status().code(), StatusCode::kShutdown);
  EXPECT_TRUE(b.wait_until(steady_clock::now()).ok());
  EXPECT_TRUE(c.wait().ok());

  a.notify_done();
  b.notify_done();
  c.notify_done();
  const bool woke = waiter.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!woke) a.notify_done();  // let the waiter finish so the test can end
  ASSERT_TRUE(woke) << "notify_done() did not wake the waiter";
  const auto [status, batch_done] = waiter.get();
  EXPECT_EQ(status.code(), StatusCode::kShutdown);
  EXPECT_EQ(status.message(), "batch error");
  EXPECT_TRUE(batch_done);
}

TEST(HandleStateTest, WaitUntilReturnsInProgressAtTheDeadlineWhileNotDone) {
  HandleState state("slow", OpType::kAllreduce, 2);
  state.complete_member(Status::OK());
  const auto start = steady_clock::now();
  const Status status = state.wait_until(start + milliseconds(30));
  const auto waited = steady_clock::now() - start;
  EXPECT_EQ(status.code(), StatusCode::kInProgress);
  EXPECT_NE(status.message().find("slow"), std::string::npos) << status.message();
  EXPECT_GE(waited, milliseconds(30));
  EXPECT_FALSE(state.done());

  // A deadline in the past does not block either.
  EXPECT_EQ(state.wait_until(start).code(), StatusCode::kInProgress);

  state.complete_member(Status::Aborted("stopped"));
  const Status done = state.wait_until(steady_clock::now() + std::chrono::seconds(30));
  EXPECT_EQ(done.code(), StatusCode::kAborted);
  EXPECT_EQ(done.message(), "stopped");
}

TEST(HandleStateTest, CountsItsWaitersOnlyWhileTheyAreBlocked) {
  detail::BlockedWaiters blocked{0};
  HandleState state("grad.w", OpType::kAllreduce, 1, &blocked);
  auto waiter = std::async(std::launch::async, [&] { return state.wait(); });
  auto timed = std::async(std::launch::async,
                          [&] { return state.wait_until(steady_clock::now() + std::chrono::seconds(30)); });
  const auto give_up = steady_clock::now() + std::chrono::seconds(30);
  while (blocked.load() < 2 && steady_clock::now() < give_up) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(blocked.load(), 2);

  state.complete_member(Status::Aborted("stopped"));
  EXPECT_EQ(waiter.get().code(), StatusCode::kAborted);
  EXPECT_EQ(timed.get().code(), StatusCode::kAborted);
  EXPECT_EQ(blocked.load(), 0);

  // A wait on a handle that is already done never counts as blocked, and a
  // timed-out one stops counting at its deadline.
  EXPECT_EQ(state.wait().code(), StatusCode::kAborted);
  HandleState slow("slow", OpType::kAllreduce, 1, &blocked);
  EXPECT_EQ(slow.wait_until(steady_clock::now() + milliseconds(5)).code(), StatusCode::kInProgress);
  EXPECT_EQ(blocked.load(), 0);
}

// A runtime stand-in: runs "cycles" for a waiter by calling `cycle` until
// the waiter's result is done, or refuses (another thread runs them).
class ScriptedCycles : public detail::CycleRunner {
 public:
  explicit ScriptedCycles(std::function<void()> cycle, bool refuse = false)
      : cycle_(std::move(cycle)), refuse_(refuse) {}
  bool run_cycles_until(const std::function<bool()>& done) override {
    ++calls;
    if (refuse_) return false;
    while (!done()) cycle_();
    return true;
  }
  std::atomic<int> calls{0};

 private:
  std::function<void()> cycle_;
  const bool refuse_;
};

TEST(HandleStateTest, AWaitRunsTheCyclesItsResultNeedsOnItsOwnThread) {
  detail::BlockedWaiters blocked{0};
  HandleState* state_ptr = nullptr;
  int cycles = 0;
  int blocked_during_cycles = 0;
  const auto waiter = std::this_thread::get_id();
  ScriptedCycles runner([&] {
    EXPECT_EQ(std::this_thread::get_id(), waiter);
    blocked_during_cycles = blocked.load();
    // The third cycle completes the collective.
    if (++cycles == 3) state_ptr->complete_member(Status::Aborted("failed in a cycle"));
  });
  HandleState state("grad.w", OpType::kAllreduce, 1, &blocked, &runner);
  state_ptr = &state;
  EXPECT_EQ(state.wait().code(), StatusCode::kAborted);
  EXPECT_EQ(cycles, 3);
  EXPECT_EQ(blocked_during_cycles, 1) << "a thread running cycles for its result is a blocked waiter";
  EXPECT_EQ(blocked.load(), 0);
  // Done: a second wait runs nothing.
  EXPECT_EQ(state.wait().code(), StatusCode::kAborted);
  EXPECT_EQ(runner.calls.load(), 1);
}

TEST(HandleStateTest, AWaitWhoseCyclesAnotherThreadRunsBlocksUntilCompleted) {
  ScriptedCycles runner([] { FAIL() << "no cycle may run"; }, /*refuse=*/true);
  HandleState state("grad.w", OpType::kAllreduce, 1, nullptr, &runner);
  auto waiter = std::async(std::launch::async, [&] { return state.wait(); });
  const auto give_up = steady_clock::now() + std::chrono::seconds(30);
  while (runner.calls.load() == 0 && steady_clock::now() < give_up) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(waiter.wait_for(milliseconds(20)), std::future_status::timeout);
  state.complete_member(Status::OK());
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(waiter.get().ok());
  EXPECT_EQ(runner.calls.load(), 1);
}

TEST(HandleStateTest, OnlyAWaitWithoutDeadlineRunsCycles) {
  // A wait with a deadline cannot promise to leave a cycle at it; a wait on
  // a result that is already done has nothing to run.
  ScriptedCycles runner([] { FAIL() << "no cycle may run"; });
  HandleState state("grad.w", OpType::kAllreduce, 1, nullptr, &runner);
  EXPECT_EQ(state.wait_until(steady_clock::now() + milliseconds(5)).code(), StatusCode::kInProgress);
  state.complete_member(Status::OK());
  EXPECT_TRUE(state.wait().ok());
  EXPECT_EQ(runner.calls.load(), 0);
}

TEST(HandleStateTest, ResultsKeepTheLastValueSet) {
  HandleState state("r", OpType::kAllreduce, 1);
  EXPECT_EQ(state.last_joined_rank(), -1);
  EXPECT_TRUE(state.received_splits().empty());
  EXPECT_EQ(state.output().data, nullptr);
  state.set_last_joined_rank(1);
  state.set_last_joined_rank(4);
  state.set_received_splits({1, 2});
  state.set_received_splits({3, 0, 5});
  EXPECT_EQ(state.last_joined_rank(), 4);
  EXPECT_EQ(state.received_splits(), (std::vector<int64_t>{3, 0, 5}));
}

// ---------------------------------------------------------------------------
// chorus::Handle

TEST(HandleTest, AGroupHandsOutEveryMembersOutputInMemberOrder) {
  auto state = std::make_shared<HandleState>("g", OpType::kAllgather, 3);
  Handle handle(state);
  std::vector<std::shared_ptr<std::vector<float>>> storage;
  // Members finish in any order (fusion units follow the response order).
  for (int member : {2, 0, 1}) {
    storage.push_back(std::make_shared<std::vector<float>>(static_cast<size_t>(member + 1), 1.0f));
    state->set_output(member, Tensor(storage.back()->data(), DataType::kFloat32, Shape{member + 1}),
                      storage.back());
    EXPECT_EQ(error_from([&] { (void)handle.outputs(); }).code(), StatusCode::kInProgress);
    state->complete_member(Status::OK());
  }
  const std::vector<Tensor> outputs = handle.outputs();
  ASSERT_EQ(outputs.size(), 3u);
  for (int member = 0; member < 3; ++member) {
    EXPECT_EQ(outputs[static_cast<size_t>(member)].shape, (Shape{member + 1})) << member;
  }
  EXPECT_EQ(outputs[0].data, storage[1]->data());
  const Error single = error_from([&] { (void)handle.output(); });
  EXPECT_EQ(single.code(), StatusCode::kInvalidArgument);
  EXPECT_STREQ(single.what(), "output() applies to a single collective's handle, not to group 'g' of 3 tensors: "
                              "use outputs()");
  // outputs() of a single collective is its output.
  auto one = std::make_shared<HandleState>("r", OpType::kReducescatter, 1);
  auto memory = std::make_shared<std::vector<float>>(2, 0.5f);
  one->set_output(0, Tensor(memory->data(), DataType::kFloat32, Shape{2}), memory);
  one->complete_member(Status::OK());
  ASSERT_EQ(Handle(one).outputs().size(), 1u);
  EXPECT_EQ(Handle(one).outputs()[0].data, Handle(one).output().data);
  // Refused like output() for collectives that produce none.
  auto reduce = std::make_shared<HandleState>("grad", OpType::kAllreduce, 2);
  EXPECT_STREQ(error_from([&] { (void)Handle(reduce).outputs(); }).what(),
               "outputs() applies to allgather, alltoall and reducescatter handles, not to 'grad' (allreduce)");
}

TEST(HandleTest, DefaultConstructedHandleThrowsAClearError) {
  Handle handle;
  EXPECT_FALSE(handle.valid());
  EXPECT_EQ(error_from([&] { (void)handle.name(); }).code(), StatusCode::kInvalidArgument);

  const Error error = error_from([&] { handle.wait(); });
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("empty"), std::string::npos) << error.what();
  EXPECT_NE(std::string(error.what()).find("default-constructed"), std::string::npos) << error.what();

  EXPECT_EQ(error_from([&] { (void)handle.wait_for(milliseconds(1)); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error_from([&] { (void)handle.test(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error_from([&] { (void)handle.poll(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error_from([&] { (void)handle.status(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error_from([&] { (void)handle.output(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error_from([&] { (void)handle.received_splits(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error_from([&] { (void)handle.last_joined_rank(); }).code(), StatusCode::kInvalidArgument);
}

// A result the handle's collective does not produce is an error that says
// which collectives have it, whatever the handle's state; the results it
// does produce are refused only until it has succeeded.
TEST(HandleTest, ResultsOfOtherCollectivesAreRefusedNamingWhichHaveThem) {
  auto reduce = std::make_shared<HandleState>("grad", OpType::kAllreduce, 1);
  Handle handle(reduce);
  for (bool done : {false, true}) {
    if (done) reduce->complete_member(Status::OK());
    const Error output = error_from([&] { (void)handle.output(); });
    EXPECT_EQ(output.code(), StatusCode::kInvalidArgument);
    EXPECT_STREQ(output.what(),
                 "output() applies to allgather, alltoall and reducescatter handles, not to 'grad' (allreduce)");
    const Error splits = error_from([&] { (void)handle.received_splits(); });
    EXPECT_EQ(splits.code(), StatusCode::kInvalidArgument);
    EXPECT_STREQ(splits.what(), "received_splits() applies to alltoall handles, not to 'grad' (allreduce)");
    const Error joined = error_from([&] { (void)handle.last_joined_rank(); });
    EXPECT_EQ(joined.code(), StatusCode::kInvalidArgument);
    EXPECT_STREQ(joined.what(), "last_joined_rank() applies to join handles, not to 'grad' (allreduce)");
  }
  // Each collective's own results, and no others.
  const struct {
    OpType op;
    bool output, splits, joined;
  } kinds[] = {{OpType::kAllgather, true, false, false},    {OpType::kAlltoall, true, true, false},
               {OpType::kReducescatter, true, false, false}, {OpType::kBroadcast, false, false, false},
               {OpType::kBarrier, false, false, false},      {OpType::kJoin, false, false, true}};
  for (const auto& kind : kinds) {
    auto state = std::make_shared<HandleState>("x", kind.op, 1);
    state->complete_member(Status::OK());
    Handle h(state);
    const auto code_of = [](const std::function<void()>& call) {
      try {
        call();
      } catch (const Error& e) {
        return e.code();
      }
      return StatusCode::kOk;
    };
    const auto expected = [](bool applies) { return applies ? StatusCode::kOk : StatusCode::kInvalidArgument; };
    EXPECT_EQ(code_of([&] { (void)h.output(); }), expected(kind.output)) << op_type_name(kind.op);
    EXPECT_EQ(code_of([&] { (void)h.received_splits(); }), expected(kind.splits)) << op_type_name(kind.op);
    EXPECT_EQ(code_of([&] { (void)h.last_joined_rank(); }), expected(kind.joined)) << op_type_name(kind.op);
  }
}

TEST(HandleTest, NameAndValidity) {
  Handle handle(std::make_shared<HandleState>("layer1.bias", OpType::kAllreduce, 1));
  EXPECT_TRUE(handle.valid());
  EXPECT_EQ(handle.name(), "layer1.bias");
}

TEST(HandleTest, StatusTestAndPollBeforeAndAfterSuccess) {
  auto state = std::make_shared<HandleState>("t", OpType::kAllreduce, 1);
  Handle handle(state);
  EXPECT_FALSE(handle.test());
  EXPECT_FALSE(handle.poll());
  EXPECT_EQ(handle.status().code(), StatusCode::kInProgress);

  state->complete_member(Status::OK());
  EXPECT_TRUE(handle.test());
  EXPECT_TRUE(handle.poll());
  EXPECT_EQ(handle.status().code(), StatusCode::kOk);
  EXPECT_NO_THROW(handle.wait());
}

TEST(HandleTest, WaitThrowsTheFailureMessage) {
  auto state = std::make_shared<HandleState>("t", OpType::kAlltoall, 1);
  Handle handle(state);
  state->complete_member(Status::Mismatch("ranks disagree about 't': shape [4] vs [5]"));

  // Failed is still done.
  EXPECT_TRUE(handle.test());
  EXPECT_TRUE(handle.poll());
  EXPECT_EQ(handle.status().code(), StatusCode::kMismatch);
  EXPECT_EQ(handle.status().message(), "ranks disagree about 't': shape [4] vs [5]");

  const Error error = error_from([&] { handle.wait(); });
  EXPECT_EQ(error.code(), StatusCode::kMismatch);
  EXPECT_STREQ(error.what(), "ranks disagree about 't': shape [4] vs [5]");

  const Error timed = error_from([&] { (void)handle.wait_for(milliseconds(100)); });
  EXPECT_EQ(timed.code(), StatusCode::kMismatch);
  EXPECT_STREQ(timed.what(), "ranks disagree about 't': shape [4] vs [5]");

  // Results of a failed collective are not handed out.
  EXPECT_STREQ(error_from([&] { (void)handle.output(); }).what(), "ranks disagree about 't': shape [4] vs [5]");
  EXPECT_EQ(error_from([&] { (void)handle.received_splits(); }).code(), StatusCode::kMismatch);
}

TEST(HandleTest, WaitForReturnsFalseUntilDoneThenTrue) {
  auto state = std::make_shared<HandleState>("t", OpType::kAllreduce, 1);
  Handle handle(state);
  const auto start = steady_clock::now();
  EXPECT_FALSE(handle.wait_for(milliseconds(25)));
  EXPECT_GE(steady_clock::now() - start, milliseconds(25));
  EXPECT_FALSE(handle.wait_for(milliseconds(0)));

  state->complete_member(Status::OK());
  EXPECT_TRUE(handle.wait_for(milliseconds(0)));
  EXPECT_TRUE(handle.wait_for(std::chrono::seconds(30)));
}

TEST(HandleTest, ResultsAreReadableOnlyAfterSuccessfulCompletion) {
  auto state = std::make_shared<HandleState>("exchanged", OpType::kAlltoall, 1);
  Handle handle(state);

  auto storage = std::make_shared<std::vector<float>>(std::vector<float>{1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.5f});
  std::weak_ptr<std::vector<float>> watch = storage;
  state->set_output(0, Tensor(storage->data(), DataType::kFloat32, Shape{3, 2}), storage);
  state->set_received_splits({2, 0, 1});
  storage.reset();
  // The handle keeps the output's storage alive.
  EXPECT_FALSE(watch.expired());

  // Not done yet: results are refused.
  EXPECT_EQ(error_from([&] { (void)handle.output(); }).code(), StatusCode::kInProgress);
  EXPECT_EQ(error_from([&] { (void)handle.received_splits(); }).code(), StatusCode::kInProgress);
  auto join = std::make_shared<HandleState>("chorus.join", OpType::kJoin, 1);
  join->set_last_joined_rank(3);
  Handle joined(join);
  EXPECT_EQ(error_from([&] { (void)joined.last_joined_rank(); }).code(), StatusCode::kInProgress);
  join->complete_member(Status::OK());
  EXPECT_EQ(joined.last_joined_rank(), 3);

  state->complete_member(Status::OK());
  handle.wait();
  const Tensor output = handle.output();
  EXPECT_EQ(output.dtype, DataType::kFloat32);
  EXPECT_EQ(output.shape, (Shape{3, 2}));
  EXPECT_EQ(output.elements(), 6);
  ASSERT_NE(output.data, nullptr);
  const float* values = static_cast<const float*>(output.data);
  const std::vector<float> expected = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.5f};
  EXPECT_EQ(std::vector<float>(values, values + 6), expected);
  EXPECT_EQ(handle.received_splits(), (std::vector<int64_t>{2, 0, 1}));

  // Storage goes away with the last owner of the state.
  state.reset();
  EXPECT_FALSE(watch.expired());
  handle = Handle();
  EXPECT_TRUE(watch.expired());
}

TEST(HandleTest, GroupHandleIsDoneAfterAllMembers) {
  auto state = std::make_shared<HandleState>("grads", OpType::kAllreduce, 3);
  Handle handle(state);
  state->complete_member(Status::OK());
  state->complete_member(Status::OK());
  EXPECT_FALSE(handle.test());
  EXPECT_FALSE(handle.wait_for(milliseconds(5)));
  EXPECT_EQ(handle.status().code(), StatusCode::kInProgress);
  state->complete_member(Status::OK());
  EXPECT_TRUE(handle.test());
  EXPECT_TRUE(handle.wait_for(milliseconds(0)));
  EXPECT_TRUE(handle.status().ok());
}

TEST(HandleTest, GroupHandleReportsTheFirstMemberError) {
  auto state = std::make_shared<HandleState>("grads", OpType::kAllreduce, 3);
  Handle handle(state);
  state->complete_member(Status::InvalidArgument("member 'grads.1' has dtype bool"));
  state->complete_member(Status::OK());
  EXPECT_FALSE(handle.test());
  state->complete_member(Status::Internal("MPI failed"));
  const Error error = error_from([&] { handle.wait(); });
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_STREQ(error.what(), "member 'grads.1' has dtype bool");
}

// How a wait() on another thread ended.
struct WaitOutcome {
  bool threw = false;
  std::string message;
};

TEST(HandleTest, WaiterBlockedInWaitIsWokenByCompletionFromAnotherThread) {
  auto state = std::make_shared<HandleState>("async", OpType::kAllreduce, 2);
  Handle handle(state);
  std::atomic<bool> returned{false};
  std::promise<void> started;
  auto waiter = std::async(std::launch::async, [&] {
    started.set_value();
    handle.wait();
    returned.store(true);
    return steady_clock::now();
  });
  started.get_future().wait();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load()) << "wait() returned before the handle was done";

  const auto completion_started = steady_clock::now();
  std::thread completer([&] {
    state->complete_member(Status::OK());
    std::this_thread::sleep_for(milliseconds(20));
    state->complete_member(Status::OK());
  });
  const bool woke = waiter.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  completer.join();
  if (!woke) state->notify_done();  // let the waiter finish so the test can end
  ASSERT_TRUE(woke) << "the waiter was not woken by the completion";
  const auto woke_at = waiter.get();
  EXPECT_TRUE(returned.load());
  // Woken by the second completion, not by the first one.
  EXPECT_GE(woke_at - completion_started, milliseconds(20));
  EXPECT_LT(woke_at - completion_started, std::chrono::seconds(10));
}

TEST(HandleTest, WaiterBlockedInWaitGetsTheErrorFromAnotherThread) {
  auto state = std::make_shared<HandleState>("async", OpType::kAllreduce, 1);
  Handle handle(state);
  std::promise<void> started;
  auto waiter = std::async(std::launch::async, [&] {
    started.set_value();
    WaitOutcome outcome;
    try {
      handle.wait();
    } catch (const Error& error) {
      outcome.threw = true;
      outcome.message = error.what();
    }
    return outcome;
  });
  started.get_future().wait();
  std::this_thread::sleep_for(milliseconds(20));
  std::thread completer([&] { state->complete_member(Status::Shutdown("peer rank 1 shut down")); });
  const bool woke = waiter.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  completer.join();
  if (!woke) state->notify_done();  // let the waiter finish so the test can end
  ASSERT_TRUE(woke) << "the waiter was not woken by the failure";
  const WaitOutcome outcome = waiter.get();
  EXPECT_TRUE(outcome.threw);
  EXPECT_EQ(outcome.message, "peer rank 1 shut down");
}

TEST(HandleTest, WaitForOnAnotherThreadReturnsTrueOnceCompleted) {
  auto state = std::make_shared<HandleState>("async", OpType::kAllreduce, 1);
  Handle handle(state);
  std::promise<void> started;
  auto waiter = std::async(std::launch::async, [&] {
    started.set_value();
    return handle.wait_for(std::chrono::seconds(30));
  });
  started.get_future().wait();
  std::this_thread::sleep_for(milliseconds(20));
  state->complete_member(Status::OK());
  const bool woke = waiter.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  ASSERT_TRUE(woke) << "wait_for() was not woken by the completion";
  EXPECT_TRUE(waiter.get());
}

}  // namespace
}  // namespace chorus
