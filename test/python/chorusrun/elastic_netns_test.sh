#!/usr/bin/env bash
# A Python program under chorusrun --elastic, across three "hosts" (network
# namespaces, test/hierarchical/netns_hosts.sh), one rank on each, as
# test/launcher/elastic_netns_test.sh runs the C++ train_mnist:
# examples/python/elastic_train.py (hvd.elastic.run, TorchState with model,
# DistributedOptimizer, ElasticSampler and counters) on 3 hosts; every
# process of the third host is killed after commit 7; chorusrun names the
# host and restarts on the other 2, which resume from the newest commit; the
# host is listed again and the job grows back to 3 at its next commit (the
# ranks exit 75 there); it finishes. Checked against independent references:
#   - each resumed attempt starts at the step of the commit it names
#     (commit c is written after step (c + 1) x commit-every);
#   - the final parameters and loss equal a single-process plain-PyTorch run
#     of the same problem (elastic_reference.py), so nothing of the state was
#     lost, repeated or mixed up across the restarts;
#   - the reset callback ran after each restart with the new size;
#   - no process is left in any namespace.
#   elastic_netns_test.sh CHORUSRUN PYTHON PACKAGE_DIR
set -uo pipefail

chorusrun=$1 python=$2 package_dir=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=../../hierarchical/netns_hosts.sh
source "$root/test/hierarchical/netns_hosts.sh"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

netns_hosts_up 3
work=$netns_work
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
kill_host3() {
  local pids i
  for i in $(seq 40); do
    pids=$(ip netns pids "$netns_h3")
    [[ -z $pids ]] && return 0
    kill -9 $pids 2>/dev/null
    sleep 0.05
  done
}

commit_every=10
# 8 epochs of 100 steps, 20 ms each at least: the job still trains when the
# killed host may join again (2 s cooldown + 1 s polling + the next commit).
options=(--epochs 8 --samples 1200 --global-batch 12 --commit-every $commit_every --step-delay 0.02)
NETNS_DEADLINE=240
timeout -k 5 "$NETNS_DEADLINE" ip netns exec "$netns_h1" unshare -u sh -c 'hostname "$0"; exec "$@"' "$netns_name1" \
  "$chorusrun" --elastic --network-interface 10.200.0.0/24 --mpi-args "--mca plm_rsh_agent $work/rsh" \
  --min-np 2 --max-np 3 --host-discovery-script "$work/discover.sh" --discovery-interval 1 --host-cooldown 2 -- \
  "$python" "$root/examples/python/elastic_train.py" "${options[@]}" --summary-json "$work/summary.json" \
  >"$log" 2>&1 &
job=$!
wait_for_line 'no commit yet, starting on 3 ranks' 120 || fail "training never started on 3 ranks"
for i in $(seq 1200); do
  compgen -G "$work/commits/*/$netns_name1/commit-000000000007.ckpt" >/dev/null && break
  sleep 0.05
done
compgen -G "$work/commits/*/$netns_name1/commit-000000000007.ckpt" >/dev/null || fail "commit 7 never appeared"
sed -i '/10.200.0.3/d' "$work/hosts"
kill_host3
wait_for_line 'resumed from commit .* now on 2 ranks' 120 || fail "training never resumed on 2 ranks"
printf '10.200.0.3:1\n' >>"$work/hosts"
wait_for_line 'resumed from commit .* now on 3 ranks' 120 || fail "the third host never joined again"
wait $job
rc=$?
cat "$log"
[[ $rc -eq 0 ]] || fail "chorusrun exited $rc"
grep -q 'chorusrun: elastic: host(s) 10.200.0.3 failed; left out for 2 s; restart 1 of at most 5' "$log" ||
  fail "chorusrun did not name the failed host"
grep -q 'chorusrun: elastic: the ranks stopped at a commit to move onto the hosts now available' "$log" ||
  fail "the ranks never stopped at a commit to grow"
grep -q 'elastic: reset: 2 ranks, 6 samples each per step' "$log" || fail "no reset callback on 2 ranks"
grep -q 'elastic: reset: 3 ranks, 4 samples each per step' "$log" || fail "no reset callback on 3 ranks"
# Each resumed attempt starts at its commit's step.
resumed=$(grep -oE 'resumed from commit [0-9]+ at epoch [0-9]+ step [0-9]+' "$log")
[[ $(wc -l <<<"$resumed") -ge 2 ]] || fail "expected at least two resumed attempts, got: $resumed"
while read -r _ _ _ commit _ _ _ _ step; do
  [[ -z ${commit:-} ]] && continue
  [[ $step -eq $(((commit + 1) * commit_every)) ]] ||
    fail "resumed from commit $commit at step $step; expected step $(((commit + 1) * commit_every))"
done <<<"$resumed"
if [[ -f $work/summary.json ]]; then
  "$python" "$here/elastic_reference.py" "$work/summary.json" "${options[@]}" || fail "the reference check"
  "$python" - "$work/summary.json" <<'PY' || fail "summary check"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["world_size"] == 3, "expected the last attempt on 3 ranks, got %d" % s["world_size"]
assert s["restarts"] >= 2, "expected at least 2 restarts, got %d" % s["restarts"]
PY
else
  fail "no summary written (the job did not finish)"
fi
for i in $(seq 50); do
  pids=$(netns_pids)
  [[ -z ${pids// /} ]] && break
  sleep 0.1
done
[[ -z ${pids// /} ]] || fail "processes left behind: $(ps -o pid=,args= -p "${pids// /,}" 2>/dev/null)"

if [[ $failed -ne 0 ]]; then echo "python elastic_netns_test: FAILED"; exit 1; fi
echo "python elastic_netns_test: passed"
