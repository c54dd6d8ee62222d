// The core API from an installed Chorus: a sum allreduce and an average
// allreduce of float data, checked element by element against values
// computed here from the ranks' inputs (exact in float for these sizes).
// Exit status 0 when every rank's result is right; 1 otherwise.
#include <chorus/chorus.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "private_headers_unreachable.h"

namespace {

// What rank r contributes at index i.
float input(int r, int64_t i) { return static_cast<float>((r + 1) * (i % 17 + 1)); }

int check(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (bad++ < 3) {
        std::fprintf(stderr, "rank %d: %s[%zu] = %g, expected %g\n", chorus::rank(), what, i,
                     double(got[i]), double(want[i]));
      }
    }
  }
  return bad;
}

}  // namespace

int main() {
  try {
    chorus::init();
    const int rank = chorus::rank(), size = chorus::size();
    const int64_t n = 1000;

    std::vector<float> sum(n), want_sum(n, 0.0f);
    for (int64_t i = 0; i < n; ++i) sum[i] = input(rank, i);
    for (int r = 0; r < size; ++r) {
      for (int64_t i = 0; i < n; ++i) want_sum[i] += input(r, i);
    }
    chorus::AllreduceOptions sum_options;
    sum_options.op = chorus::ReduceOp::kSum;
    chorus::allreduce("consumer.sum", chorus::Tensor(sum.data(), chorus::DataType::kFloat32, {n}),
                      sum_options);

    // The default op, kAverage, on a second tensor in flight with the first.
    std::vector<float> average(n, static_cast<float>(2 * rank));
    chorus::Handle h = chorus::allreduce_async(
        "consumer.average", chorus::Tensor(average.data(), chorus::DataType::kFloat32, {n}));
    h.wait();
    const std::vector<float> want_average(n, static_cast<float>(size - 1));

    const int bad = check("sum", sum, want_sum) + check("average", average, want_average);
    std::printf("core_consumer rank %d of %d: %s\n", rank, size, bad == 0 ? "OK" : "WRONG");
    chorus::shutdown();
    return bad == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_consumer: %s\n", e.what());
    return 1;
  }
}
