#!/usr/bin/env bash
# A Python program under chorusrun --elastic, across three "hosts" (network
# namespaces, test/support/netns_hosts.sh), one rank on each, as
# test/launcher/elastic_netns_test.sh and elastic_netns_frozen_test.sh run
# the C++ train_mnist: examples/python/elastic_train.py (hvd.elastic.run,
# TorchState with model, DistributedOptimizer, ElasticSampler and counters)
# on 3 hosts; after commit 7 the third host is
#   kill    killed (every process): chorusrun names the host and restarts on
#           the other 2, which resume from the newest commit; the host is
#           listed again and the job grows back to 3 at its next commit (the
#           ranks exit 75 there); it finishes;
#   freeze  frozen (SIGSTOP of every process, its orted included; static -H
#           hosts, heartbeat timeout 3 s): the survivors' heartbeat fails
#           their pending collective with HorovodInternalError naming rank 2,
#           which ends them out of hvd.elastic.run; their reports make
#           chorusrun blame that host alone and go on with 2 from the last
#           commit; it finishes on 2.
# Checked against independent references:
#   - each resumed attempt starts at the step of the commit it names
#     (commit c is written after step (c + 1) x commit-every);
#   - the final parameters and loss equal a single-process plain-PyTorch run
#     of the same problem (elastic_reference.py), so nothing of the state was
#     lost, repeated or mixed up across the restarts;
#   - the reset callback ran after each restart with the new size;
#   - no process is left on the live hosts (and, frozen, none but the
#     stopped ones on the third, which end by themselves once resumed).
#   elastic_netns_test.sh CHORUSRUN PYTHON PACKAGE_DIR [kill|freeze]
set -uo pipefail

chorusrun=$1 python=$2 package_dir=$3 mode=${4:-kill}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../../support/netns_hosts.sh
source "$root/test/support/netns_hosts.sh"
# shellcheck source=../../support/elastic_commits.sh
source "$root/test/support/elastic_commits.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[[ $mode == kill || $mode == freeze ]] || { echo "elastic_netns_test: unknown mode '$mode'" >&2; exit 2; }

netns_hosts_up 3
work=$netns_work
# A frozen host is resumed (then its processes must end) only in the cleanup.
frozen_cleanup() {
  local pids
  pids=$(ip netns pids "$netns_h3" 2>/dev/null)
  [[ -n $pids ]] && kill -CONT $pids 2>/dev/null
  netns_hosts_down
}
trap frozen_cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include OMPI_MCA_btl
export PYTHONPATH=$package_dir OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1 CHORUS_ELASTIC_DIR=$work/commits

printf '10.200.0.1:1\n10.200.0.2:1\n10.200.0.3:1\n' >"$work/hosts"
printf '#!/bin/sh\ncat %s\n' "$work/hosts" >"$work/discover.sh"
chmod +x "$work/discover.sh"

log=$work/train.log
wait_for_line() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    grep -qE -- "$1" "$log" && return 0
    sleep 0.1
  done
  return 1
}

commit_every=10
# 8 epochs of 100 steps, 20 ms each at least: the job still trains when the
# killed host may join again (2 s cooldown + 1 s polling + the next commit).
options=(--epochs 8 --samples 1200 --global-batch 12 --commit-every $commit_every --step-delay 0.02)
if [[ $mode == kill ]]; then
  hosts=(--min-np 2 --max-np 3 --host-discovery-script "$work/discover.sh" --discovery-interval 1 --host-cooldown 2)
else
  hosts=(--min-np 2 -H 10.200.0.1:1,10.200.0.2:1,10.200.0.3:1 --heartbeat-timeout-seconds 3)
fi
NETNS_DEADLINE=240
netns_chorusrun "$chorusrun" --elastic "${hosts[@]}" -- "$python" "$root/examples/python/elastic_train.py" \
  "${options[@]}" --summary-json "$work/summary.json" >"$log" 2>&1 &
job=$!
wait_for_line 'no commit yet, starting on 3 ranks' 120 || fail "training never started on 3 ranks"
wait_for_commit 7 60 "$work/commits/*/$netns_name1" || fail "commit 7 (or a later one) never appeared"
if [[ $mode == kill ]]; then
  sed -i '/10.200.0.3/d' "$work/hosts"
  netns_signal_host 3 KILL
  wait_for_line 'resumed from commit .* now on 2 ranks' 120 || fail "training never resumed on 2 ranks"
  printf '10.200.0.3:1\n' >>"$work/hosts"
  wait_for_line 'resumed from commit .* now on 3 ranks' 120 || fail "the third host never joined again"
else
  netns_signal_host 3 STOP
  frozen=$(ip netns pids "$netns_h3" | sort -n | tr '\n' ' ')
  wait_for_line 'resumed from commit .* now on 2 ranks' 120 || fail "training never resumed on 2 ranks"
fi
wait $job
rc=$?
cat "$log"
[[ $rc -eq 0 ]] || fail "chorusrun exited $rc"
if [[ $mode == kill ]]; then
  grep -q 'chorusrun: elastic: host(s) 10.200.0.3 failed; left out for 2 s; restart 1 of at most 5' "$log" ||
    fail "chorusrun did not name the failed host"
  grep -q 'chorusrun: elastic: the ranks stopped at a commit to move onto the hosts now available' "$log" ||
    fail "the ranks never stopped at a commit to grow"
  grep -q 'elastic: reset: 3 ranks, 4 samples each per step' "$log" || fail "no reset callback on 3 ranks"
  final_size=3 min_restarts=2
else
  grep -q 'chorusrun: elastic: host(s) 10.200.0.3 failed; left out for the rest of the job; restart 1 of at most 5' \
    "$log" || fail "chorusrun did not blame the frozen host alone"
  grep -qE 'chorusrun: elastic: rank [01] reported rank 2 \(host [^)]*\) lost' "$log" ||
    fail "no survivor's lost report for rank 2"
  # The survivors' Python saw it: HorovodInternalError out of hvd.elastic.run
  # ("Chorus stopped while <op> was pending: ..." or, for an op submitted
  # after the loss, "Chorus stopped: ...").
  grep -qE "ChorusError: Chorus stopped.*: rank 2 \(host $netns_name3, pid [0-9]+\) stopped answering" "$log" ||
    fail "no survivor raised HorovodInternalError naming rank 2"
  final_size=2 min_restarts=1
fi
grep -q 'elastic: reset: 2 ranks, 6 samples each per step' "$log" || fail "no reset callback on 2 ranks"
# Each resumed attempt starts at its commit's step.
resumed=$(grep -oE 'resumed from commit [0-9]+ at epoch [0-9]+ step [0-9]+' "$log")
[[ $(grep -c . <<<"$resumed") -ge $min_restarts ]] || fail "expected $min_restarts resumed attempt(s), got: $resumed"
while read -r _ _ _ commit _ _ _ _ step; do
  [[ -z ${commit:-} ]] && continue
  [[ $step -eq $(((commit + 1) * commit_every)) ]] ||
    fail "resumed from commit $commit at step $step; expected step $(((commit + 1) * commit_every))"
done <<<"$resumed"
if [[ -f $work/summary.json ]]; then
  "$python" "$here/elastic_reference.py" "$work/summary.json" "${options[@]}" || fail "the reference check"
  "$python" - "$work/summary.json" "$final_size" "$min_restarts" <<'PY' || fail "summary check"
import json, sys
s = json.load(open(sys.argv[1]))
size, restarts = int(sys.argv[2]), int(sys.argv[3])
assert s["world_size"] == size, "expected the last attempt on %d ranks, got %d" % (size, s["world_size"])
assert s["restarts"] >= restarts, "expected at least %d restarts, got %d" % (restarts, s["restarts"])
PY
else
  fail "no summary written (the job did not finish)"
fi
if [[ $mode == kill ]]; then
  netns_wait_empty || fail "processes left behind: $(netns_ps)"
else
  live=$( (ip netns pids "$netns_h1"; ip netns pids "$netns_h2") | tr '\n' ' ')
  [[ -z ${live// /} ]] || fail "processes left on the live hosts: $(ps -o pid=,stat=,args= -p "${live// /,}" 2>/dev/null)"
  left=$(ip netns pids "$netns_h3" | sort -n | tr '\n' ' ')
  for pid in $left; do
    [[ " $frozen " == *" $pid "* ]] || fail "a process the test did not stop runs on the frozen host: $(ps -o pid=,args= -p "$pid")"
  done
  # The host comes back: what was left there must end by itself.
  if [[ -n ${left// /} ]]; then
    kill -CONT $left 2>/dev/null
    for i in $(seq 100); do
      [[ -z $(ip netns pids "$netns_h3") ]] && break
      sleep 0.1
    done
    left=$(ip netns pids "$netns_h3" | tr '\n' ' ')
    [[ -z ${left// /} ]] || fail "resumed host: processes still there after 10 s: $(ps -o pid=,args= -p "${left// /,}" 2>/dev/null)"
  fi
fi

if [[ $failed -ne 0 ]]; then echo "python elastic_netns_test $mode: FAILED"; exit 1; fi
echo "python elastic_netns_test $mode: passed"
