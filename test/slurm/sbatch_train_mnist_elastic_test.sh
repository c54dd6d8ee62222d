#!/usr/bin/env bash
# sbatch of the elastic example job script (examples/slurm/train_mnist_elastic.sbatch)
# on the suite's 2 virtual nodes x 2 tasks: chorusrun --elastic --min-np 2
# runs train_mnist --elastic with srun; mid-training every rank process of
# node n2 (its rank wrappers and train_mnist ranks) is SIGKILLed. Checks that
# chorusrun names n2 (the Slurm node name: both virtual nodes share one host
# name), restarts the step with `srun --nodes=1 --exclude=n2` on n1, that the
# ranks resume from a commit and finish every epoch on 2 ranks with the test
# accuracy of an undisturbed run (>= 0.93) and identical parameters, that the
# job completes, and that no process of the job is left. Measures from the
# arrival time of the job's output lines: start-up, failure -> named,
# failure -> training again, and the commit interval.
# With "node" as the fifth argument the whole node is lost instead: its
# slurmd and the step's slurmstepd are SIGKILLed with the ranks, so nothing
# of n2 reports; the survivors' heartbeat (5 s here) names it, chorusrun
# blames n2 alone from their `lost` reports, and the restart's step must
# share n1's CPUs with the dead step, which cannot complete (srun --overlap).
# n2's slurmd is started again afterwards, for the tests that follow.
#   sbatch_train_mnist_elastic_test.sh <example script> <build dir> <mnist dir> [report file] [ranks|node]
set -euo pipefail
# shellcheck source=../support/slurm_test_lib.sh
source "$(dirname "$0")/../support/slurm_test_lib.sh"
# shellcheck source=../support/elastic_commits.sh
source "$(dirname "$0")/../support/elastic_commits.sh"
slurm_test_begin sbatch_train_mnist_elastic
usage="usage: $0 SBATCH_SCRIPT BUILD_DIR MNIST_DIR [REPORT_FILE]"
script=${1:?$usage}
build_dir=${2:?$usage}
mnist_dir=${3:?$usage}
report=${4:-}
loss=${5:-ranks}
[[ $loss == ranks || $loss == node ]] || fail "the fifth argument is '$loss': expected ranks or node"
train_mnist=$build_dir/examples/train_mnist/train_mnist
chorusrun=$build_dir/launcher/chorusrun
[[ -x $train_mnist ]] || fail "train_mnist is not built in $build_dir"
[[ -x $chorusrun ]] || fail "chorusrun is not built in $build_dir"
[[ -r $mnist_dir/train-images-idx3-ubyte ]] || fail "no MNIST files in $mnist_dir (scripts/prepare_mnist.sh)"
job=chorus-sbatch-elastic
output=$work_dir/job.out
timed=$work_dir/timed.out
commits=$work_dir/commits
# An undisturbed 4-rank run reaches ~0.94 after 12 epochs of the 8,000-sample
# set; the restart costs at most one commit interval of repeated steps.
epochs=12
commit_every=8

# Every line of the job's output, prefixed with the time it arrived (seconds
# since the epoch); tail stops when the sleeper it watches is ended.
: >"$output"
sleep 600 &
sleeper=$!
tail --pid=$sleeper -s 0.05 -n +1 -F "$output" 2>/dev/null |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$timed" &
stop_stamping() { kill "$sleeper" 2>/dev/null || true; }
state_dir=$(dirname "$(dirname "$SLURM_CONF")")
# Starts n2's slurmd again when this test killed it, and waits until the node
# is back in service (ReturnToService=2 brings it back when it registers).
restore_n2() {
  [[ $loss == node ]] || return 0
  if [[ ! -r $state_dir/run/slurmd-n2.pid ]] || ! kill -0 "$(cat "$state_dir/run/slurmd-n2.pid")" 2>/dev/null; then
    slurmd -N n2 -f "$SLURM_CONF" || { echo "could not start slurmd -N n2 again" >&2; return 0; }
  fi
  for ((i = 0; i < 100; i++)); do
    [[ $(sinfo -h -n n2 -o %t 2>/dev/null) == idle ]] && return 0
    ((i == 20)) && scontrol update nodename=n2 state=resume 2>/dev/null
    sleep 0.2
  done
  echo "node n2 is not idle again: $(sinfo -h -n n2 -o %t 2>&1)" >&2
}
trap 'stop_stamping; restore_n2' EXIT

# wait_for_line REGEX SECONDS: prints the arrival time of the first line matching.
wait_for_line() {
  local i
  for ((i = 0; i < $2 * 20; i++)); do
    if grep -qE -- "$1" "$timed"; then
      grep -E -- "$1" "$timed" | head -n 1 | cut -d' ' -f1
      return 0
    fi
    sleep 0.05
  done
  return 1
}

# Pids of this job's chorusrun and train_mnist processes (exe and SLURM_JOB_ID),
# on node $1 when given.
job_pids() {
  local pid exe environ
  for pid in $(pids_running "$chorusrun") $(pids_running "$train_mnist"); do
    environ=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
    grep -qx "SLURM_JOB_ID=$job_id" <<<"$environ" || continue
    [[ -z ${1:-} ]] || grep -qx "SLURMD_NODENAME=$1" <<<"$environ" || continue
    echo "$pid"
  done
}

# Kills every rank process of node $1 until none is left (a process listed a
# moment ago may be gone, another may be forked after the listing).
kill_node_ranks() {
  local i pids killed=""
  for ((i = 0; i < 40; i++)); do
    pids=$(job_pids "$1")
    [[ -z $pids ]] && { echo "killed on $1: ${killed:-nothing}"; return 0; }
    kill -KILL $pids 2>/dev/null || true
    killed+=" $(echo $pids)"
    sleep 0.05
  done
  fail "processes of node $1 still running after 2 s of SIGKILLs: $(job_pids "$1")"
}

cd "$work_dir"
start=$(date +%s.%N)
heartbeat=30
[[ $loss == node ]] && heartbeat=5
CHORUS_HEARTBEAT_TIMEOUT_SECONDS=$heartbeat CHORUS_BUILD_DIR="$build_dir" MNIST_DIR="$mnist_dir" \
  CHORUSRUN_OPTIONS="--network-interface lo" CHORUS_MIN_NP=2 EPOCHS=$epochs COMMIT_EVERY=$commit_every \
  CHORUS_ELASTIC_DIR="$commits" submit_job "$job" "$output" --nodes=2 --ntasks-per-node=2 "$script"

end_job() {
  scancel "$job_id" 2>/dev/null || true
  sleep 1
  sed 's/^/  | /' "$output"
  fail "$*"
}
began=$(wait_for_line "^[0-9.]+ job $job_id on nodes" 30) || end_job "the job script did not start within 30 s"
started=$(wait_for_line 'elastic: no commit yet: starting from scratch on 4 ranks' 60) ||
  end_job "training did not start on 4 ranks"
# Mid-training: once both nodes hold their third commit (mid-epoch 1) or a later one.
wait_for_commit 3 30 "$commits/*/n1" "$commits/*/n2" ||
  end_job "commit 3 did not appear in both nodes' folders ($commits/<job>/n1, n2) within 30 s: $(find "$commits" 2>&1 | tr '\n' ' ')"
killed=$(date +%s.%N)
if [[ $loss == node ]]; then
  # The slurmstepd above n2's ranks, then slurmd, the step daemon and the ranks.
  ranks=$(job_pids n2)
  daemons=$(cat "$state_dir/run/slurmd-n2.pid")
  for pid in $ranks; do
    for ((up = 0; up < 4; up++)); do
      pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || break
      ((pid > 1)) || break
      if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q slurmstepd; then daemons+=" $pid"; break; fi
    done
  done
  echo "n2 lost: SIGKILL to slurmd and slurmstepd ($(echo $daemons | tr ' ' '\n' | sort -u | tr '\n' ' '))"
  kill -KILL $daemons 2>/dev/null || true
fi
kill_node_ranks n2
resumed=$(wait_for_line 'elastic: resumed from commit [0-9]+ .* now on 2 ranks' 60) ||
  end_job "training did not resume on 2 ranks within 60 s of the kill"

deadline=$((SECONDS + 120))
while [[ -n $(squeue -h -j "$job_id" -t pending,running,completing -o %t 2>/dev/null) ]]; do
  ((SECONDS < deadline)) || end_job "job $job_id did not end within 120 s of the restart (cancelled)"
  sleep 0.2
done
stop_stamping
sed 's/^/  | /' "$output"
expect_job_state_completed "$job_id"

expect_line "$output" '^chorusrun: elastic: attempt 0: 4 rank\(s\) on the Slurm allocation$' \
  "chorusrun did not start 4 ranks on the allocation"
expect_line "$output" '^chorusrun: elastic: host\(s\) n2 failed; left out for the rest of the job; restart 1 of at most 5$' \
  "chorusrun did not name the failed Slurm node n2"
expect_line "$output" '^chorusrun: elastic: attempt 1: 2 rank\(s\) on the Slurm allocation without n2$' \
  "chorusrun did not restart 2 ranks without n2"
[[ $(grep -c '^chorusrun: elastic: attempt' "$output") -eq 2 ]] || fail "expected exactly 2 attempts"
# The restarted ranks ran on n1 only, and resumed from a commit of the 4-rank run.
expect_line "$output" '^\[0\] elastic: resumed from commit ([3-9]|[1-9][0-9]+) .* written by 4 ranks, now on 2 ranks, restart 1' \
  "rank 0 did not resume from a commit of the first attempt"
summary=$work_dir/chorus-mnist-elastic-$job_id.json
[[ -r $summary ]] || fail "the job wrote no summary $summary"
python3 - "$summary" "$epochs" <<'PY' || fail "the summary $summary does not show a finished 2-rank run with accuracy >= 0.93"
import json, sys
s = json.load(open(sys.argv[1]))
print("summary: world size %d, epochs %d, test accuracy %.4f, digests %s"
      % (s["world_size"], s["epochs_run"], s["final_test_accuracy"], s["parameter_digests"]))
assert s["world_size"] == 2, "expected the last attempt on 2 ranks"
assert s["epochs_run"] == int(sys.argv[2]), "expected %s epochs" % sys.argv[2]
assert s["final_test_accuracy"] >= 0.93, "test accuracy %.4f < 0.93" % s["final_test_accuracy"]
assert len(set(s["parameter_digests"])) == 1, "ranks ended with different parameters"
PY
wait_until_gone 15 $job
for ((i = 0; i < 50; i++)); do
  left=$(job_pids)
  [[ -z $left ]] && break
  sleep 0.1
done
[[ -z $left ]] || fail "processes of job $job_id left: $(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)" 2>/dev/null)"

named=$(grep -E 'chorusrun: elastic: host\(s\) n2 failed' "$timed" | head -n 1 | cut -d' ' -f1)
step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mean_step_seconds"])' "$summary")
python3 - "$start" "$began" "$started" "$killed" "$named" "$resumed" "$step" "$commit_every" "$loss" "$heartbeat" <<'PY' |
import sys
start, began, started, killed, named, resumed, step, every = map(float, sys.argv[1:9])
lost = "node n2's ranks killed" if sys.argv[9] == "ranks" else \
    "node n2 lost (slurmd, slurmstepd, ranks; heartbeat %s s)" % sys.argv[10]
print("elastic Slurm run (sbatch -N2, 2 virtual nodes x 2 ranks, train_mnist MLP, --commit-every %d):" % every)
print("  sbatch -> job script running: %.2f s" % (began - start))
print("  start-up (job script -> training on 4 ranks): %.2f s" % (started - began))
print("  commit interval: %d steps x %.4f s = %.3f s" % (every, step, every * step))
print("  %s -> chorusrun names n2: %.2f s" % (lost, named - killed))
print("  %s -> training again on 2 ranks (n1): %.2f s" % (lost, resumed - killed))
PY
  tee -a "${report:-/dev/null}"
cd /
rm -rf "$work_dir"
echo "sbatch_train_mnist_elastic: PASS"
