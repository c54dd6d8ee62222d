// chorus_bench --mode p2p: ping-pong between ranks 0 and 1, Chorus's
// send/recv against raw MPI in the same run, alternating. A sample is one
// batch of round trips timed on rank 0; the figure is half a round trip
// (the time of one message). The other ranks, if any, stand by.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_report.h"
#include "bench_util.h"

namespace chorus_bench {

struct P2PRow {
  size_t bytes = 0;
  int round_trips = 0;  // per sample
  Stats chorus;         // chorus::send / chorus::recv (blocking forms)
  Stats mpi;            // MPI_Send / MPI_Recv
  Stats mpi_nonblocking;  // MPI_Isend / MPI_Irecv + MPI_Wait
};

// Checks each size once (rank 1 receives rank 0's pattern through Chorus),
// then measures. False with `error` when a message arrived wrong.
bool p2p_pingpong(MPI_Comm comm, const Options& options, std::vector<P2PRow>* rows, std::string* error);

void print_p2p(const std::vector<P2PRow>& rows);
bool write_p2p_json(const RunInfo& info, const Options& options, const std::vector<P2PRow>& rows,
                    const std::string& path, std::string* error);

}  // namespace chorus_bench
