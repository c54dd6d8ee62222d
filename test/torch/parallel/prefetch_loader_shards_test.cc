// PrefetchLoader on every rank of a job: the loaders of the ranks hand out
// disjoint shards that together cover the dataset (all but the remainder
// dropped for equal shards), each exactly the shard its DistributedSampler
// deals. Every rank gathers every rank's batches and checks them against
// samplers it builds locally for each rank, and against plain set arithmetic.
#include <set>
#include <string>
#include <vector>

#include "chorus/torch/data/distributed_sampler.h"
#include "chorus/torch/data/prefetch_loader.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

namespace ct = chorus::torch;

ct::PrefetchLoader::Batch indices_batch(const std::vector<size_t>& indices) {
  const std::vector<int64_t> values(indices.begin(), indices.end());
  return {torch::tensor(values, torch::kInt64), torch::zeros({static_cast<int64_t>(values.size())})};
}

class PrefetchLoaderShardsTest : public TorchSuite {};

TEST_F(PrefetchLoaderShardsTest, RanksLoadDisjointShardsAsTheirSamplersDeal) {
  const int64_t n = 1003;  // not a multiple of 2 or 3: a remainder is dropped
  ct::DistributedSampler::Options options;
  options.seed = 77;
  ct::DistributedSampler sampler(n, options);  // this rank of chorus::size()
  ct::PrefetchLoader loader(sampler, indices_batch, {16, 1 + rank() % 3, 3, false});
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    sampler.set_epoch(epoch);
    loader.reset();
    std::vector<torch::Tensor> batches;
    while (auto batch = loader.next()) batches.push_back(batch->data);
    const torch::Tensor mine = torch::cat(batches);
    const torch::Tensor all = ct::allgather(mine, "loader_shards." + std::to_string(epoch));
    const int64_t per_rank = n / size();
    ASSERT_EQ(all.size(0), per_rank * size());
    std::set<int64_t> seen;
    for (int r = 0; r < size(); ++r) {
      ct::DistributedSampler reference(n, options, size(), r);
      reference.set_epoch(epoch);
      const torch::Tensor shard = all.narrow(0, r * per_rank, per_rank);
      EXPECT_TRUE(torch::equal(shard, torch::tensor(reference.indices(), torch::kInt64)))
          << "rank " << r << ", epoch " << epoch;
      for (int64_t i = 0; i < per_rank; ++i) seen.insert(shard[i].item<int64_t>());
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), per_rank * size()) << "shards overlap";
    EXPECT_GE(*seen.begin(), 0);
    EXPECT_LT(*seen.rbegin(), n);
  }
}

}  // namespace
}  // namespace chorus_torch_test
