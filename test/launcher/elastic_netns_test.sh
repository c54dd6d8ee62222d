#!/usr/bin/env bash
# chorusrun --elastic across three "hosts" (network namespaces joined by a
# bridge, test/support/netns_hosts.sh), one rank on each, chorusrun in
# the first:
#   1. train_mnist --elastic on 3 hosts; every process of the third host is
#      killed mid-epoch (and the discovery script stops listing it, as a real
#      one would): chorusrun names the host, restarts on the other 2 from the
#      last commit; the host is listed again: the job grows back to 3 at its
#      next commit; it finishes with test accuracy >= 0.93 (an undisturbed
#      run reaches ~0.94). Measured from this run's own timestamps: start-up
#      time, commit interval, time from the kill to training again.
#   2. --min-np 3: the third host's rank crashing stops the job with the
#      --min-np message.
#   3. a rank that exits with an error of its own is not restarted.
# After each: no process left in any namespace.
#   elastic_netns_test.sh CHORUSRUN TRAIN_MNIST LAUNCHER_TEST_PROGRAM DATA_DIR [REPORT_FILE [JSON_FILE]]
# REPORT_FILE gets the timings as text, JSON_FILE as JSON (the
# elastic_recovery piece of scripts/bench_report.sh --only elastic).
set -uo pipefail

chorusrun=$1 train_mnist=$2 program=$3 data_dir=$4 report=${5:-} json=${6:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../support/netns_hosts.sh
source "$here/../support/netns_hosts.sh"
# shellcheck source=../support/elastic_commits.sh
source "$here/../support/elastic_commits.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

netns_hosts_up 3
work=$netns_work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include OMPI_MCA_btl

# The discovery script prints the hosts file, which the test edits.
printf '10.200.0.1:1\n10.200.0.2:1\n10.200.0.3:1\n' >"$work/hosts"
printf '#!/bin/sh\ncat %s\n' "$work/hosts" >"$work/discover.sh"
chmod +x "$work/discover.sh"

# chorusrun ARGS... in the first host, each output line prefixed with the
# time it arrived (seconds since the epoch).
elastic_run() {
  netns_chorusrun "$chorusrun" --elastic "$@" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done
}

# Waits up to $2 seconds for a line matching regex $1 in $log; prints its time.
wait_for_line() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if grep -qE -- "$1" "$log"; then
      grep -E -- "$1" "$log" | head -n 1 | cut -d' ' -f1
      return 0
    fi
    sleep 0.1
  done
  return 1
}

no_leftovers() { netns_wait_empty || fail "$1: processes left behind: $(netns_ps)"; }

# 1. Shrink to 2 hosts, grow back to 3, finish.
NETNS_DEADLINE=240
log=$work/train.log
# Enough epochs that the job is still training when the killed host may join
# again (2 s cooldown + 1 s polling + the next commit after the restart): on
# a quiet machine an epoch of the 8,000-sample set takes ~0.12 s on 2 ranks,
# and with 6 epochs the job could finish on 2 ranks first.
epochs=40
start=$(date +%s.%N)
elastic_run --min-np 2 --max-np 3 --host-discovery-script "$work/discover.sh" --discovery-interval 1 \
  --host-cooldown 2 -- "$train_mnist" --elastic --commit-every 8 --elastic-dir "$work/commits" --epochs "$epochs" \
  --data-dir "$data_dir" --progress epochs --summary-json "$work/summary.json" >"$log" &
job=$!
started=$(wait_for_line 'elastic: no commit yet' 120) || fail "training never started"
# Mid-epoch 2: once its second commit (id 7: 5 in epoch 1 then its end's)
# is complete on the first host.
wait_for_commit 7 60 "$work/commits/*/$netns_name1" || fail "commit 7 (or a later one) never appeared"
sed -i '/10.200.0.3/d' "$work/hosts"
killed=$(date +%s.%N)
# Every process of the third host, until none is left.
netns_signal_host 3 KILL
resumed=$(wait_for_line 'resumed from commit .* now on 2 ranks' 120) || fail "training never resumed on 2 ranks"
printf '10.200.0.3:1\n' >>"$work/hosts"
regrown=$(wait_for_line 'resumed from commit .* now on 3 ranks' 120) || fail "the third host never joined again"
wait $job
rc=$?
cat "$log"
[[ $rc -eq 0 ]] || fail "elastic training: chorusrun exited $rc"
grep -q 'chorusrun: elastic: host(s) 10.200.0.3 failed; left out for 2 s; restart 1 of at most 5' "$log" ||
  fail "chorusrun did not name the failed host"
grep -q 'chorusrun: elastic: the ranks stopped at a commit to move onto the hosts now available' "$log" ||
  fail "the ranks never stopped at a commit to grow"
[[ -f $work/summary.json ]] || fail "no summary written (the job did not finish)"
python3 - "$work/summary.json" "$epochs" <<'PY' || fail "summary check"
import json, sys
s = json.load(open(sys.argv[1]))
print("final: world size %d, epochs %d, test accuracy %.4f" % (s["world_size"], s["epochs_run"], s["final_test_accuracy"]))
assert s["epochs_run"] == int(sys.argv[2]), "expected %s epochs" % sys.argv[2]
assert s["world_size"] == 3, "expected the last attempt on 3 ranks"
assert s["final_test_accuracy"] >= 0.93, "test accuracy %.4f < 0.93" % s["final_test_accuracy"]
d = s["parameter_digests"]
assert len(set(d)) == 1, "ranks ended with different parameters: %s" % d
PY
no_leftovers "elastic training"

if [[ -n ${started:-} && -n ${resumed:-} && -f $work/summary.json ]]; then
  detected=$(grep -E 'chorusrun: elastic: host\(s\) 10.200.0.3 failed' "$log" | head -n 1 | cut -d' ' -f1)
  step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mean_step_seconds"])' "$work/summary.json")
  python3 - "$start" "$started" "$killed" "${detected:-$killed}" "$resumed" "${regrown:-0}" "$step" \
    "$work/summary.json" "$json" <<'PY' | tee -a "${report:-/dev/null}"
import json, os, sys
start, started, killed, detected, resumed, regrown, step = map(float, sys.argv[1:8])
summary_path, json_path = sys.argv[8:10]
if json_path:
    summary = json.load(open(summary_path))
    doc = {"benchmark": "elastic_recovery", "hosts": 3, "ranks_per_host": 1, "model": "mlp",
           "commit_every": 8, "mean_step_seconds": step, "cores": os.cpu_count(),
           "startup_seconds": started - start, "commit_interval_seconds": 8 * step,
           "failure_to_named_seconds": detected - killed, "failure_to_training_seconds": resumed - killed,
           "regrow_seconds": regrown - resumed if regrown > 0 else None,
           "host_cooldown_seconds": 2, "discovery_interval_seconds": 1,
           "final_world_size": summary["world_size"], "final_test_accuracy": summary["final_test_accuracy"]}
    with open(json_path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(json_path + ".tmp", json_path)
print("elastic netns run (3 hosts x 1 rank, train_mnist MLP, --commit-every 8):")
print("  start-up (chorusrun start -> training): %.2f s" % (started - start))
print("  commit interval: 8 steps x %.4f s = %.3f s" % (step, 8 * step))
print("  host killed -> chorusrun names it: %.2f s" % (detected - killed))
print("  host killed -> training again on 2 ranks: %.2f s" % (resumed - killed))
if regrown > 0:
    print("  host listed again -> training on 3 ranks: %.2f s (incl. cooldown and next commit)" % (regrown - resumed))
PY
fi

# 2. Below --min-np: the job stops and says so.
NETNS_DEADLINE=90
log=$work/min.log
mkdir -p "$work/ready"
elastic_run --min-np 3 -H 10.200.0.1:1,10.200.0.2:1,10.200.0.3:1 -- "$program" wait "$work/ready" >"$log" &
job=$!
for i in $(seq 600); do
  [[ $(ls "$work/ready" | wc -l) -eq 3 ]] && break
  sleep 0.1
done
# The whole third host is lost as soon as its rank is ready, in the job's
# first seconds: its orted's parent-death signal can reach the rank wrapper
# before the wrapper's getppid() changes, which chorusrun once took for the
# program failing by itself (launcher_rank_wrapper tests the wrapper alone).
netns_signal_host 3 KILL
wait $job
rc=$?
cat "$log"
[[ $rc -ne 0 && $rc -ne 124 && $rc -ne 137 ]] || fail "min-np run: chorusrun exited $rc"
grep -q 'chorusrun: elastic: the job fell below --min-np 3: 2 slot(s) available (failed hosts left out: 10.200.0.3); stopping' "$log" ||
  fail "no --min-np message"
[[ $(grep -c 'chorusrun: elastic: attempt' "$log") -eq 1 ]] || fail "min-np run: expected a single attempt"
no_leftovers "min-np run"

# 3. The program's own error: reported, not restarted.
log=$work/error.log
elastic_run --min-np 1 -H 10.200.0.1:1,10.200.0.2:1,10.200.0.3:1 -- "$program" exit 2 3 >"$log"
rc=$?
cat "$log"
[[ $rc -eq 3 ]] || fail "error run: chorusrun exited $rc, expected 3"
grep -q 'chorusrun: rank 2 (on .*) exited with code 3' "$log" || fail "error run: the failed rank is not named"
grep -q 'chorusrun: elastic: not restarting: the program failed by itself' "$log" || fail "error run: no 'not restarting' line"
[[ $(grep -c 'chorusrun: elastic: attempt' "$log") -eq 1 ]] || fail "error run: expected a single attempt"
no_leftovers "error run"

if [[ $failed -ne 0 ]]; then echo "elastic_netns_test: FAILED"; exit 1; fi
echo "elastic_netns_test: passed"
