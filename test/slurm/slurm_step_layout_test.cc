// Slurm's compressed task counts, as the Slurm tests' reference reads them.
#include "slurm_step_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace chorus_test {
namespace {

std::vector<int> expand(const char* text) {
  std::vector<int> out;
  EXPECT_TRUE(SlurmStepLayout::parse_tasks_per_node(text, &out)) << text;
  return out;
}

TEST(SlurmStepLayout, ExpandsRepeatsAndLists) {
  EXPECT_EQ(expand("2(x2)"), (std::vector<int>{2, 2}));
  EXPECT_EQ(expand("4"), (std::vector<int>{4}));
  EXPECT_EQ(expand("3,1"), (std::vector<int>{3, 1}));
  EXPECT_EQ(expand("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
}

TEST(SlurmStepLayout, RejectsMalformedCounts) {
  std::vector<int> out;
  for (const char* bad : {"", "x", "2(x)", "2(x0)", "2,", "-1", "2(x2", "2x2"}) {
    EXPECT_FALSE(SlurmStepLayout::parse_tasks_per_node(bad, &out)) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace chorus_test
