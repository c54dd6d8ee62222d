// main() of the parallel tests that need a GPU (the NCCL backend's): as
// support/mpi_test_main.cc, but a run in which every test skipped on every
// rank (no GPU here) and none failed exits with kSkippedExitCode, which
// ctest reports as "Skipped" (SKIP_RETURN_CODE) instead of "Passed": a skip
// is not a pass. Linked into those targets ahead of the support library,
// whose own main() the linker then leaves out.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {
constexpr int kSkippedExitCode = 77;
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "test main: MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  const int all_skipped =
      result == 0 && unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count() ? 1 : 0;
  int skipped_everywhere = 0;
  MPI_Allreduce(&all_skipped, &skipped_everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  if (result != 0) return result;
  return skipped_everywhere ? kSkippedExitCode : 0;
}
