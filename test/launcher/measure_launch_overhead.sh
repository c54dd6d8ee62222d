#!/usr/bin/env bash
# Launch overhead of chorusrun against the equivalent raw mpirun command, in
# one run, alternating the two (A B, then B A) so that load drifts hit both:
# `chorusrun -np N PROGRAM init-shutdown` vs the mpirun command chorusrun
# would run (from its --dry-run) without the rank wrapper. PROGRAM calls only
# chorus::init() and chorus::shutdown(). Prints the median and min wall time
# of each and the ratio of the medians, with the load average.
#   measure_launch_overhead.sh [-n ROUNDS] [-p NP] [BUILD_DIR]   (defaults: 10, 2, build)
set -euo pipefail

rounds=10
np=2
while getopts "n:p:" opt; do
  case $opt in
    n) rounds=$OPTARG ;;
    p) np=$OPTARG ;;
    *) echo "usage: $0 [-n ROUNDS] [-p NP] [BUILD_DIR]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "measure_launch_overhead: -n '$rounds' is not a positive integer" >&2; exit 2; }
[[ "$np" =~ ^[1-9][0-9]*$ ]] || { echo "measure_launch_overhead: -p '$np' is not a positive integer" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
chorusrun=$build/launcher/chorusrun
program=$build/test/launcher/launcher_test_program
for f in "$chorusrun" "$program"; do
  [[ -x "$f" ]] || { echo "measure_launch_overhead: $f is missing: build chorusrun and launcher_test_program" >&2; exit 2; }
done
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

# The raw command: chorusrun's own mpirun command minus the rank wrapper
# (from the chorusrun path to its "--"), so both sides pass the same flags.
read -ra words <<<"$("$chorusrun" --dry-run -np "$np" "$program" init-shutdown)"
raw=()
for ((i = 0; i < ${#words[@]}; i++)); do
  if [[ ${words[i + 1]:-} == --chorus-rank-wrapper ]]; then
    # Skip the chorusrun path, the wrapper's arguments and their "--".
    while [[ ${words[i]} != "--" ]]; do i=$((i + 1)); done
    continue
  fi
  raw+=("${words[i]}")
done
# Leading NAME=VALUE words (none for this command line) would be the environment.
[[ ${raw[0]} == mpirun ]] || { echo "measure_launch_overhead: unexpected dry run: ${words[*]}" >&2; exit 1; }

now() { date +%s.%N; }
time_one() {  # prints seconds; fails the script if the command fails
  local start end
  start=$(now)
  "$@" >/dev/null 2>&1 || { echo "measure_launch_overhead: failed: $*" >&2; exit 1; }
  end=$(now)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
chorus_times=()
raw_times=()
for ((i = 0; i < rounds; i++)); do
  if ((i % 2 == 0)); then
    chorus_times+=("$(time_one "$chorusrun" -np "$np" "$program" init-shutdown)")
    raw_times+=("$(time_one "${raw[@]}")")
  else
    raw_times+=("$(time_one "${raw[@]}")")
    chorus_times+=("$(time_one "$chorusrun" -np "$np" "$program" init-shutdown)")
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
minimum() { printf '%s\n' "$@" | sort -g | head -n 1; }
cm=$(median "${chorus_times[@]}")
rm_=$(median "${raw_times[@]}")
echo "launch overhead, np=$np, $rounds rounds alternating, $(date -u +%FT%TZ), host $(hostname), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw command: ${raw[*]}"
printf 'chorusrun: median %.3f s  min %.3f s\n' "$cm" "$(minimum "${chorus_times[@]}")"
printf 'mpirun:    median %.3f s  min %.3f s\n' "$rm_" "$(minimum "${raw_times[@]}")"
printf 'ratio chorusrun/mpirun (medians): %.3f\n' "$(awk -v a="$cm" -v b="$rm_" 'BEGIN { print a / b }')"
