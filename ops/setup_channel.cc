#include "ops/setup_channel.h"

#include <vector>

namespace chorus {

Status gather_failed_ranks(SetupChannel& channel, const Status& mine, std::vector<int>* failed) {
  const char ok = mine.ok() ? 1 : 0;
  std::vector<char> all(static_cast<size_t>(channel.size()), 0);
  CHORUS_RETURN_IF_ERROR(channel.allgather(&ok, 1, all.data()));
  failed->clear();
  for (int r = 0; r < channel.size(); ++r) {
    if (all[static_cast<size_t>(r)] == 0) failed->push_back(r);
  }
  return Status::OK();
}

std::string rank_list_text(const std::vector<int>& ranks) {
  std::string text;
  for (const int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

Status agree_on_setup(SetupChannel& channel, const Status& mine, const std::string& step,
                      const std::string& subject) {
  std::vector<int> failed;
  CHORUS_RETURN_IF_ERROR(gather_failed_ranks(channel, mine, &failed));
  if (!mine.ok()) return mine;
  if (failed.empty()) return Status::OK();
  return Status::Aborted(subject + " could not be set up: " + step + " failed on rank(s) [" + rank_list_text(failed) +
                         "] (their own error says why), so rank " + std::to_string(channel.rank()) +
                         " does not use it either");
}

}  // namespace chorus
