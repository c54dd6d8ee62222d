// Micro-benchmarks of the runtime's per-tensor bookkeeping, one process, no
// MPI: what the 200 x 4 KiB step costs the framework thread (enqueue) and the
// background thread (taking the requests, negotiating them on the cache's
// fast path, planning the fusion, taking the entries back), without the
// network and the peers' noise. chorus_bench measures the whole step.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "protocol/controller.h"
#include "fake_transport.h"
#include "runtime/fusion_planner.h"
#include "runtime/tensor_queue.h"

namespace chorus {
namespace {

// Gradient-like names (longer than the small-string buffer, as real ones are).
std::vector<std::string> tensor_names(int64_t n) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) names.push_back("model.layers." + std::to_string(i) + ".weight.grad");
  return names;
}

Request allreduce_request(const std::string& name) {
  Request request;
  request.name = name;
  request.shape = {1024};
  return request;
}

TensorEntry make_entry(const std::string& name, float* data) {
  TensorEntry entry;
  entry.request = allreduce_request(name);
  entry.input_data = data;
  entry.output_data = data;
  entry.handle = std::make_shared<detail::HandleState>(name, OpType::kAllreduce, 1);
  return entry;
}

// One negotiation cycle of n tensors that are all in the response cache:
// the steady state of training.
void BM_NegotiateCached(benchmark::State& state) {
  const auto names = tensor_names(state.range(0));
  test::FakeWorld world(1);
  test::FakeTransport transport(&world, 0);
  Config config;
  config.stall_check_seconds = 0;
  config.stall_shutdown_seconds = 0;
  Controller controller(&transport, config);
  std::vector<Request> requests;
  for (const auto& name : names) requests.push_back(allreduce_request(name));
  std::vector<Response> responses;
  if (!controller.negotiate(requests, &responses).ok()) state.SkipWithError("first cycle failed");
  for (auto _ : state) {
    std::vector<Request> copy = requests;  // take_new_requests() hands over copies
    if (!controller.negotiate(std::move(copy), &responses).ok() ||
        responses.size() != names.size()) {
      state.SkipWithError("not served by the cache");
      break;
    }
    benchmark::DoNotOptimize(responses.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_NegotiateCached)->Arg(200);

// Fusion planning of n small allreduces into one unit.
void BM_PlanFusion(benchmark::State& state) {
  std::vector<Response> responses;
  for (const auto& name : tensor_names(state.range(0))) {
    Response response;
    response.name = name;
    response.elements = 1024;
    responses.push_back(response);
  }
  for (auto _ : state) {
    auto units = plan_fusion(responses, int64_t{64} << 20);
    benchmark::DoNotOptimize(units.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PlanFusion)->Arg(200);

// The tensor queue's part of a step: n enqueues (entries built as the API
// builds them), the background thread taking the requests, then taking the
// entries of one fused unit.
void BM_QueueStep(benchmark::State& state) {
  const auto names = tensor_names(state.range(0));
  std::vector<float> data(1024);
  WakeSignal wake;
  TensorQueue queue(0, &wake);
  std::vector<Response> unit;
  for (const auto& name : names) {
    Response response;
    response.name = name;
    response.elements = 1024;
    unit.push_back(response);
  }
  for (auto _ : state) {
    for (const auto& name : names) {
      if (!queue.add(make_entry(name, data.data())).ok()) state.SkipWithError("add failed");
    }
    auto requests = queue.take_new_requests();
    auto entries = queue.take_all_of(unit);
    benchmark::DoNotOptimize(requests.data());
    benchmark::DoNotOptimize(entries.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_QueueStep)->Arg(200);

}  // namespace
}  // namespace chorus

BENCHMARK_MAIN();
