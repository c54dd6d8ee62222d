#include "ops/shm/shm_group.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/process_liveness.h"

namespace chorus {
namespace {

constexpr size_t kHeaderBytes = 128;
constexpr uint64_t kMagic = 0x43484f5255534d31ull;  // "CHORUSM1"
constexpr size_t kNameBytes = 96;

struct Header {
  uint64_t magic;
  uint64_t token;
  int32_t ranks;
};
static_assert(sizeof(Header) <= kHeaderBytes, "header must fit its line");

// What rank 0 broadcasts: the segment's name (empty when it could not create
// one) and the token its header holds.
struct Announcement {
  char name[kNameBytes];
  uint64_t token;
};

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

Status ShmGroup::create(SetupChannel& channel, size_t data_bytes, std::chrono::milliseconds timeout,
                        std::unique_ptr<ShmGroup>* out, const std::string& name_tag) {
  std::unique_ptr<ShmGroup> group(new ShmGroup());
  group->rank_ = channel.rank();
  group->size_ = channel.size();
  const int rank = group->rank_;
  const size_t signal_bytes = ShmSignals::bytes(group->size_);
  const size_t total = kHeaderBytes + round_up(signal_bytes, 128) + round_up(data_bytes, 128);

  Announcement announcement{};
  Status mine;
  if (rank == 0) {
    remove_stale_segments();
    const std::string name = make_segment_name(name_tag);
    mine = ShmSegment::create(name, total, &group->segment_);
    if (mine.ok()) {
      std::random_device device;
      announcement.token = (static_cast<uint64_t>(device()) << 32) ^ device();
      auto* header = static_cast<Header*>(group->segment_->data());
      header->token = announcement.token;
      header->ranks = group->size_;
      header->magic = kMagic;
      std::snprintf(announcement.name, sizeof(announcement.name), "%s", name.c_str());
    }
  }
  CHORUS_RETURN_IF_ERROR(channel.broadcast(&announcement, sizeof(announcement), 0));
  const std::string name = announcement.name;
  if (rank != 0 && !name.empty()) {
    mine = ShmSegment::open(name, total, &group->segment_);
    if (mine.ok()) {
      const auto* header = static_cast<const Header*>(group->segment_->data());
      if (header->magic != kMagic || header->token != announcement.token || header->ranks != group->size_) {
        mine = Status::Internal("shared-memory segment '" + name + "' mapped by rank " + std::to_string(rank) +
                                " is not the one rank 0 created (different memory: another host or "
                                "mount namespace?)");
      }
    }
  }
  if (mine.ok() && name.empty()) mine = Status::Internal("rank 0 could not create the shared-memory segment");
  if (mine.ok()) {
    char* base = static_cast<char*>(group->segment_->data());
    group->signals_.emplace(base + kHeaderBytes, group->size_, rank, timeout);
    // Named by its rank in the job in error messages.
    group->signals_->set_my_identity(getpid(), channel.job_rank());
    group->data_ = base + kHeaderBytes + round_up(signal_bytes, 128);
    group->data_bytes_ = data_bytes;
  }
  const Status mapped = agree_on_setup(channel, mine, "mapping the segment");
  // Every rank has mapped it (or given up): the name is no longer needed.
  Status unlinked;
  if (rank == 0 && !name.empty()) unlinked = ShmSegment::unlink(name);
  CHORUS_RETURN_IF_ERROR(mapped);  // the same outcome on every rank
  CHORUS_RETURN_IF_ERROR(agree_on_setup(channel, unlinked, "unlinking the segment"));

  Status visible;
  for (int r = 0; r < group->size_ && visible.ok(); ++r) {
    const pid_t pid = group->signals_->pid_of(r);
    if (!process_alive(pid)) {
      visible = Status::Internal("rank " + std::to_string(rank) + " cannot see rank " + std::to_string(r) +
                                 "'s process (pid " + std::to_string(pid) +
                                 "): the ranks run in different pid namespaces, so a dead peer could not "
                                 "be detected");
    }
  }
  CHORUS_RETURN_IF_ERROR(agree_on_setup(channel, visible, "checking the peers' pids"));
  *out = std::move(group);
  return Status::OK();
}

}  // namespace chorus
