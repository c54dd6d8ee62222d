#include "chorus/tune/group_member.h"

#include <vector>

#include "chorus/chorus.h"
#include "chorus/tune/group_messages.h"

namespace chorus {
namespace tune {

namespace {

// The members' exchange of outcomes over a set that has not failed.
JobReport agree_over_set(const JobReport& mine, const ProcessSet& set) {
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

// Collective over every rank of the job (a "regroup" job): the groups whose
// set failed, as their members say, get a new set each, in group order, so
// every rank adds and removes the same sets in the same order.
void replace_failed_sets(const GroupLayout& layout, std::vector<ProcessSet>* sets, bool mine_failed) {
  std::vector<double> failed(static_cast<size_t>(layout.groups), 0.0);
  if (mine_failed) failed[static_cast<size_t>(layout.group_of(rank()))] = 1;
  AllreduceOptions any;
  any.op = ReduceOp::kMax;
  allreduce("tune:regroup", Tensor(failed.data(), DataType::kFloat64, {layout.groups}), any);
  for (int g = 0; g < layout.groups; ++g) {
    if (failed[static_cast<size_t>(g)] == 0) continue;
    ProcessSet& set = (*sets)[static_cast<size_t>(g)];
    remove_process_set(set);
    set = add_process_set(layout.ranks(g));
  }
}

}  // namespace

JobReport agree_on_report(const JobReport& mine, const ProcessSet& set) {
  if (process_set_size(set) == 1) return mine;
  try {
    if (!process_set_failure(set)) return agree_over_set(mine, set);
  } catch (const Error&) {
    // A member failed the set while the others were agreeing (it threw
    // after they had finished the trial): its failure says who and why.
    if (!process_set_failure(set)) throw;
  }
  const ProcessSetFailure failure = *process_set_failure(set);
  JobReport agreed = mine;
  agreed.failed = true;
  agreed.set_failed = true;
  agreed.metric = 0;
  agreed.error = "rank " + std::to_string(failure.rank) + ": " + failure.reason;
  return agreed;
}

void serve_group(const GroupLayout& layout, std::vector<ProcessSet>* sets, const TrialFunction& fn,
                 const SearchSpace& space, uint64_t seed, ProcessSetGroups* mailbox) {
  const int me = rank();
  const int group = layout.group_of(me);
  const int leader = layout.leader(group);
  // This group's set failed and is not replaced yet: rank 0 sends the next
  // job (regroup or done) to every member, since the set cannot share it.
  bool set_failed = false;
  while (true) {
    const ProcessSet set = (*sets)[static_cast<size_t>(group)];
    std::string text;
    if (me == leader || set_failed) text = mailbox ? encode_job(mailbox->take_local_job()) : recv_text(kJobMessage, 0);
    if (layout.ranks_per_trial > 1 && !set_failed) text = broadcast_text(kJobMessage, text, leader, set);
    const Job job = decode_job(text);
    if (job.kind == JobKind::kDone) return;
    if (job.kind == JobKind::kRegroup) {
      replace_failed_sets(layout, sets, set_failed);
      set_failed = false;
      continue;
    }
    if (!job.runs())
      throw Error(Status::Internal("group " + std::to_string(group) + " got a job of kind '" +
                                   job_kind_name(job.kind) + "', which does not run"));
    const TrialJob trial_job{job, space.sample(seed, job.trial)};
    // A member whose trial throws may leave the others waiting in one of
    // the trial's collectives: it fails the set, which releases them.
    const auto fail_set = [&](const std::string& error) {
      if (layout.ranks_per_trial > 1) fail_process_set(set, error);
    };
    const JobReport report = agree_on_report(run_trial_job(fn, trial_job, group, set, fail_set), set);
    set_failed = report.set_failed;
    if (me != leader) continue;
    if (mailbox)
      mailbox->put_local_report(report);
    else
      send_text(kReportMessage, encode_report(report), 0);
  }
}

}  // namespace tune
}  // namespace chorus
