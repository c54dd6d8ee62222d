// Test harness for the negotiation protocol: N Controllers in one process,
// each cycle run on one thread per rank over the fake transport.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "protocol/controller.h"
#include "fake_transport.h"

namespace chorus::test {

using Clock = Controller::Clock;
using Responses = std::vector<Response>;
inline const Clock::time_point kT0 = Clock::time_point{} + std::chrono::hours(10);
inline Clock::time_point at(double seconds) {
  return kT0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

inline Request make(const std::string& name, OpType op = OpType::kAllreduce, Shape shape = {4}) {
  Request q;
  q.name = name;
  q.op = op;
  q.shape = std::move(shape);
  return q;
}

inline std::vector<Request> allreduces(const std::vector<std::string>& names) {
  std::vector<Request> out;
  for (const auto& n : names) out.push_back(make(n));
  return out;
}

// "allreduce:x", "error:y", ...: enough to compare orders across ranks.
inline std::vector<std::string> describe(const Responses& responses) {
  std::vector<std::string> out;
  for (const auto& r : responses) out.push_back(std::string(response_type_name(r.type)) + ":" + r.name);
  return out;
}

inline Config quiet_config(int64_t capacity = 1024) {
  Config config;
  config.cache_capacity = capacity;
  config.stall_check_seconds = 0;
  config.stall_shutdown_seconds = 0;
  return config;
}

class Cluster {
 public:
  explicit Cluster(int size, const Config& config = quiet_config()) : world_(size) {
    for (int r = 0; r < size; ++r) {
      transports_.push_back(std::make_unique<FakeTransport>(&world_, r));
      controllers_.push_back(std::make_unique<Controller>(transports_.back().get(), config));
    }
  }
  int size() const { return world_.size(); }
  Controller& at(int rank) { return *controllers_[rank]; }
  FakeWorld& world() { return world_; }

  // One negotiation cycle on every rank at once; requests[r] goes to rank r
  // (missing entries mean nothing new).
  std::vector<Status> try_cycle(std::vector<std::vector<Request>> requests,
                                std::vector<Responses>* out, Clock::time_point now = kT0) {
    requests.resize(size());
    out->assign(size(), {});
    std::vector<Status> status(size());
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) {
      threads.emplace_back([&, r] {
        status[r] = controllers_[r]->negotiate(std::move(requests[r]), &(*out)[r], now);
      });
    }
    for (auto& t : threads) t.join();
    return status;
  }

  // Like try_cycle, but every rank must succeed and see the same responses.
  Responses cycle(std::vector<std::vector<Request>> requests, Clock::time_point now = kT0) {
    std::vector<Responses> out;
    auto status = try_cycle(std::move(requests), &out, now);
    for (int r = 0; r < size(); ++r) {
      EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].to_string();
      EXPECT_EQ(describe(out[r]), describe(out[0])) << "rank " << r;
    }
    return out[0];
  }

  // Every rank submits the same requests.
  Responses all(const std::vector<Request>& requests, Clock::time_point now = kT0) {
    return cycle(std::vector<std::vector<Request>>(size(), requests), now);
  }

 private:
  FakeWorld world_;
  std::vector<std::unique_ptr<FakeTransport>> transports_;
  std::vector<std::unique_ptr<Controller>> controllers_;
};

}  // namespace chorus::test
