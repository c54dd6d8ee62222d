// make_device_hierarchical_backend: puts DeviceHierarchicalBackend in front
// of a device's flat backend when CHORUS_HIERARCHICAL_ALLREDUCE and the
// job's hosts allow it (ops/hierarchical_selection.h), building its parts
// over communicators split from the job's: one per host (ranks ordered by
// local rank) and one per local rank (ranks ordered by host), as the CPU
// path does (ops/shm/hierarchical_allreduce.cc).
//
// Device-neutral: the caller says how a level's backend is made from its
// communicator (on a GPU: NCCL over the host's ranks and the host-staged
// backend over the hosts, ops/gpu/gpu_hierarchical.h; in tests: the
// asynchronous test device's backend over each), and which host each rank
// is on (Topology::node; tests pass pretend hosts).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "base/topology.h"
#include "chorus/status.h"
#include "contracts/backend.h"
#include "contracts/device.h"
#include "ops/hierarchical_selection.h"

namespace chorus {

// Makes the backend of one level (the host's ranks, or the hosts) on the
// device, over `comm` (that level's communicator, ranks in the level's order;
// freed after the backend). `transport`: an MPI backend over `comm` (host
// memory), for the backend's own use. Collective over `comm`; on failure
// it returns the error, and the ranks then agree over the whole job.
using HierarchyLevelMaker =
    std::function<Status(MPI_Comm comm, std::unique_ptr<Backend> transport, std::unique_ptr<Backend>* out)>;

struct DeviceHierarchySetup {
  HierarchicalSelection selection;  // rank 0's settings, on every rank
  // rank, node (this rank's host, 0..nodes-1) and nodes; local_rank orders
  // the ranks of a host.
  Topology topology;
  // The device all three backends queue their work on.
  std::shared_ptr<DeviceOps> device;
  HierarchyLevelMaker make_local;
  HierarchyLevelMaker make_cross;
  // What runs when the hierarchy does not, for messages: "NCCL".
  std::string flat_name;
};

// Collective over `comm` (every rank of the job, with the same settings).
// *out: DeviceHierarchicalBackend in front of `flat`, or `flat` itself when
// the hierarchy does not apply (off; one host; auto with hosts of different
// sizes or one rank each; auto when a level's backend cannot be made on some
// rank), which rank 0 logs. Errors, on every rank alike: `on` with hosts of
// different sizes (plan_hierarchy's message), `on` when a level's backend
// cannot be made on some rank, MPI failing.
Status make_device_hierarchical_backend(const DeviceHierarchySetup& setup, MPI_Comm comm,
                                        std::unique_ptr<Backend> flat, std::unique_ptr<Backend>* out);

}  // namespace chorus
