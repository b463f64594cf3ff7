# shellcheck shell=bash
# Common paths and helpers for the lab's shell scripts.  Sourced, not run.

LAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything worth keeping between clones (ccache, pip cache, the KVM
# probe's verdict) lives outside the repository.
LAB_CACHE=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernel-lab}
LAB_BUILD=${LAB_BUILD:-$LAB_ROOT/build}
# The kernel object tree (make O=...), shared by every target.
KOBJ=${KOBJ:-$LAB_BUILD/obj}
LAB_VENV=${LAB_VENV:-$LAB_ROOT/.venv}
# matplotlib wants a writable cache; in the VM only the repository is.
export MPLCONFIGDIR=${MPLCONFIGDIR:-$LAB_BUILD/matplotlib}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { printf '%s: error: %s\n' "${0##*/}" "$*" >&2; exit 1; }

# QEMU's major version, empty if qemu-system-x86_64 is missing.  Version 8
# is the first whose multi-threaded TCG the lab trusts (see scripts/vm.sh).
# shellcheck disable=SC2034  # read by deps.sh and vm.sh
QEMU_TRUSTED_MAJOR=8
qemu_major() {
	qemu-system-x86_64 --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p'
}

# Run a command as root, or explain why we cannot.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root for: $*"
	fi
}
