#!/usr/bin/env bash
# The main job: installs what is missing, builds what is stale, and runs it.
# For now that is chorus_bench on 2 ranks (Chorus vs raw MPI allreduce);
# the LibTorch MNIST example will take its place once it exists.
#   scripts/run_main_job.sh [chorus_bench options...]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install_deps.sh"
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
exec "$root/test/bench/run_bench.sh" 2 "$@"
