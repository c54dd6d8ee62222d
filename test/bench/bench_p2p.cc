#include "bench_p2p.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "chorus/chorus.h"

namespace chorus_bench {
namespace {

using Clock = std::chrono::steady_clock;

// Enough round trips that a sample moves 64 MiB or lasts 200 messages, and at
// least 16 so that one slow trip does not make the sample.
int round_trips_for(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / std::max<size_t>(bytes, 1), 16, 200));
}

}  // namespace

bool p2p_pingpong(MPI_Comm comm, const Options& options, std::vector<P2PRow>* rows, std::string* error) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool active = rank < 2;
  const int peer = 1 - rank;
  for (size_t bytes : options.p2p_sizes) {
    std::vector<char> buffer(bytes);
    for (size_t i = 0; i < bytes; ++i) buffer[i] = static_cast<char>(rank == 0 ? (i * 7 + 3) : 0);
    const chorus::Tensor tensor(buffer.data(), chorus::DataType::kUInt8, {static_cast<int64_t>(bytes)});
    const std::string name = "bench.p2p." + std::to_string(bytes);
    // Correctness first: a wrong message makes every figure meaningless.
    int wrong = 0;
    if (rank == 0) chorus::send(name, tensor, 1);
    if (rank == 1) {
      chorus::recv(name, tensor, 0);
      for (size_t i = 0; i < bytes && !wrong; ++i) wrong = buffer[i] != static_cast<char>(i * 7 + 3);
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX, comm);
    if (wrong) {
      *error = "rank 1 received wrong bytes from rank 0 through chorus::recv at " + format_size(bytes);
      return false;
    }
    P2PRow row;
    row.bytes = bytes;
    row.round_trips = round_trips_for(bytes);
    const int count = static_cast<int>(bytes);
    // Rank 0 sends first; rank 1 answers.
    const std::vector<std::function<void()>> variants = {
        [&] {
          if (rank == 0) { chorus::send(name, tensor, peer); chorus::recv(name, tensor, peer); }
          else { chorus::recv(name, tensor, peer); chorus::send(name, tensor, peer); }
        },
        [&] {
          if (rank == 0) {
            MPI_Send(buffer.data(), count, MPI_BYTE, peer, 1, comm);
            MPI_Recv(buffer.data(), count, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
          } else {
            MPI_Recv(buffer.data(), count, MPI_BYTE, peer, 1, comm, MPI_STATUS_IGNORE);
            MPI_Send(buffer.data(), count, MPI_BYTE, peer, 1, comm);
          }
        },
        [&] {
          MPI_Request request;
          for (int step = 0; step < 2; ++step) {
            if ((rank == 0) == (step == 0)) MPI_Isend(buffer.data(), count, MPI_BYTE, peer, 2, comm, &request);
            else MPI_Irecv(buffer.data(), count, MPI_BYTE, peer, 2, comm, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
          }
        },
    };
    std::vector<std::vector<double>> samples(variants.size());
    for (int round = 0; round < options.warmup + options.repeats; ++round) {
      for (size_t v = 0; v < variants.size(); ++v) {
        MPI_Barrier(comm);
        const auto start = Clock::now();
        if (active) {
          for (int trip = 0; trip < row.round_trips; ++trip) variants[v]();
        }
        const double half_trip = std::chrono::duration<double>(Clock::now() - start).count() / (2.0 * row.round_trips);
        if (round >= options.warmup) samples[v].push_back(half_trip);
      }
    }
    // Rank 0's figures.
    for (auto& s : samples) MPI_Bcast(s.data(), static_cast<int>(s.size()), MPI_DOUBLE, 0, comm);
    row.chorus = summarize(samples[0]);
    row.mpi = summarize(samples[1]);
    row.mpi_nonblocking = summarize(samples[2]);
    rows->push_back(row);
  }
  return true;
}

void print_p2p(const std::vector<P2PRow>& rows) {
  std::printf("\n## point-to-point ping-pong, ranks 0 and 1: one message (half a round trip), median (min)\n");
  std::printf("%10s %7s %22s %22s %22s %9s %9s\n", "size", "trips", "chorus send/recv", "MPI_Send/Recv",
              "MPI_Isend/Irecv+Wait", "x Send", "x Isend");
  for (const P2PRow& r : rows) {
    const auto cell = [](const Stats& s) { return format_time(s.median) + " (" + format_time(s.min) + ")"; };
    std::printf("%10s %7d %22s %22s %22s %8.2fx %8.2fx\n", format_size(r.bytes).c_str(), r.round_trips,
                cell(r.chorus).c_str(), cell(r.mpi).c_str(), cell(r.mpi_nonblocking).c_str(),
                r.chorus.median / r.mpi.median, r.chorus.median / r.mpi_nonblocking.median);
  }
  std::printf("(x: Chorus's time over MPI's; 1.00x is as fast as raw MPI)\n");
  std::fflush(stdout);
}

bool write_p2p_json(const RunInfo& info, const Options& options, const std::vector<P2PRow>& rows,
                    const std::string& path, std::string* error) {
  Json json = run_json("chorus_bench_p2p", info);
  json["repeats"] = options.repeats;
  json["warmup"] = options.warmup;
  Json& pingpong = json["pingpong"] = Json::array();
  for (const P2PRow& r : rows) {
    pingpong.push_back(Json{{"bytes", r.bytes},
                            {"round_trips", r.round_trips},
                            {"chorus", stats_json(r.chorus)},
                            {"mpi_send_recv", stats_json(r.mpi)},
                            {"mpi_isend_irecv", stats_json(r.mpi_nonblocking)},
                            {"chorus_over_mpi", r.chorus.median / r.mpi.median},
                            {"chorus_over_mpi_nonblocking", r.chorus.median / r.mpi_nonblocking.median}});
  }
  return write_json_file(json, path, error);
}

}  // namespace chorus_bench
