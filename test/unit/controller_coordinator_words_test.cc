// Coordinator words (controller.h): rank 0's words reach every rank in the
// same negotiation, other ranks' words are ignored, and the negotiation
// itself (fast path, slow path, stall flags) is unchanged by them.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "protocol/controller.h"
#include "controller_cluster.h"
#include "fake_transport.h"

namespace chorus::test {
namespace {

constexpr size_t kWords = 4;

class WordsCluster {
 public:
  explicit WordsCluster(int size) : world_(size) {
    for (int r = 0; r < size; ++r) {
      transports_.push_back(std::make_unique<FakeTransport>(&world_, r));
      controllers_.push_back(std::make_unique<Controller>(transports_.back().get(), quiet_config(), kWords));
    }
  }

  // One cycle: rank r sets words[r] (as every rank's runtime would), then
  // negotiates requests[r]; returns each rank's responses.
  std::vector<Responses> cycle(const std::vector<std::vector<uint64_t>>& words,
                               std::vector<std::vector<Request>> requests) {
    const int size = world_.size();
    requests.resize(static_cast<size_t>(size));
    std::vector<Responses> out(static_cast<size_t>(size));
    std::vector<Status> status(static_cast<size_t>(size));
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        controllers_[r]->set_coordinator_words(words[r]);
        status[r] = controllers_[r]->negotiate(std::move(requests[r]), &out[r], kT0);
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < size; ++r) EXPECT_TRUE(status[r].ok()) << status[r].to_string();
    return out;
  }
  Controller& at(int rank) { return *controllers_[rank]; }

 private:
  FakeWorld world_;
  std::vector<std::unique_ptr<FakeTransport>> transports_;
  std::vector<std::unique_ptr<Controller>> controllers_;
};

TEST(CoordinatorWords, RankZerosWordsReachEveryRankInTheSameCycle) {
  WordsCluster cluster(3);
  EXPECT_EQ(cluster.at(1).coordinator_words(), std::vector<uint64_t>(kWords, 0));
  // Ranks 1 and 2 set words of their own: they must not leak into the result.
  const std::vector<uint64_t> next_words = {7, 0xffff, 1, 3};
  auto out = cluster.cycle({{5, 1ull << 63, 0x3ff0000000000000ull, 2}, {9, 9, 9, 9}, {1, 2, 4, 8}},
                           {allreduces({"a"}), allreduces({"a"}), allreduces({"a"})});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(cluster.at(r).coordinator_words(),
              (std::vector<uint64_t>{5, 1ull << 63, 0x3ff0000000000000ull, 2}))
        << "rank " << r;
    EXPECT_EQ(describe(out[r]), (std::vector<std::string>{"allreduce:a"})) << "rank " << r;
  }
  // The next cycle carries the next words, on the fast path (cached "a").
  out = cluster.cycle({next_words, {}, {}}, {allreduces({"a"}), allreduces({"a"}), allreduces({"a"})});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(cluster.at(r).coordinator_words(), next_words) << "rank " << r;
    EXPECT_EQ(describe(out[r]), (std::vector<std::string>{"allreduce:a"})) << "rank " << r;
  }
  EXPECT_EQ(cluster.at(0).stats().cache_hits, 1u);
  // Idle cycles deliver words too; fewer words than configured are padded
  // with zeros, more are cut.
  cluster.cycle({{1}, {}, {}}, {});
  EXPECT_EQ(cluster.at(2).coordinator_words(), (std::vector<uint64_t>{1, 0, 0, 0}));
  cluster.cycle({{1, 2, 3, 4, 5}, {}, {}}, {});
  EXPECT_EQ(cluster.at(2).coordinator_words(), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(CoordinatorWords, WordsDoNotDisturbTheSlowPathFlag) {
  // All-ones words must not be read as "some rank needs the slow path":
  // with nothing pending, no cycle gathers to the coordinator.
  WordsCluster cluster(2);
  const std::vector<uint64_t> ones(kWords, ~uint64_t{0});
  cluster.cycle({ones, {}}, {allreduces({"x"}), allreduces({"x"})});
  const uint64_t slow_before = cluster.at(0).stats().slow_path_cycles;
  cluster.cycle({ones, {}}, {});
  cluster.cycle({ones, {}}, {allreduces({"x"}), allreduces({"x"})});
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, slow_before);
  EXPECT_EQ(cluster.at(1).coordinator_words(), ones);
}

}  // namespace
}  // namespace chorus::test
