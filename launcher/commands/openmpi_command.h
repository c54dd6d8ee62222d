// The mpirun command line for Open MPI.
#pragma once

#include "plan/job_plan.h"
#include "plan/mpi_implementation.h"
#include "process/command.h"

namespace chorus::launcher {

// Seconds of silence before Open MPI's daemons probe a peer, the interval
// between probes and how many unanswered probes end the job. Without them a
// host cut off from the network hangs the job forever (docs/LAUNCHER.md).
struct KeepaliveSettings {
  int time_s = 5;
  int interval_s = 2;
  int probes = 2;
};

Command build_openmpi_command(const JobPlan& plan, const MpiImplementation& mpi, const WrapperInvocation& wrapper,
                              bool is_root, const KeepaliveSettings& keepalive = {});

}  // namespace chorus::launcher
