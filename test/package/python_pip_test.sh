#!/usr/bin/env bash
# The chorus Python package installed as docs/PYTHON.md says, from a copy of the
# checkout's tracked files (as a fresh clone has them), offline:
#  1. /usr/bin/python3 -m venv --system-site-packages VENV; VENV/bin/python -m pip install .
#  2. /usr/bin/python3 -m pip install --target DIR .
# then, with each, `chorus` imports from where pip put it (not from a build
# tree) and `chorusrun -np 2 <that python> examples/python/train_mnist.py`
# reaches accuracy >= 0.94 with parameters bit-identical to the
# single-process reference (test/python/launch/train_mnist_launch_test.sh).
# The copy lives under <work parent> (the build tree: a compiler cache with
# base_dir there can serve pip's CMake build).
# With <build dir> (the suite passes its own), pip's setup.py brings that
# tree's extension up to date (CHORUS_PYTHON_BUILD_DIR) instead of configuring
# and compiling build-python/ from nothing: the suite checks what pip installs
# and how, without compiling the LibTorch front end a second time (about 10
# minutes on 2 cores). Without it, the whole route a user takes is run.
#   python_pip_test.sh <work parent> <chorusrun> <mnist dir> [<build dir>]
set -euo pipefail
[[ $# -eq 3 || $# -eq 4 ]] || { echo "usage: $0 <work parent> <chorusrun> <mnist dir> [<build dir>]" >&2; exit 2; }
parent=$1 chorusrun=$2 mnist_dir=$3
if [[ $# -eq 4 ]]; then export CHORUS_PYTHON_BUILD_DIR=$4; else unset CHORUS_PYTHON_BUILD_DIR; fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
fail() { echo "python_pip_test: FAIL: $*" >&2; exit 1; }
step() { echo "=== python_pip_test: $* ($(date +%T))"; }
mkdir -p "$parent"
work=$(mktemp -d "$parent/python_pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH  # the installed package only

step "copying the tracked files of $source_dir"
command -v git >/dev/null && git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1 ||
  fail "$source_dir is not a git checkout (the test copies its tracked files, as a clone has them)"
mkdir "$work/src"
git -C "$source_dir" ls-files -z | (cd "$source_dir" && xargs -0 cp --parents -t "$work/src")

step "venv --system-site-packages + pip install ."
/usr/bin/python3 -m venv --system-site-packages "$work/venv" || fail "creating the venv failed"
(cd "$work/src" && "$work/venv/bin/python" -m pip install . >"$work/pip-venv.log" 2>&1) ||
  { tail -n 40 "$work/pip-venv.log"; fail "pip install . in the venv failed (log above)"; }
step "pip install --target"
(cd "$work/src" && /usr/bin/python3 -m pip install --target "$work/target" . >"$work/pip-target.log" 2>&1) ||
  { tail -n 40 "$work/pip-target.log"; fail "pip install --target failed (log above)"; }

# where_from PYTHON: the folder chorus.torch's extension is imported from.
where_from() { "$@" -c 'import chorus._chorus, chorus.torch, os; print(os.path.dirname(os.path.abspath(chorus._chorus.__file__)))'; }
venv_at=$(where_from "$work/venv/bin/python") || fail "the venv's python cannot import chorus.torch"
[[ $venv_at == "$work/venv/lib/"*"/site-packages/chorus" ]] || fail "the venv imports chorus from $venv_at"
target_at=$(PYTHONPATH=$work/target where_from /usr/bin/python3) || fail "/usr/bin/python3 cannot import chorus.torch from $work/target"
[[ $target_at == "$work/target/chorus" ]] || fail "PYTHONPATH=$work/target imports chorus from $target_at"
echo "venv: chorus from $venv_at; --target: chorus from $target_at"

launch_test=$source_dir/test/python/launch/train_mnist_launch_test.sh
step "chorusrun -np 2 venv/bin/python train_mnist.py"
"$launch_test" chorusrun "$chorusrun" "$work/venv/bin/python" "$mnist_dir" || fail "the venv's run (above)"
step "chorusrun -np 2 /usr/bin/python3 train_mnist.py with PYTHONPATH=<target>"
PYTHONPATH=$work/target "$launch_test" chorusrun "$chorusrun" /usr/bin/python3 "$mnist_dir" ||
  fail "the --target run (above)"
echo "python_pip_test: PASS"
