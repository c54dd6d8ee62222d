#include "ops/mpi/mpi_point_to_point.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

#include "base/logging.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {
namespace {

constexpr int kHeaderTag = 0;
// MPI counts are ints: larger data goes as several messages.
constexpr size_t kChunkBytes = size_t{1} << 30;

std::string sent_as(DataType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + " " + shape_to_string(shape);
}

void cancel(MPI_Request* request) {
  if (*request == MPI_REQUEST_NULL) return;
  MPI_Cancel(request);
  MPI_Request_free(request);
}

}  // namespace

std::string describe(const TransferInfo& info) {
  return std::string(info.is_send ? "send of '" : "receive of '") + info.name + (info.is_send ? "' to" : "' from") +
         " rank " + std::to_string(info.peer);
}

struct MpiPointToPoint::Transfer {
  TransferInfo info;
  Tensor tensor;
  Completion done;  // empty for the discarded data of a mismatch
  std::vector<MPI_Request> requests;
  std::vector<char> buffer;  // a send's encoded header, or discarded data
  Status outcome;            // once the requests are done
};

Status MpiPointToPoint::create(MPI_Comm comm, LocalPeers peers, const MpiPointToPointOptions& options,
                               std::shared_ptr<MpiPointToPoint>* out) {
  std::shared_ptr<MpiPointToPoint> p2p(new MpiPointToPoint(comm, std::move(peers), options));
  MPI_Comm_rank(comm, &p2p->rank_);
  MPI_Comm_size(comm, &p2p->size_);
  void* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &found);
  if (found && ub) p2p->tag_ub_ = *static_cast<int*>(ub);
  p2p->next_tag_.assign(static_cast<size_t>(p2p->size_), 1);
  p2p->header_buffer_.resize(kMaxHeaderBytes + options.packed_limit);
  std::lock_guard<std::mutex> lock(p2p->mutex_);
  p2p->post_header_recv_locked();
  if (p2p->closed_) return p2p->closed_reason_;
  *out = std::move(p2p);
  return Status::OK();
}

MpiPointToPoint::MpiPointToPoint(MPI_Comm comm, LocalPeers peers, const MpiPointToPointOptions& options)
    : comm_(comm), options_(options) {
  for (const LocalPeer& peer : peers.peers()) local_peers_[peer.rank] = peer;
  next_watch_ = Clock::now();
}

MpiPointToPoint::~MpiPointToPoint() {
  // The owner closes the transport before MPI goes away; by then no request
  // is left. Without close() (a failed start) the requests are abandoned.
}

void MpiPointToPoint::post_header_recv_locked() {
  const int rc = MPI_Irecv(header_buffer_.data(), static_cast<int>(header_buffer_.size()), MPI_BYTE,
                           MPI_ANY_SOURCE, kHeaderTag, comm_, &header_request_);
  if (rc != MPI_SUCCESS) {
    header_request_ = MPI_REQUEST_NULL;
    closed_ = true;
    closed_reason_ = mpi_status("MPI_Irecv of point-to-point headers", rc);
  }
}

int32_t MpiPointToPoint::next_data_tag_locked(int dest, int32_t chunks) {
  int32_t& next = next_tag_[static_cast<size_t>(dest)];
  if (static_cast<int64_t>(next) + chunks - 1 > tag_ub_) next = 1;
  const int32_t tag = next;
  next = static_cast<int32_t>(static_cast<int64_t>(next) + chunks > tag_ub_ ? 1 : next + chunks);
  return tag;
}

Status MpiPointToPoint::send(const std::string& name, const Tensor& tensor, int dest, Completion done) {
  if (p2p_header_bytes(name.size(), tensor.shape.size()) > kMaxHeaderBytes) {
    return Status::InvalidArgument("'" + name.substr(0, 64) + "...': a point-to-point name (" +
                                   std::to_string(name.size()) + " bytes) and shape (" +
                                   std::to_string(tensor.shape.size()) + " dimensions) must fit in " +
                                   std::to_string(kMaxHeaderBytes) + " bytes");
  }
  auto transfer = std::make_unique<Transfer>();
  transfer->info = TransferInfo{true, name, dest};
  transfer->tensor = tensor;
  transfer->done = std::move(done);
  P2PHeader header;
  header.name = name;
  header.dtype = tensor.dtype;
  header.shape = tensor.shape;
  header.bytes = tensor.bytes();
  header.packed = header.bytes <= options_.packed_limit;
  if (!header.packed) header.chunks = static_cast<int32_t>((header.bytes + kChunkBytes - 1) / kChunkBytes);

  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return closed_reason_;
  if (!header.packed) header.data_tag = next_data_tag_locked(dest, header.chunks);
  transfer->buffer = encode_p2p_header(header, tensor.data);
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Isend(transfer->buffer.data(), static_cast<int>(transfer->buffer.size()), MPI_BYTE, dest,
                     kHeaderTag, comm_, &request);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Isend of a point-to-point header", rc));
  transfer->requests.push_back(request);
  const char* data = static_cast<const char*>(tensor.data);
  for (int32_t i = 0; i < header.chunks; ++i) {
    const size_t offset = static_cast<size_t>(i) * kChunkBytes;
    const size_t bytes = std::min(kChunkBytes, header.bytes - offset);
    rc = MPI_Isend(data + offset, static_cast<int>(bytes), MPI_BYTE, dest, header.data_tag + i, comm_, &request);
    if (rc != MPI_SUCCESS) {
      // The header is out: the receiver waits for this data, and only a
      // dead job ends that. Fail loudly rather than leave it half sent.
      transfer->outcome = mpi_status("MPI_Isend of point-to-point data", rc);
      break;
    }
    transfer->requests.push_back(request);
  }
  active_.push_back(std::move(transfer));
  return Status::OK();
}

Status MpiPointToPoint::recv(const std::string& name, const Tensor& tensor, int source, Completion done) {
  auto transfer = std::make_unique<Transfer>();
  transfer->info = TransferInfo{false, name, source};
  transfer->tensor = tensor;
  transfer->done = std::move(done);
  Finished finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return closed_reason_;
    const Key key{source, name};
    auto it = arrived_.find(key);
    if (it == arrived_.end()) {
      waiting_[key].push_back(std::move(transfer));
    } else {
      Arrived arrived = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) arrived_.erase(it);
      match_locked(std::move(transfer), arrived.header, arrived.packed.data(), &finished);
    }
  }
  for (auto& [complete, status] : finished) complete(status);
  return Status::OK();
}

void MpiPointToPoint::match_locked(std::unique_ptr<Transfer> recv, const P2PHeader& header, const char* packed,
                                   Finished* finished) {
  const Tensor& into = recv->tensor;
  if (header.dtype != into.dtype || header.shape != into.shape) {
    const std::string from = std::to_string(recv->info.peer);
    const std::string me = std::to_string(rank_);
    finished->emplace_back(std::move(recv->done),
                           Status::Mismatch("receive of '" + header.name + "' on rank " + me + " from rank " + from +
                                            ": rank " + from + " sent " + sent_as(header.dtype, header.shape) +
                                            " but rank " + me + " expected " + sent_as(into.dtype, into.shape)));
    if (header.packed) return;
    // Consume the data all the same, so that later messages are unaffected.
    recv->done = nullptr;
    recv->buffer.resize(header.bytes);
    recv->tensor.data = recv->buffer.data();
  } else if (header.packed) {
    if (header.bytes > 0) std::memcpy(into.data, packed, header.bytes);
    finished->emplace_back(std::move(recv->done), Status::OK());
    return;
  }
  char* data = static_cast<char*>(recv->tensor.data);
  for (int32_t i = 0; i < header.chunks; ++i) {
    const size_t offset = static_cast<size_t>(i) * kChunkBytes;
    const size_t bytes = std::min(kChunkBytes, header.bytes - offset);
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = MPI_Irecv(data + offset, static_cast<int>(bytes), MPI_BYTE, recv->info.peer,
                             header.data_tag + i, comm_, &request);
    if (rc != MPI_SUCCESS) {
      recv->outcome = mpi_status("MPI_Irecv of point-to-point data", rc);
      break;
    }
    recv->requests.push_back(request);
  }
  active_.push_back(std::move(recv));
}

void MpiPointToPoint::on_header_locked(int source, size_t size, Finished* finished) {
  P2PHeader header;
  const char* packed = nullptr;
  const Status decoded = decode_p2p_header(header_buffer_.data(), size, &header, &packed);
  if (!decoded.ok()) {
    CHORUS_LOG(kError, "dropping a message from rank " << source << ": " << decoded.message());
    return;
  }
  const Key key{source, header.name};
  auto it = waiting_.find(key);
  if (it != waiting_.end()) {
    std::unique_ptr<Transfer> recv = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) waiting_.erase(it);
    match_locked(std::move(recv), header, packed, finished);
    return;
  }
  Arrived arrived;
  if (packed) arrived.packed.assign(packed, packed + header.bytes);
  arrived.header = std::move(header);
  arrived_[key].push_back(std::move(arrived));
}

void MpiPointToPoint::step_locked(Finished* finished) {
  while (header_request_ != MPI_REQUEST_NULL) {
    int arrived = 0;
    MPI_Status status;
    const int rc = MPI_Test(&header_request_, &arrived, &status);
    if (rc != MPI_SUCCESS) {
      fail_everything_locked(mpi_status("MPI_Test of point-to-point headers", rc), finished);
      return;
    }
    if (!arrived) break;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    on_header_locked(status.MPI_SOURCE, static_cast<size_t>(count), finished);
    post_header_recv_locked();
  }
  for (auto it = active_.begin(); it != active_.end();) {
    Transfer& transfer = **it;
    int done = 1;
    if (!transfer.requests.empty()) {
      const int rc = MPI_Testall(static_cast<int>(transfer.requests.size()), transfer.requests.data(), &done,
                                 MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS && transfer.outcome.ok()) {
        transfer.outcome = Status::Internal(describe(transfer.info) + " failed: " +
                                            mpi_status("MPI_Testall", rc).message());
        done = 1;
        for (MPI_Request& request : transfer.requests) cancel(&request);
      }
    }
    if (!done) {
      ++it;
      continue;
    }
    if (transfer.done) finished->emplace_back(std::move(transfer.done), transfer.outcome);
    it = active_.erase(it);
  }
  watch_peers_locked(finished);
}

void MpiPointToPoint::watch_peers_locked(Finished* finished) {
  if (local_peers_.empty() || (active_.empty() && waiting_.empty())) return;
  const auto now = Clock::now();
  if (now < next_watch_) return;
  next_watch_ = now + LocalPeers::kInterval;
  std::set<int> involved;
  for (const auto& transfer : active_) involved.insert(transfer->info.peer);
  for (const auto& [key, queue] : waiting_) involved.insert(key.first);
  for (int peer : involved) {
    auto it = local_peers_.find(peer);
    if (it == local_peers_.end()) continue;
    const std::optional<LocalPeer> dead = LocalPeers(rank_, {it->second}).first_dead();
    if (!dead) continue;
    const std::string exited = "rank " + std::to_string(peer) + " (pid " + std::to_string(dead->pid) +
                               ") exited while rank " + std::to_string(rank_) + " had a ";
    fail_locked(peer, [&](const TransferInfo& info) { return Status::Aborted(exited + describe(info) + " in flight"); },
                finished);
  }
}

void MpiPointToPoint::fail_locked(int peer, const ErrorFor& error_for, Finished* finished) {
  for (auto it = active_.begin(); it != active_.end();) {
    Transfer& transfer = **it;
    if (peer >= 0 && transfer.info.peer != peer) {
      ++it;
      continue;
    }
    for (MPI_Request& request : transfer.requests) cancel(&request);
    if (transfer.done) finished->emplace_back(std::move(transfer.done), error_for(transfer.info));
    it = active_.erase(it);
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (peer >= 0 && it->first.first != peer) {
      ++it;
      continue;
    }
    for (auto& transfer : it->second) finished->emplace_back(std::move(transfer->done), error_for(transfer->info));
    it = waiting_.erase(it);
  }
  for (auto it = arrived_.begin(); it != arrived_.end();) {
    it = (peer < 0 || it->first.first == peer) ? arrived_.erase(it) : std::next(it);
  }
}

void MpiPointToPoint::fail_everything_locked(const Status& status, Finished* finished) {
  CHORUS_LOG(kError, "point-to-point stops: " << status.message());
  closed_ = true;
  closed_reason_ = status;
  fail_locked(-1, [&](const TransferInfo& info) { return Status::Internal(describe(info) + ": " + status.message()); },
              finished);
  if (header_request_ != MPI_REQUEST_NULL) cancel(&header_request_);
}

void MpiPointToPoint::progress() {
  Finished finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) step_locked(&finished);
  }
  for (auto& [complete, status] : finished) complete(status);
}

void MpiPointToPoint::poll() { progress(); }

void MpiPointToPoint::drive(const std::function<bool()>& finished, std::optional<Clock::time_point> deadline) {
  const auto start = Clock::now();
  const auto busy_until = start + options_.busy;
  const auto spin_until = start + options_.wait.spin;
  auto sleep = options_.wait.first_sleep;
  while (true) {
    progress();
    if (finished()) return;
    const auto now = Clock::now();
    if (deadline && now >= *deadline) return;
    if (now < busy_until) continue;
    if (now < spin_until) {
      sched_yield();
      continue;
    }
    auto nap = std::chrono::duration_cast<Clock::duration>(sleep);
    if (deadline) nap = std::min(nap, *deadline - now);
    std::this_thread::sleep_for(nap);
    sleep = std::min(sleep * 2, options_.wait.max_sleep);
  }
}

void MpiPointToPoint::close(const ErrorFor& error_for) {
  Finished finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    // What has arrived is delivered first: a peer's last sends before it
    // shut down are not lost to its shutdown.
    step_locked(&finished);
    closed_ = true;
    closed_reason_ = Status::Shutdown("Chorus has stopped: point-to-point is closed");
    fail_locked(-1, error_for, &finished);
    if (header_request_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&header_request_);
      MPI_Wait(&header_request_, MPI_STATUS_IGNORE);
    }
  }
  for (auto& [complete, status] : finished) complete(status);
}

}  // namespace chorus
