#!/usr/bin/env bash
# chorusrun --elastic across three network-namespace hosts (one rank each,
# chorusrun in the first) when a whole host FREEZES: every process of the
# third host, its orted included, is SIGSTOPped mid-epoch 2. No launcher sees
# that (TEST-CLUSTERS.md: mpirun hangs for ever on a stopped host); the
# runtime's heartbeat (3 s here) names the frozen rank on the survivors, which
# tell chorusrun (`lost` report) before they abort; chorusrun blames that
# host alone, ends the attempt and restarts on the 2 others from the last
# commit; the job finishes with test accuracy >= 0.93.
# Checked before the cleanup touches anything: chorusrun exited 0, no process
# of the job is left on the two live hosts, and what is left on the frozen
# host is only what was stopped there (nobody can end a stopped host's
# processes from outside it: its orted is stopped too); the cleanup trap then
# resumes it and checks that they end by themselves (the heartbeat's "this
# rank was declared lost", orted's lost mpirun) before killing anything.
#   elastic_netns_frozen_test.sh CHORUSRUN TRAIN_MNIST DATA_DIR [REPORT_FILE]
set -uo pipefail

chorusrun=$1 train_mnist=$2 data_dir=$3 report=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../support/netns_hosts.sh
source "$here/../support/netns_hosts.sh"
# shellcheck source=../support/elastic_commits.sh
source "$here/../support/elastic_commits.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

netns_hosts_up 3
work=$netns_work
# The frozen host is resumed (then killed) only here, in the cleanup.
frozen_cleanup() {
  local pids
  pids=$(ip netns pids "$netns_h3" 2>/dev/null)
  [[ -n $pids ]] && kill -CONT $pids 2>/dev/null
  netns_hosts_down
}
trap frozen_cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include OMPI_MCA_btl

log=$work/train.log
NETNS_DEADLINE=120
epochs=12
start=$(date +%s.%N)
netns_chorusrun "$chorusrun" --elastic --min-np 2 -H 10.200.0.1:1,10.200.0.2:1,10.200.0.3:1 \
  --heartbeat-timeout-seconds 3 -- \
  "$train_mnist" --elastic --commit-every 8 --elastic-dir "$work/commits" --epochs "$epochs" \
  --data-dir "$data_dir" --progress epochs --summary-json "$work/summary.json" 2>&1 |
  while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$log" &
job=$!

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

started=$(wait_for_line 'elastic: no commit yet' 60) || fail "training never started"
wait_for_commit 7 60 "$work/commits/*/$netns_name1" || fail "commit 7 (or a later one) never appeared"
frozen_at=$(date +%s.%N)
# Every process of the third host, until a listing finds nothing new.
netns_signal_host 3 STOP
frozen=$(ip netns pids "$netns_h3" | sort -n | tr '\n' ' ')
resumed=$(wait_for_line 'resumed from commit .* now on 2 ranks' 60) || fail "training never resumed on 2 ranks"
wait $job
rc=${PIPESTATUS[0]}
cat "$log"
grep -q 'chorusrun: elastic: host(s) 10.200.0.3 failed; left out for the rest of the job; restart 1 of at most 5' "$log" ||
  fail "chorusrun did not blame the frozen host alone"
grep -qE 'chorusrun: elastic: rank [01] reported rank 2 \(host [^)]*\) lost' "$log" ||
  fail "no survivor's lost report for rank 2"
[[ -f $work/summary.json ]] || fail "no summary written (the job did not finish; chorusrun's status $rc)"
python3 - "$work/summary.json" "$epochs" <<'PY' || fail "summary check"
import json, sys
s = json.load(open(sys.argv[1]))
print("final: world size %d, epochs %d, test accuracy %.4f" % (s["world_size"], s["epochs_run"], s["final_test_accuracy"]))
assert s["epochs_run"] == int(sys.argv[2]), "expected %s epochs" % sys.argv[2]
assert s["world_size"] == 2, "expected the last attempt on 2 ranks"
assert s["final_test_accuracy"] >= 0.93, "test accuracy %.4f < 0.93" % s["final_test_accuracy"]
PY

# Before any cleanup: nothing of the job on the live hosts, and on the frozen
# one nothing but what was stopped there.
left_live=$( (ip netns pids "$netns_h1"; ip netns pids "$netns_h2") | tr '\n' ' ')
[[ -z ${left_live// /} ]] || fail "processes left on the live hosts: $(ps -o pid=,stat=,args= -p "${left_live// /,}" 2>/dev/null)"
left_frozen=$(ip netns pids "$netns_h3" | sort -n | tr '\n' ' ')
for pid in $left_frozen; do
  [[ " $frozen " == *" $pid "* ]] || fail "a process the test did not stop runs on the frozen host: $(ps -o pid=,stat=,args= -p "$pid")"
done
echo "left on the frozen host (stopped): ${left_frozen:-none}"
# The host comes back: what was left there must end by itself.
if [[ -n ${left_frozen// /} ]]; then
  kill -CONT $left_frozen 2>/dev/null
  for i in $(seq 100); do
    [[ -z $(ip netns pids "$netns_h3") ]] && break
    sleep 0.1
  done
  left=$(ip netns pids "$netns_h3" | tr '\n' ' ')
  [[ -z ${left// /} ]] || fail "resumed host: processes still there after 10 s: $(ps -o pid=,stat=,args= -p "${left// /,}" 2>/dev/null)"
fi

if [[ -n ${started:-} && -n ${resumed:-} && -f $work/summary.json ]]; then
  detected=$(grep -E 'chorusrun: elastic: host\(s\) 10.200.0.3 failed' "$log" | head -n 1 | cut -d' ' -f1)
  step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mean_step_seconds"])' "$work/summary.json")
  python3 - "$start" "$started" "$frozen_at" "${detected:-$frozen_at}" "$resumed" "$step" <<'PY' | tee -a "${report:-/dev/null}"
import sys
start, started, frozen, detected, resumed, step = map(float, sys.argv[1:7])
print("elastic netns frozen host (3 hosts x 1 rank, heartbeat timeout 3 s, --commit-every 8):")
print("  start-up (chorusrun start -> training): %.2f s" % (started - start))
print("  commit interval: 8 steps x %.4f s = %.3f s" % (step, 8 * step))
print("  host frozen -> chorusrun blames it: %.2f s" % (detected - frozen))
print("  host frozen -> training again on 2 ranks: %.2f s" % (resumed - frozen))
PY
fi

if [[ $failed -ne 0 ]]; then echo "elastic_netns_frozen_test: FAILED"; exit 1; fi
echo "elastic_netns_frozen_test: passed"
