// main() of every parallel test binary: the application (the test) owns MPI,
// so the tests also exercise chorus::init() on an already initialised MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "test main: MPI does not provide MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    // Only rank 0 prints progress; every rank still prints its failures.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    (void)listeners;
  }
  const int result = RUN_ALL_TESTS();
  // A failure on any rank fails the job: mpirun reports the non-zero exit.
  MPI_Finalize();
  return result;
}
