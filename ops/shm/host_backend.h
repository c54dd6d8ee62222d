// The backend for host memory: MPI alone, or shared-memory allreduce in
// front of MPI (ShmBackend) when CHORUS_SHM_ALLREDUCE allows it and every
// rank of the job is on one host. Jobs spanning several hosts keep the MPI
// path (a hierarchical allreduce is a separate piece of work).
#pragma once

#include <mpi.h>

#include <memory>

#include "chorus/status.h"
#include "config.h"
#include "ops/backend.h"
#include "topology.h"

namespace chorus {

// Collective over `comm` (every rank of the job). Uses rank 0's
// CHORUS_SHM_ALLREDUCE settings on every rank so that the ranks agree on the
// path of every collective (init() separately fails when settings differ).
// Errors: with mode "on", when the job spans hosts or shared memory cannot
// be set up (every rank returns the error); with "auto" those cases fall
// back to `mpi` (rank 0 logs why).
Status make_host_backend(const Config& config, const Topology& topology, MPI_Comm comm,
                         std::unique_ptr<Backend> mpi, std::unique_ptr<Backend>* out);

}  // namespace chorus
