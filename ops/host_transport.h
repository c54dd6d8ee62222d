// Host memory's backend: MPI alone; or, when every rank of the job is
// on one host, shared-memory allreduce in front of MPI (ShmBackend) as
// CHORUS_SHM_ALLREDUCE allows; or, for a job on several hosts, hierarchical
// allreduce in front of MPI (HierarchicalBackend) as
// CHORUS_HIERARCHICAL_ALLREDUCE allows.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "chorus/status.h"
#include "base/config.h"
#include "contracts/backend.h"
#include "base/topology.h"

namespace chorus {

// Collective over `comm` (every rank of the job). The ranks agreed on the
// CHORUS_SHM_ALLREDUCE* and CHORUS_HIERARCHICAL_ALLREDUCE settings at init()
// (settings_agreement.h), so they agree on the path of every collective.
// Errors: with CHORUS_SHM_ALLREDUCE "on", when the job spans hosts or shared
// memory cannot be set up; with CHORUS_HIERARCHICAL_ALLREDUCE "on", when
// hosts hold different numbers of ranks or shared memory cannot be set up
// (every rank returns the error). With "auto" those cases fall back to
// `mpi` (rank 0 logs why).
// `topology` and `comm` may be a process set's (its members only, numbered
// by set rank); `segment_tag` then names the set in its shared-memory
// segment's name.
Status make_host_backend(const Config& config, const Topology& topology, MPI_Comm comm, std::unique_ptr<Backend> mpi,
                         std::unique_ptr<Backend>* out, const std::string& segment_tag = "");

}  // namespace chorus
