// chorusrun's rank wrapper: mpirun (or srun) starts
//   chorusrun --chorus-rank-wrapper HOST:PORT TOKEN --tag|--no-tag -- PROGRAM ARGS...
// once per rank. It connects to chorusrun's report listener, starts the
// program in its own process group (with the CHORUS_LAUNCHER_* variables for
// init()'s report), prefixes its output lines with the rank when tagging,
// and when the program ends reports its exit code or signal and run time,
// then exits with the same status. SIGTERM/SIGINT/SIGHUP, the death of its
// parent (mpirun, orted or slurmstepd) or chorusrun closing the connection
// stop the program: SIGTERM to its group, SIGKILL after a grace period.
#pragma once

#include <string>
#include <vector>

namespace chorus::launcher {

inline constexpr const char* kRankWrapperFlag = "--chorus-rank-wrapper";

// args: what follows kRankWrapperFlag. Returns the exit status.
int rank_wrapper_main(const std::vector<std::string>& args);

// The rank the MPI launcher gave this process: OMPI_COMM_WORLD_RANK, else
// PMIX_RANK, else SLURM_PROCID; -1 when none is set or valid.
int rank_from_environment();

}  // namespace chorus::launcher
