// Communication: the transports of a job as the runtime uses them, from
// init() until after the background thread has stopped: the job's topology,
// the negotiation's transport and cycle trigger, the backends, point-to-point,
// the process sets' places and the watch over lost peers. The runtime sees
// only this interface; which transports stand behind it (MPI, shared memory
// on one host, the GPU's) is decided where they are assembled
// (ops/mpi_communication.h), which also defines connect_communication().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/topology.h"
#include "chorus/status.h"
#include "contracts/backend_registry.h"
#include "contracts/point_to_point.h"
#include "protocol/controller_transport.h"
#include "protocol/cycle_trigger.h"

namespace chorus {

// How the job's peers are watched (ops/heartbeat/heartbeat.h does it).
struct HeartbeatOptions {
  std::chrono::duration<double> timeout{30.0};
  // CHORUS_HEARTBEAT_INTERFACE (ops/heartbeat/heartbeat_card.h); empty: Open
  // MPI's btl_tcp_if_include when set, else every interface.
  std::string interface;
  // From the loss to the end of the job.
  std::chrono::duration<double> end_grace{2.0};
};

// Which rank was lost and its host as chorusrun --elastic names it; rank -1
// when a peer declared this rank lost.
struct LostPeer {
  int rank = -1;
  std::string host_key;
};
// Called once, on the watch's own thread, with why (naming the rank and host).
using OnPeerLost = std::function<void(const Status& why, const LostPeer& peer)>;

// A running watch over the job's peers.
class PeerWatch {
 public:
  virtual ~PeerWatch() = default;
  // Tells the peers this rank is leaving and stops watching. Idempotent.
  virtual void stop() = 0;
  // Whether a peer was lost; why.
  virtual bool lost() const = 0;
  virtual Status lost_reason() const = 0;
};

class Communication {
 public:
  virtual ~Communication() = default;

  // Collective: everything after the ranks agreed on their settings (which
  // they do through controller_transport()): the cycle trigger, the backends
  // (those of `custom` first, then the GPU's, then host memory's), the
  // negotiation's shared-memory transport.
  virtual Status start(const Config& agreed, const std::vector<BackendMaker>& custom) = 0;

  virtual const Topology& topology() const = 0;
  virtual ControllerTransport* controller_transport() = 0;
  virtual CycleTrigger* trigger() = 0;
  virtual const BackendRegistry& backends() const = 0;
  // Point-to-point transfers. Shared with the handles that drive them, which
  // may outlive this object: it is closed (every transfer failed) first.
  virtual const std::shared_ptr<PointToPoint>& point_to_point() const = 0;
  // The allreduce algorithms of host memory's backend, the one in use first
  // (the autotuner's choices), and switching between them (between cycles).
  virtual std::vector<std::string> allreduce_algorithms() const = 0;
  virtual Status use_allreduce_algorithm(const std::string& algorithm) = 0;

  // Ends every rank of the job after printing `reason`: for a rank that
  // cannot go on while its peers may be waiting for it. The second form
  // does it `grace` later, on a thread of its own: time for the program to
  // hear the error that ended this rank and for the other ranks of this
  // host to notice the same loss themselves.
  virtual void abort_job(const std::string& reason) = 0;
  virtual void abort_job_after(std::chrono::duration<double> grace, const std::string& reason) = 0;

  // Collective over every rank of the job: starts watching the peers;
  // `on_lost` hears of a lost one, and the job then ends.
  virtual Status start_heartbeat(const HeartbeatOptions& options, OnPeerLost on_lost,
                                 std::unique_ptr<PeerWatch>* out) = 0;

  // Process sets other than the global one. Collective over every rank of
  // the job, called by the background thread at the same point of the
  // response order everywhere; `ranks` ascending.
  virtual Status add_process_set(int32_t id, const std::vector<int>& ranks) = 0;
  // Releases the set's backends (members only hold any).
  virtual void remove_process_set(int32_t id) = 0;
  // This rank's place in the set (contracts/backend_registry.h); false when
  // it is not a member or no such set exists.
  virtual bool process_set(int32_t id, SetPlace* out) const = 0;
};

// Connects this rank to the job (starting MPI unless the program did) and
// learns the topology: enough for the ranks to agree on their settings
// (core/protocol/settings_agreement.h). Defined by the library that
// assembles the transports (ops/mpi_communication.cc).
Status connect_communication(std::unique_ptr<Communication>* out);

}  // namespace chorus
