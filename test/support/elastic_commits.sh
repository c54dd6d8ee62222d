#!/usr/bin/env bash
# The elastic commit store's files as the elastic tests wait for them
# (frameworks/torch/checkpoint/elastic_commit_store.cc:
# <dir>/<job>/<host>/commit-<12-digit id>.ckpt, written under a temporary name
# and renamed when complete). The store keeps only its newest commits, so a
# test waits for "commit N or a later one": on a quick run commit N may be
# written and removed between two looks.

# newest_commit FOLDER_GLOB: the highest id of a complete commit in the
# folders matching the glob (e.g. "$dir/*/n1"), or -1 when there is none.
newest_commit() {
  local newest=-1 file id
  while IFS= read -r file; do
    [[ -n $file ]] || continue
    id=${file##*/commit-}
    id=$((10#${id%.ckpt}))
    ((id > newest)) && newest=$id
  done < <(compgen -G "$1/commit-[0-9]*[0-9].ckpt" || true)
  echo "$newest"
}

# wait_for_commit ID SECONDS FOLDER_GLOB...: returns 0 once every glob's
# folders hold commit ID or a later one, 1 when SECONDS passed first.
wait_for_commit() {
  local id=$1 seconds=$2 i folder ready
  shift 2
  for ((i = 0; i < seconds * 20; i++)); do
    ready=1
    for folder in "$@"; do
      (($(newest_commit "$folder") >= id)) || { ready=0; break; }
    done
    ((ready)) && return 0
    sleep 0.05
  done
  return 1
}
