#!/usr/bin/env bash
# Builds the GPU checks here and packs what test/gpu/run_device_checks.sh
# needs on the GPU machine into .devbundle/ (git-ignored), since that machine
# has CUDA, NCCL and cuDNN but neither Open MPI, Boost nor the MNIST files,
# and nothing can be fetched there:
#   bin/        the check programs, debug info stripped
#   lib/        the shared libraries they and Open MPI load, except glibc,
#               libstdc++ and the CUDA family (the GPU machine's own)
#   usr/        a relocatable copy of Open MPI (mpirun, its plugins and help
#               texts), used with OPAL_PREFIX=.devbundle/usr
#   mnist/      the MNIST files (scripts/prepare_mnist.sh)
# Then run, with the device tool: carry .devbundle, command
#   test/gpu/run_device_checks.sh
#   test/gpu/make_device_bundle.sh [--out DIR]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="$root/.devbundle"
die() { echo "make_device_bundle: error: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --out) out=${2:?--out needs a folder}; shift ;;
    -h | --help) sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
  shift
done

# The programs the checks run (test/gpu/run_device_checks.sh names them too),
# and one CPU-only MPI test that shows the bundled mpirun works there.
gpu_targets=(device_contract_test cuda_device_test cuda_api_test nccl_backend_test nccl_abort_test nccl_runtime_test
             staged_backend_test staged_runtime_test nccl_hierarchical_test chorus_gpu_pack_bench
             chorus_gpu_allreduce_bench train_mnist_cuda)
cpu_targets=(mpi_backend_test)

"$root/scripts/prepare_mnist.sh" --data-dir "$root/data/mnist"
"$root/scripts/build.sh" "${gpu_targets[@]}" "${cpu_targets[@]}"
grep -qx 'CHORUS_WITH_NCCL:BOOL=ON' "$root/build/CMakeCache.txt" ||
  die "build/ is configured without NCCL; the GPU checks need CHORUS_WITH_CUDA, CHORUS_WITH_NCCL and CHORUS_WITH_CUDNN ON"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/mnist"
for target in "${gpu_targets[@]}" "${cpu_targets[@]}"; do
  program=$(find "$root/build" -type f -name "$target" -perm -u+x | head -1)
  [[ -n "$program" ]] || die "built target '$target' not found under build/"
  objcopy --strip-debug "$program" "$out/bin/$target"
done
cp "$root"/data/mnist/*-ubyte "$out/mnist/"

# Open MPI as Debian lays it out, under usr/, so that OPAL_PREFIX relocates
# every path it derives from its prefix /usr (plugins, help texts).
mpi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib
[[ -d "$mpi_lib/openmpi3" ]] || die "Open MPI's plugins are not in $mpi_lib/openmpi3 (scripts/install_deps.sh)"
mkdir -p "$out/usr/bin" "$out/usr/share" "$out/usr/lib/x86_64-linux-gnu/openmpi/lib"
cp -L /usr/bin/orterun "$out/usr/bin/mpirun"
cp -L /usr/bin/orted "$out/usr/bin/orted"
cp -a "$mpi_lib/openmpi3" "$out/usr/lib/x86_64-linux-gnu/openmpi/lib/"
cp -a /usr/share/openmpi "$out/usr/share/"

# Every shared library these load, but the C runtime and the CUDA family.
skip='/(ld-linux[^/]*|libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libcuda|libcudart|libnccl|libcudnn[^/]*|libcublas[^/]*|libcublasLt)\.so'
{
  ldd "$out"/bin/* "$out"/usr/bin/* "$out"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so 2>/dev/null |
    awk '/=> \//{print $3}'
} | sort -u | grep -Ev "$skip" | while read -r library; do
  cp -L "$library" "$out/lib/"
done

size=$(du -sm "$out" | cut -f1)
echo "make_device_bundle: $out holds ${size} MiB ($(ls "$out/bin" | wc -l) programs, $(ls "$out/lib" | wc -l) libraries)"
((size < 60)) || die "$out is ${size} MiB; the device tool carries at most 64 MiB with the working tree"
