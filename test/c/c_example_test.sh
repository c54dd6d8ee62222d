#!/usr/bin/env bash
# Runs examples/c's c_collectives under mpirun and compares every rank's
# lines with those c_example_reference.py computes from the program's
# inputs alone.
#   c_example_test.sh <mpiexec> <c_collectives> <number of ranks>
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 <mpiexec> <c_collectives> <np>" >&2; exit 2; }
mpiexec=$1 program=$2 np=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3

output=$("$mpiexec" -np "$np" --oversubscribe "$program") || {
  status=$?
  printf '%s\n' "$output"
  echo "c_example_test: FAIL: $program exited with $status at np=$np" >&2
  exit 1
}
printf '%s\n' "$output"
printf '%s\n' "$output" | "$python" "$here/c_example_reference.py" "$np"
