// Communication: everything the runtime needs from the transport layer,
// created at init() and destroyed after the background thread has stopped:
// the job's topology, the negotiation primitives, the cycle trigger and the
// backends. Core code sees only these interfaces; which transport stands
// behind them (MPI, or shared memory on one host) is decided here.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "base/config.h"
#include "protocol/controller_transport.h"
#include "protocol/cycle_trigger.h"
#include "ops/backend_registry.h"
#include "ops/heartbeat/heartbeat.h"
#include "ops/local_peers.h"
#include "ops/process_set_comm.h"
#include "ops/point_to_point.h"
#include "base/topology.h"

namespace chorus {

class MpiContext;

// abort_job() without the object (for threads that may outlive it). If
// MPI_Abort has not ended this process after a few seconds (a launcher it
// cannot reach any more: a cut link), the process exits by itself, so that
// no rank lingers.
void abort_mpi_job(int rank, const std::string& reason);
// abort_mpi_job() `grace` later, on a thread of its own: time for the
// program to hear the error that ended this rank and say so, and for the
// other ranks of this host to notice the same loss themselves (an immediate
// MPI_Abort could kill them before their own error reached their program).
void abort_mpi_job_after(int rank, std::chrono::duration<double> grace, const std::string& reason);

class Communication {
 public:
  // Starts MPI (unless the program did), learns the topology and sets up
  // the negotiation's transport: enough for the ranks to agree on their
  // settings (core/protocol/settings_agreement.h).
  static Status connect(std::unique_ptr<Communication>* out);
  // Collective: the rest, with the settings every rank agreed on: the cycle
  // trigger, the backends (those of `custom` first, then the GPU's, then
  // host memory's), and the negotiation's shared-memory transport.
  Status start(const Config& agreed, const std::vector<BackendMaker>& custom = {});
  ~Communication();

  const Topology& topology() const { return topology_; }
  ControllerTransport* controller_transport() { return transport_.get(); }
  CycleTrigger* trigger() { return trigger_.get(); }
  const BackendRegistry& backends() const { return backends_; }
  // Point-to-point transfers, on a communicator of their own. Shared with
  // the handles that drive it, which may outlive this object: it is closed
  // (every transfer failed) before MPI goes away.
  const std::shared_ptr<PointToPoint>& point_to_point() const { return p2p_; }
  // The allreduce algorithms of host memory's backend, the one in use first
  // (the autotuner's choices), and switching between them (between cycles).
  std::vector<std::string> allreduce_algorithms() const { return host_->allreduce_algorithms(); }
  Status use_allreduce_algorithm(const std::string& algorithm) { return host_->use_allreduce_algorithm(algorithm); }
  // Ends every rank of the job (MPI_Abort) after printing `reason`: for a
  // rank that cannot go on while its peers may be waiting for it.
  void abort_job(const std::string& reason) { abort_mpi_job(topology_.rank, reason); }
  void abort_job_after(std::chrono::duration<double> grace, const std::string& reason) {
    abort_mpi_job_after(topology_.rank, grace, reason);
  }
  // Collective: the heartbeat (ops/heartbeat/heartbeat.h) over every rank of
  // the job; it ends the job with abort_mpi_job.
  Status start_heartbeat(const HeartbeatOptions& options, Heartbeat::OnLost on_lost,
                         std::unique_ptr<Heartbeat>* out);

  // Process sets other than the global one (ops/process_set_comm.h).
  // Collective over every rank of the job, called by the background thread
  // at the same point of the response order everywhere; `ranks` ascending.
  Status add_process_set(int32_t id, const std::vector<int>& ranks);
  // Releases the set's backends (members only hold any).
  void remove_process_set(int32_t id) { process_sets_.erase(id); }
  // The set's communication on this rank; nullptr when this rank is not a
  // member or no such set exists.
  const ProcessSetComm* process_set(int32_t id) const;

 private:
  Communication() = default;
  // On one host, a cycle trigger through shared memory, so that idle ranks
  // sleep until something concerns them; otherwise (or when the segment
  // cannot be set up) over MPI. Either watches `peers` while it waits for them.
  void create_trigger(const Config& config, LocalPeers peers);
  // Collective: the GPU's backend, when this build has CUDA and the ranks
  // have GPUs (ops/cuda/gpu_backends.h); else why CUDA tensors are refused.
  Status add_gpu_backends(const Config& agreed);
  // Wraps the MPI negotiation transport in the shared-memory one.
  void negotiate_through_shm(const Config& config);
  LocalPeers peers_;
  // Declared first so it is destroyed last: it may finalize MPI.
  std::unique_ptr<MpiContext> mpi_;
  Topology topology_;
  std::shared_ptr<PointToPoint> p2p_;
  std::unique_ptr<ControllerTransport> transport_;
  std::unique_ptr<CycleTrigger> trigger_;
  BackendRegistry backends_;
  Backend* host_ = nullptr;  // host memory's, inside backends_
  Config agreed_;
  // The parent of the process sets' communicators (MPI_Comm_split), used
  // for nothing else.
  MPI_Comm split_parent_ = MPI_COMM_NULL;
  // This rank's sets (those it is a member of); released before MPI.
  std::map<int32_t, std::unique_ptr<ProcessSetComm>> process_sets_;
};

}  // namespace chorus
