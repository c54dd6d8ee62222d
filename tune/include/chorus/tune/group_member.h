// A rank's part in its group (docs/TUNE.md, "Groups over process sets"):
// every rank of the job runs serve_group until rank 0 says the search is
// done. The group's leader (its first rank) receives each job from rank 0,
// the group shares it (a broadcast on the group's set), every member runs
// the trial function with the group's set, the members agree on the outcome
// (failed on any rank: failed for the group), and the leader reports it.
//
// A member whose trial throws fails the group's set (fail_process_set), so
// members waiting for it in one of the trial's collectives get the failure
// instead of waiting for ever; the group's report is then failed with the
// failing rank and its reason and has set_failed, and the group waits for a
// "regroup" job, on which every rank of the job replaces the failed sets.
#pragma once

#include <cstdint>
#include <vector>

#include "chorus/process_set.h"
#include "chorus/tune/process_set_groups.h"
#include "chorus/tune/search_space.h"
#include "chorus/tune/trial.h"

namespace chorus {
namespace tune {

// Collective over `set` (every member calls it after the trial): the
// group's report as its leader sends it. Failed when any member's job
// failed; the error names each failing rank ("rank 3: the trial threw: x")
// in a group of more than one rank. When the set failed (before or during
// the agreement), the report is failed with the failing member's rank and
// reason and has set_failed. The metric and units are the leader's.
JobReport agree_on_report(const JobReport& mine, const ProcessSet& set);

// Runs this rank's group until a "done" job. `sets` holds every group's
// set, the same on every rank; a "regroup" job replaces the failed ones in
// it (collective over the job). `mailbox` is the driver's ProcessSetGroups
// on rank 0 (group 0's jobs and reports pass through it) and null on every
// other rank. Throws chorus::Error when the transport or the runtime fails
// (never for a failing trial).
void serve_group(const GroupLayout& layout, std::vector<ProcessSet>* sets, const TrialFunction& fn,
                 const SearchSpace& space, uint64_t seed, ProcessSetGroups* mailbox);

}  // namespace tune
}  // namespace chorus
