# Sourced by the test scripts whose prerequisite this machine may lack. The
# suite's one rule (docs/TESTING.md, "Skips"):
#   - A test skips (exit 77, which CTest reports as skipped through
#     SKIP_RETURN_CODE 77) only when its prerequisite cannot exist for the
#     user running it: root, for network-namespace hosts and for the Slurm
#     cluster's slurmd. The reason is printed. CI runs as root, so these
#     tests run there. (A GPU test skips without a GPU in the same way.)
#   - Everything else they need is a failure with the reason when it is
#     missing or does not work: a tool that scripts/install_deps.sh installs
#     (iproute2, Slurm), namespaces or a cluster that cannot be set up as
#     root, a fixture that did not run (SLURM_CONF unset).

# chorus_require_root TEST WHAT: returns when running as root; otherwise
# says that WHAT needs root and exits 77.
chorus_require_root() {
  [[ $(id -u) -eq 0 ]] && return 0
  echo "$1: SKIPPED: $2 needs root (running as uid $(id -u)); CI runs the suite as root"
  exit 77
}

# chorus_require_tool TEST TOOL WHY: returns when TOOL is on PATH; otherwise
# fails (exit 1) naming it and the install script.
chorus_require_tool() {
  command -v "$2" >/dev/null 2>&1 && return 0
  echo "$1: FAIL: '$2' is not installed ($3): run scripts/install_deps.sh"
  exit 1
}
