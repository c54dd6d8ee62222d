// BackendRegistry: the backends this build has, in priority order. The
// executor asks it for each response; the first backend that supports the
// tensor's device runs it (NCCL for CUDA memory, MPI for host memory).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "contracts/backend.h"

namespace chorus {

// Makes a backend for a device a program brings itself (Device::Kind::
// kCustom; the test suite's asynchronous device): at init(), on every rank,
// from an MPI backend over a communicator of its own (`transport`), so that
// its collectives, which may run on a thread of the device's, never
// interleave with the runtime's.
using BackendMaker = std::function<Status(std::unique_ptr<Backend> transport, std::unique_ptr<Backend>* out)>;

class BackendRegistry {
 public:
  void add(std::unique_ptr<Backend> backend) { backends_.push_back(std::move(backend)); }
  // nullptr when no backend supports the device.
  Backend* select(const Device& device) const;
  bool supports(const Device& device) const { return select(device) != nullptr; }
  // Every backend's Backend::runs_on_any_thread().
  bool run_on_any_thread() const;
  // The job is failing: every backend ends its outstanding work with an
  // error naming `reason` (Backend::abort), so that nothing waits for a
  // device collective whose peers are gone.
  void abort_all(const std::string& reason) const;

  // Why no backend here serves devices of `kind` (or, with one that serves
  // some of them, the others), completing "tensor 'x' is on cuda:1 but
  // <why>": e.g. "this rank sees no CUDA device (...)".
  void explain(Device::Kind kind, std::string why) { explanations_[kind] = std::move(why); }
  // OK when a backend supports `device`; else the InvalidArgument a
  // collective on the tensor `name` there gets: "tensor '<name>' is on
  // <device> but <why>", or "'<name>': no backend in this build supports
  // tensors on <device>" for a kind nothing explained.
  Status check(const std::string& name, const Device& device) const;
  // OK when the backend of `device` reduces `dtype` (Backend::
  // check_reduction) or no backend serves the device (check() says so);
  // else "'<name>': <why>".
  Status check_reduction(const std::string& name, const Device& device, DataType dtype) const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::map<Device::Kind, std::string> explanations_;
};

// Where a unit runs: the backends of its process set and this rank's place
// in the set (for the global set: the job's backends, rank and size).
struct SetPlace {
  const BackendRegistry* backends = nullptr;
  int rank = 0;  // this rank's set rank
  int size = 1;
  const std::vector<int>* ranks = nullptr;  // the members' job ranks; nullptr: every rank
};

}  // namespace chorus
