#include "ops/setup_channel.h"

#include <vector>

namespace chorus {

Status agree_on_setup(SetupChannel& channel, const Status& mine, const std::string& step,
                      const std::string& subject) {
  const char ok = mine.ok() ? 1 : 0;
  std::vector<char> all(static_cast<size_t>(channel.size()), 0);
  CHORUS_RETURN_IF_ERROR(channel.allgather(&ok, 1, all.data()));
  if (!mine.ok()) return mine;
  std::string failed;
  for (int r = 0; r < channel.size(); ++r) {
    if (all[static_cast<size_t>(r)] == 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  }
  if (failed.empty()) return Status::OK();
  return Status::Aborted(subject + " could not be set up: " + step + " failed on rank(s) [" + failed +
                         "] (their own error says why), so rank " + std::to_string(channel.rank()) +
                         " does not use it either");
}

}  // namespace chorus
