// What an event of the timeline (CHORUS_TIMELINE) costs the background
// thread: serializing one span and handing it to stdio's buffer. A step of
// 200 fused tensors writes about a thousand of them.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/timeline.h"

namespace chorus {
namespace {

void BM_TimelineSpan(benchmark::State& state) {
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("model.layers." + std::to_string(i) + ".weight.grad");
  const std::string path = "/tmp/chorus_timeline_micro_bench_" + std::to_string(::getpid()) + ".json";
  Timeline timeline;
  if (!timeline.open(path).ok()) {
    state.SkipWithError("cannot write the trace");
    return;
  }
  size_t i = 0;
  for (auto _ : state) {
    const auto now = Timeline::Clock::now();
    const std::string& name = names[i % names.size()];
    // One span in five carries args, as each fused ALLREDUCE does.
    if (i % 5 == 0) {
      timeline.span(name, "ALLREDUCE", now, now, {{"fused_tensors", 200}});
    } else {
      timeline.span(name, "NEGOTIATE", now, now);
    }
    ++i;
  }
  timeline.close();
  std::remove(path.c_str());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TimelineSpan);

}  // namespace
}  // namespace chorus
