#include "runtime/tensor_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/handle_state.h"
#include "base/wake_signal.h"

namespace chorus {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TensorEntry make_entry(const std::string& name, Shape shape = {4}, OpType op = OpType::kAllreduce) {
  TensorEntry entry;
  entry.request.name = name;
  entry.request.op = op;
  entry.request.shape = std::move(shape);
  entry.handle = std::make_shared<detail::HandleState>(name, op, 1);
  entry.enqueued = steady_clock::now();
  return entry;
}

std::vector<TensorEntry> entries(std::initializer_list<const char*> names) {
  std::vector<TensorEntry> out;
  for (const char* name : names) out.push_back(make_entry(name));
  return out;
}

std::vector<std::string> names_of(const std::vector<Request>& requests) {
  std::vector<std::string> out;
  for (const Request& request : requests) out.push_back(request.name);
  return out;
}

Response response(const std::string& name) {
  Response p;
  p.name = name;
  return p;
}

std::string in_flight_message(const std::string& name, int rank) {
  return "A collective named '" + name + "' is already in flight on rank " + std::to_string(rank);
}

TEST(TensorQueueTest, FreshQueueIsOpenAndEmpty) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  EXPECT_FALSE(queue.has_new());
  EXPECT_EQ(queue.arrivals(), 0u);
  EXPECT_FALSE(queue.closed());
  EXPECT_TRUE(queue.closed_reason().ok());
  EXPECT_TRUE(queue.take_new_requests().empty());
  EXPECT_FALSE(queue.take("nothing").has_value());
}

// The background thread is woken when new work appears, not once per tensor
// of a burst: it looks for more work after every wake-up anyway.
TEST(TensorQueueTest, OnlyTheAddThatBringsNewWorkWakesTheBackgroundThread) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  const auto now = [] { return steady_clock::now(); };
  ASSERT_TRUE(queue.add(make_entry("a")).ok());
  EXPECT_TRUE(wake.wait_until(now()));
  ASSERT_TRUE(queue.add(make_entry("b")).ok());
  ASSERT_TRUE(queue.add(entries({"c", "d"})).ok());
  EXPECT_FALSE(wake.wait_until(now()));
  EXPECT_EQ(queue.take_new_requests().size(), 4u);
  ASSERT_TRUE(queue.add(entries({"e", "f"})).ok());
  EXPECT_TRUE(wake.wait_until(now()));
  EXPECT_EQ(queue.take_new_requests().size(), 2u);
  ASSERT_TRUE(queue.add(make_entry("g")).ok());
  EXPECT_TRUE(wake.wait_until(now()));
}

// Removed entries leave their map nodes for later adds: a name in flight is
// still refused when a spare node is at hand, and the node stays usable.
TEST(TensorQueueTest, NamesAreCheckedAndHeldAlikeWithReusedNodes) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(make_entry("a", {1})).ok());
  ASSERT_TRUE(queue.add(make_entry("b", {2})).ok());
  ASSERT_TRUE(queue.take("a").has_value());  // a spare node now
  EXPECT_EQ(queue.add(make_entry("b")).message(), in_flight_message("b", 0));
  ASSERT_TRUE(queue.add(make_entry("a longer name than the small-string buffer holds", {3})).ok());
  ASSERT_TRUE(queue.add(make_entry("c", {4})).ok());
  std::vector<Request> requests = queue.take_new_requests();  // "a" left with its entry
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].name, "a longer name than the small-string buffer holds");
  EXPECT_EQ(requests[1].shape, Shape{3});
  for (const char* name : {"b", "a longer name than the small-string buffer holds", "c"}) {
    std::optional<TensorEntry> taken = queue.take(name);
    ASSERT_TRUE(taken.has_value()) << name;
    EXPECT_EQ(taken->request.name, name);
  }
  EXPECT_FALSE(queue.take("a").has_value());
  ASSERT_TRUE(queue.add(make_entry("b", {5})).ok());
  EXPECT_EQ(queue.take("b")->request.shape, Shape{5});
}

TEST(TensorQueueTest, TakeNewRequestsReturnsRequestsInAddOrderOnce) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  TensorEntry a = make_entry("a", {2, 3}, OpType::kAllgather);
  a.request.rank = 0;
  a.request.root = 1;
  ASSERT_TRUE(queue.add({std::move(a)}).ok());
  ASSERT_TRUE(queue.add(entries({"b", "c"})).ok());

  const std::vector<Request> requests = queue.take_new_requests();
  EXPECT_EQ(names_of(requests), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(requests.size(), 3u);
  // The request is passed through unchanged.
  EXPECT_EQ(requests[0].op, OpType::kAllgather);
  EXPECT_EQ(requests[0].shape, (Shape{2, 3}));
  EXPECT_EQ(requests[0].root, 1);
  EXPECT_EQ(requests[1].op, OpType::kAllreduce);
  EXPECT_EQ(requests[1].shape, (Shape{4}));

  // Taken once: the next call sees only what was added since.
  EXPECT_TRUE(queue.take_new_requests().empty());
  ASSERT_TRUE(queue.add(entries({"d"})).ok());
  EXPECT_EQ(names_of(queue.take_new_requests()), (std::vector<std::string>{"d"}));

  // Taking the requests does not take the entries.
  for (const char* name : {"a", "b", "c", "d"}) {
    EXPECT_TRUE(queue.take(name).has_value()) << name;
  }
}

TEST(TensorQueueTest, HasNewFlipsWithAddAndTakeNewRequests) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  EXPECT_FALSE(queue.has_new());
  ASSERT_TRUE(queue.add(entries({"a"})).ok());
  EXPECT_TRUE(queue.has_new());
  ASSERT_TRUE(queue.add(entries({"b", "c"})).ok());
  EXPECT_TRUE(queue.has_new());
  (void)queue.take_new_requests();
  EXPECT_FALSE(queue.has_new());
  // Taking an entry out does not make anything new.
  ASSERT_TRUE(queue.take("a").has_value());
  EXPECT_FALSE(queue.has_new());
  ASSERT_TRUE(queue.add(entries({"e"})).ok());
  EXPECT_TRUE(queue.has_new());
  (void)queue.take_new_requests();
  EXPECT_FALSE(queue.has_new());
}

TEST(TensorQueueTest, AnEntryTakenBeforeItsRequestIsNoLongerNew) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(entries({"a", "b"})).ok());
  ASSERT_TRUE(queue.add(make_entry("c")).ok());
  ASSERT_TRUE(queue.take("b").has_value());
  ASSERT_EQ(queue.take_all_of({response("c")}).size(), 1u);
  EXPECT_TRUE(queue.has_new());
  EXPECT_EQ(names_of(queue.take_new_requests()), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(queue.has_new());
  ASSERT_TRUE(queue.take("a").has_value());
  EXPECT_TRUE(queue.take_new_requests().empty());
  EXPECT_EQ(queue.arrivals(), 3u);
}

TEST(TensorQueueTest, OneEntryAddRefusesANameInFlight) {
  WakeSignal wake;
  TensorQueue queue(1, &wake);
  ASSERT_TRUE(queue.add(make_entry("a")).ok());
  const Status again = queue.add(make_entry("a"));
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(again.message(), in_flight_message("a", 1));
  EXPECT_EQ(names_of(queue.take_new_requests()), (std::vector<std::string>{"a"}));
}

TEST(TensorQueueTest, TakeRemovesTheEntryWithItsHandle) {
  WakeSignal wake;
  TensorQueue queue(2, &wake);
  TensorEntry a = make_entry("a", {5});
  const auto handle = a.handle;
  ASSERT_TRUE(queue.add({std::move(a)}).ok());

  std::optional<TensorEntry> taken = queue.take("a");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->request.name, "a");
  EXPECT_EQ(taken->request.shape, (Shape{5}));
  EXPECT_EQ(taken->handle, handle);

  // Gone after the first take.
  EXPECT_FALSE(queue.take("a").has_value());
  EXPECT_FALSE(queue.take("never-added").has_value());

  // Once taken, the name is free again.
  ASSERT_TRUE(queue.add(entries({"a"})).ok());
  taken = queue.take("a");
  ASSERT_TRUE(taken.has_value());
  EXPECT_NE(taken->handle, handle);
}

TEST(TensorQueueTest, TakeAllOfKeepsResponseOrderAndReportsMissingNames) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(entries({"a", "b", "c"})).ok());

  const std::vector<Response> responses = {response("c"), response("missing"), response("a")};
  std::vector<std::optional<TensorEntry>> taken = queue.take_all_of(responses);
  ASSERT_EQ(taken.size(), 3u);
  ASSERT_TRUE(taken[0].has_value());
  EXPECT_EQ(taken[0]->request.name, "c");
  EXPECT_FALSE(taken[1].has_value());
  ASSERT_TRUE(taken[2].has_value());
  EXPECT_EQ(taken[2]->request.name, "a");

  // Taken entries are gone; the others stay.
  EXPECT_FALSE(queue.take("a").has_value());
  EXPECT_FALSE(queue.take("c").has_value());
  EXPECT_TRUE(queue.take("b").has_value());

  // A second take of the same names finds nothing.
  taken = queue.take_all_of(responses);
  ASSERT_EQ(taken.size(), 3u);
  for (const auto& entry : taken) EXPECT_FALSE(entry.has_value());

  EXPECT_TRUE(queue.take_all_of({}).empty());
}

TEST(TensorQueueTest, NameAlreadyInFlightIsRejectedAndNothingIsAdded) {
  WakeSignal wake;
  TensorQueue queue(3, &wake);
  ASSERT_TRUE(queue.add(entries({"a"})).ok());
  (void)queue.take_new_requests();
  ASSERT_EQ(queue.arrivals(), 1u);

  const Status single = queue.add(entries({"a"}));
  EXPECT_EQ(single.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(single.message(), in_flight_message("a", 3));

  // A group with one name in flight: the other members are not added either.
  const Status group = queue.add(entries({"b", "a", "c"}));
  EXPECT_EQ(group.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(group.message(), in_flight_message("a", 3));

  EXPECT_FALSE(queue.has_new());
  EXPECT_TRUE(queue.take_new_requests().empty());
  EXPECT_EQ(queue.arrivals(), 1u);
  EXPECT_FALSE(queue.take("b").has_value());
  EXPECT_FALSE(queue.take("c").has_value());
  // The original entry is untouched.
  EXPECT_TRUE(queue.take("a").has_value());
  EXPECT_FALSE(queue.take("a").has_value());
}

TEST(TensorQueueTest, NameRepeatedWithinOneAddIsRejectedAndNothingIsAdded) {
  WakeSignal wake;
  TensorQueue queue(1, &wake);
  const Status status = queue.add(entries({"x", "y", "x"}));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), in_flight_message("x", 1));

  EXPECT_FALSE(queue.has_new());
  EXPECT_EQ(queue.arrivals(), 0u);
  EXPECT_TRUE(queue.take_new_requests().empty());
  EXPECT_FALSE(queue.take("x").has_value());
  EXPECT_FALSE(queue.take("y").has_value());

  // The same names, each once, are fine afterwards.
  EXPECT_TRUE(queue.add(entries({"x", "y"})).ok());
  EXPECT_EQ(names_of(queue.take_new_requests()), (std::vector<std::string>{"x", "y"}));
}

TEST(TensorQueueTest, GroupAddIsAllOrNothing) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(entries({"g.0", "g.1", "g.2"})).ok());
  EXPECT_EQ(queue.arrivals(), 3u);
  EXPECT_EQ(names_of(queue.take_new_requests()), (std::vector<std::string>{"g.0", "g.1", "g.2"}));

  // The last member clashes: none of the new group is added.
  EXPECT_FALSE(queue.add(entries({"h.0", "h.1", "g.2"})).ok());
  EXPECT_EQ(queue.arrivals(), 3u);
  EXPECT_FALSE(queue.has_new());
  EXPECT_FALSE(queue.take("h.0").has_value());
  EXPECT_FALSE(queue.take("h.1").has_value());

  // Once the clash is gone the same group goes in whole.
  ASSERT_TRUE(queue.take("g.2").has_value());
  ASSERT_TRUE(queue.add(entries({"h.0", "h.1", "g.2"})).ok());
  EXPECT_EQ(queue.arrivals(), 6u);
  EXPECT_EQ(names_of(queue.take_new_requests()), (std::vector<std::string>{"h.0", "h.1", "g.2"}));
}

TEST(TensorQueueTest, ArrivalsCountsEveryAddedTensorAndNeverGoesDown) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(entries({"a"})).ok());
  EXPECT_EQ(queue.arrivals(), 1u);
  ASSERT_TRUE(queue.add(entries({"b", "c", "d"})).ok());
  EXPECT_EQ(queue.arrivals(), 4u);
  (void)queue.take_new_requests();
  ASSERT_TRUE(queue.take("a").has_value());
  (void)queue.take_all_of({response("b"), response("c")});
  EXPECT_EQ(queue.arrivals(), 4u);
  // Re-adding a taken name counts again.
  ASSERT_TRUE(queue.add(entries({"a"})).ok());
  EXPECT_EQ(queue.arrivals(), 5u);
  // Rejected adds do not count.
  EXPECT_FALSE(queue.add(entries({"a"})).ok());
  EXPECT_EQ(queue.arrivals(), 5u);
}

TEST(TensorQueueTest, CloseReturnsEveryHeldEntryAndRefusesLaterAdds) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(entries({"a", "b"})).ok());
  (void)queue.take_new_requests();
  ASSERT_TRUE(queue.add(entries({"c", "d"})).ok());  // still new when closed
  ASSERT_TRUE(queue.take("b").has_value());

  const Status reason = Status::Shutdown("chorus was shut down on rank 0");
  std::vector<TensorEntry> held = queue.close(reason);
  std::multiset<std::string> held_names;
  for (const TensorEntry& entry : held) {
    held_names.insert(entry.request.name);
    ASSERT_NE(entry.handle, nullptr);
    EXPECT_EQ(entry.handle->name(), entry.request.name);
  }
  EXPECT_EQ(held_names, (std::multiset<std::string>{"a", "c", "d"}));

  EXPECT_TRUE(queue.closed());
  EXPECT_EQ(queue.closed_reason().code(), StatusCode::kShutdown);
  EXPECT_EQ(queue.closed_reason().message(), "chorus was shut down on rank 0");
  EXPECT_FALSE(queue.has_new());
  EXPECT_TRUE(queue.take_new_requests().empty());
  EXPECT_FALSE(queue.take("a").has_value());
  EXPECT_FALSE(queue.take("c").has_value());

  const Status later = queue.add(entries({"e"}));
  EXPECT_EQ(later.code(), StatusCode::kShutdown);
  EXPECT_EQ(later.message(), "chorus was shut down on rank 0");
  // Even a name that was held before closing.
  const Status again = queue.add(entries({"a"}));
  EXPECT_EQ(again.code(), StatusCode::kShutdown);
  EXPECT_EQ(again.message(), "chorus was shut down on rank 0");
  EXPECT_FALSE(queue.has_new());
  EXPECT_EQ(queue.arrivals(), 4u);
  EXPECT_FALSE(queue.take("e").has_value());

  // Nothing left for a second close.
  EXPECT_TRUE(queue.close(reason).empty());
}

TEST(TensorQueueTest, CloseOfAnEmptyQueueReturnsNothing) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  EXPECT_TRUE(queue.close(Status::Aborted("stopped after an earlier error")).empty());
  const Status status = queue.add(entries({"a"}));
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_EQ(status.message(), "stopped after an earlier error");
}

TEST(TensorQueueTest, AddWakesAThreadBlockedOnTheWakeSignal) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  const auto kWaitLimit = std::chrono::seconds(30);

  std::promise<void> waiting;
  auto woken = std::async(std::launch::async, [&] {
    waiting.set_value();
    const auto start = steady_clock::now();
    const bool notified = wake.wait_until(start + kWaitLimit);
    return std::make_pair(notified, steady_clock::now() - start);
  });
  waiting.get_future().wait();
  // Give the waiter time to block; if it has not yet, the flag still wakes it.
  std::this_thread::sleep_for(milliseconds(50));
  const auto added = steady_clock::now();
  ASSERT_TRUE(queue.add(entries({"a"})).ok());

  const bool ready = woken.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  ASSERT_TRUE(ready) << "the waiter did not wake after add()";
  const auto [notified, waited] = woken.get();
  EXPECT_TRUE(notified);
  EXPECT_LT(waited, std::chrono::seconds(10));
  EXPECT_LT(steady_clock::now() - added, std::chrono::seconds(10));
}

TEST(TensorQueueTest, HoldsAnyWhileAnEntryIsInFlight) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  EXPECT_FALSE(queue.holds_any());
  ASSERT_TRUE(queue.add(entries({"a", "b"})).ok());
  EXPECT_TRUE(queue.holds_any());
  (void)queue.take_new_requests();  // negotiated, still in flight
  EXPECT_TRUE(queue.holds_any());
  ASSERT_TRUE(queue.take("a").has_value());
  EXPECT_TRUE(queue.holds_any());
  ASSERT_EQ(queue.take_all_of({response("b")}).size(), 1u);
  EXPECT_FALSE(queue.holds_any());
  ASSERT_TRUE(queue.add(entries({"c"})).ok());
  EXPECT_EQ(queue.close(Status::Aborted("stopped")).size(), 1u);
  EXPECT_FALSE(queue.holds_any());
}

TEST(TensorQueueTest, AddLeavesTheWakeSignalSetForALaterWaiter) {
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  ASSERT_TRUE(queue.add(entries({"a"})).ok());
  // The notification is remembered: the wait returns at once and clears it.
  const auto start = steady_clock::now();
  EXPECT_TRUE(wake.wait_until(start + std::chrono::seconds(30)));
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(wake.wait_until(steady_clock::now() + milliseconds(1)));
}

TEST(TensorQueueTest, ConcurrentAddsWithDistinctNamesAllArriveExactlyOnce) {
  constexpr int kThreads = 6;
  constexpr int kPerThread = 2000;
  constexpr int kTotal = kThreads * kPerThread;
  WakeSignal wake;
  TensorQueue queue(0, &wake);

  auto name_of = [](int thread, int i) { return "t" + std::to_string(thread) + "." + std::to_string(i); };

  std::atomic<int> producers_left{kThreads};
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      // Start together so the adds overlap.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        // Every third add is a two-tensor group.
        if (i % 3 == 0 && i + 1 < kPerThread) {
          std::vector<TensorEntry> group;
          group.push_back(make_entry(name_of(t, i)));
          group.push_back(make_entry(name_of(t, i + 1)));
          if (!queue.add(std::move(group)).ok()) failures.fetch_add(1);
          ++i;
        } else if (!queue.add({make_entry(name_of(t, i))}).ok()) {
          failures.fetch_add(1);
        }
      }
      producers_left.fetch_sub(1);
    });
  }

  // The background thread's role: drain new requests while producers run.
  std::vector<Request> seen;
  while (producers_left.load() > 0) {
    (void)wake.wait_until(steady_clock::now() + milliseconds(5));
    std::vector<Request> batch = queue.take_new_requests();
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  for (auto& producer : producers) producer.join();
  std::vector<Request> rest = queue.take_new_requests();
  seen.insert(seen.end(), rest.begin(), rest.end());

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(queue.arrivals(), static_cast<uint64_t>(kTotal));
  EXPECT_FALSE(queue.has_new());
  ASSERT_EQ(seen.size(), static_cast<size_t>(kTotal));

  // Each name exactly once, and each producer's requests in its own order.
  std::map<std::string, int> count;
  std::vector<int> last_index(kThreads, -1);
  for (const Request& request : seen) {
    ++count[request.name];
    const size_t dot = request.name.find('.');
    ASSERT_NE(dot, std::string::npos);
    const int t = std::stoi(request.name.substr(1, dot - 1));
    const int i = std::stoi(request.name.substr(dot + 1));
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_GT(i, last_index[t]) << request.name << " arrived out of its thread's order";
    last_index[t] = i;
  }
  EXPECT_EQ(count.size(), static_cast<size_t>(kTotal));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(last_index[t], kPerThread - 1);
    for (int i = 0; i < kPerThread; ++i) {
      const std::string name = name_of(t, i);
      EXPECT_EQ(count[name], 1) << name;
      // And the entry itself is held exactly once.
      EXPECT_TRUE(queue.take(name).has_value()) << name;
      EXPECT_FALSE(queue.take(name).has_value()) << name;
    }
  }
}

}  // namespace
}  // namespace chorus
