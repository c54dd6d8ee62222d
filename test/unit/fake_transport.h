// An in-memory ControllerTransport for N ranks inside one test process, one
// std::thread per rank. Every collective is a rendezvous on one shared
// mutex/condition variable: each rank deposits its input, the last one to
// arrive computes the result, and the next collective starts only after
// every rank has read it. Like MPI, all ranks must call the same collectives
// in the same order; a rank that calls another one (or a rendezvous that
// does not complete within the timeout) fails that call on every rank and
// breaks the world, so a protocol bug fails the test instead of hanging it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "protocol/controller_transport.h"

namespace chorus::test {

class FakeWorld {
 public:
  explicit FakeWorld(int size, std::chrono::milliseconds timeout = std::chrono::seconds(20))
      : size_(size), timeout_(timeout), bits_in_(size), blobs_in_(size) {}

  int size() const { return size_; }

  // Fault injection: runs on each rank's contribution to a gather, so tests
  // can hand the coordinator a corrupt message.
  void set_gather_filter(std::function<void(int rank, std::string* blob)> filter) {
    std::lock_guard<std::mutex> lock(mu_);
    gather_filter_ = std::move(filter);
  }

  Status allreduce_or(int rank, std::vector<uint64_t>* bits) {
    return rendezvous(
        rank, "allreduce_or", [&] { bits_in_[rank] = *bits; },
        [this]() -> Status {
          std::vector<uint64_t> result = bits_in_[0];
          for (int r = 1; r < size_; ++r) {
            if (bits_in_[r].size() != result.size()) {
              return Status::Internal("fake transport: bit vectors of different lengths");
            }
            for (size_t i = 0; i < result.size(); ++i) result[i] |= bits_in_[r][i];
          }
          bits_out_ = std::move(result);
          return Status::OK();
        },
        [&] { *bits = bits_out_; });
  }

  Status gather(int rank, const std::string& mine, std::vector<std::string>* all) {
    return rendezvous(
        rank, "gather",
        [&] {
          blobs_in_[rank] = mine;
          if (gather_filter_) gather_filter_(rank, &blobs_in_[rank]);
        },
        [] { return Status::OK(); },
        [&] {
          if (rank == 0) {
            *all = blobs_in_;
          } else {
            all->clear();
          }
        });
  }

  Status broadcast(int rank, std::string* blob) {
    return rendezvous(
        rank, "broadcast", [&] { blobs_in_[rank] = *blob; }, [] { return Status::OK(); },
        [&] { *blob = blobs_in_[0]; });
  }

 private:
  // deposit() and collect() run under the lock for this rank; combine() runs
  // once, on the last rank to arrive.
  template <typename Deposit, typename Combine, typename Collect>
  Status rendezvous(int rank, const char* op, Deposit deposit, Combine combine, Collect collect) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    if (!cv_.wait_until(lock, deadline, [this] { return broken_ || !distributing_; })) {
      return breaks(rank, op, "waiting for the previous collective to finish");
    }
    if (broken_) return error_;
    if (arrived_ == 0) {
      op_ = op;
    } else if (op_ != op) {
      return breaks(rank, op, "while the others called " + op_);
    }
    deposit();
    if (++arrived_ == size_) {
      Status combined = combine();
      if (!combined.ok()) {
        error_ = combined;
        broken_ = true;
        cv_.notify_all();
        return error_;
      }
      distributing_ = true;
      cv_.notify_all();
    } else if (!cv_.wait_until(lock, deadline, [this] { return broken_ || distributing_; })) {
      return breaks(rank, op, "waiting for the other ranks");
    }
    if (broken_) return error_;
    collect();
    if (++departed_ == size_) {
      arrived_ = departed_ = 0;
      distributing_ = false;
      cv_.notify_all();
    }
    return Status::OK();
  }

  Status breaks(int rank, const char* op, const std::string& why) {
    if (!broken_) {
      error_ = Status::Internal("fake transport: rank " + std::to_string(rank) + " in " + op +
                                ": " + why);
      broken_ = true;
    }
    cv_.notify_all();
    return error_;
  }

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int departed_ = 0;
  bool distributing_ = false;
  bool broken_ = false;
  Status error_;
  std::string op_;
  std::vector<std::vector<uint64_t>> bits_in_;
  std::vector<uint64_t> bits_out_;
  std::vector<std::string> blobs_in_;
  std::function<void(int, std::string*)> gather_filter_;
};

class FakeTransport : public ControllerTransport {
 public:
  FakeTransport(FakeWorld* world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  Status allreduce_or(std::vector<uint64_t>* bits) override {
    return world_->allreduce_or(rank_, bits);
  }
  Status gather_to_coordinator(const std::string& mine, std::vector<std::string>* all) override {
    return world_->gather(rank_, mine, all);
  }
  Status broadcast_from_coordinator(std::string* blob) override {
    return world_->broadcast(rank_, blob);
  }

 private:
  FakeWorld* world_;
  int rank_;
};

}  // namespace chorus::test
