#include "chorus/tune/group_member.h"

#include <vector>

#include "chorus/chorus.h"
#include "chorus/tune/group_messages.h"

namespace chorus {
namespace tune {

JobReport agree_on_report(const JobReport& mine, const ProcessSet& set) {
  if (process_set_size(set) == 1) return mine;
  double failed = mine.failed ? 1 : 0;
  AllreduceOptions any;
  any.op = ReduceOp::kMax;
  any.process_set = set;
  allreduce("tune:failed", Tensor(&failed, DataType::kFloat64, {1}), any);
  JobReport agreed = mine;
  if (failed == 0) return agreed;

  // Somebody failed: every member learns every member's error (empty for
  // those that succeeded), so the log says which ranks failed and how.
  std::string error = mine.failed ? mine.error : std::string();
  int64_t length = static_cast<int64_t>(error.size());
  Handle lengths = allgather("tune:error.length", Tensor(&length, DataType::kInt64, {1}), nullptr, set);
  static char empty_byte = 0;
  Handle texts = allgather("tune:error.text",
                           Tensor(error.empty() ? &empty_byte : &error[0], DataType::kUInt8, {length}),
                           nullptr, set);
  const Tensor all_lengths = lengths.output();
  const Tensor all_texts = texts.output();
  const auto* len = static_cast<const int64_t*>(all_lengths.data);
  const auto* bytes = static_cast<const char*>(all_texts.data);
  const std::vector<int> ranks = process_set_ranks(set);
  std::string combined;
  int64_t offset = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (len[i] > 0) {
      if (!combined.empty()) combined += "; ";
      combined += "rank " + std::to_string(ranks[i]) + ": " + std::string(bytes + offset, static_cast<size_t>(len[i]));
    }
    offset += len[i];
  }
  agreed.failed = true;
  agreed.metric = 0;
  agreed.error = combined;
  return agreed;
}

void serve_group(const GroupLayout& layout, const ProcessSet& set, const TrialFunction& fn,
                 const SearchSpace& space, uint64_t seed, ProcessSetGroups* mailbox) {
  const int me = rank();
  const int group = layout.group_of(me);
  const int leader = layout.leader(group);
  while (true) {
    std::string text;
    if (me == leader) text = mailbox ? encode_job(mailbox->take_local_job()) : recv_text(kJobMessage, 0);
    if (layout.ranks_per_trial > 1) text = broadcast_text(kJobMessage, text, leader, set);
    const Job job = decode_job(text);
    if (job.kind == JobKind::kDone) return;
    if (!job.runs())
      throw Error(Status::Internal("group " + std::to_string(group) + " got a job of kind '" +
                                   job_kind_name(job.kind) + "', which does not run"));
    const TrialJob trial_job{job, space.sample(seed, job.trial)};
    const JobReport report = agree_on_report(run_trial_job(fn, trial_job, group, set), set);
    if (me != leader) continue;
    if (mailbox)
      mailbox->put_local_report(report);
    else
      send_text(kReportMessage, encode_report(report), 0);
  }
}

}  // namespace tune
}  // namespace chorus
