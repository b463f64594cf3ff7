#!/usr/bin/env bash
# On the lab kernel (run.sh boots it, or a machine booted into it): load
# the delay module if it is not loaded, run calibrate into results/, unload
# the module if we loaded it.  Extra arguments go to calibrate (--help);
# a first --runs N runs it N times into folders run-1..run-N (bench.sh).
#
# Example:  scripts/vm.sh -- userspace/calibrate/guest.sh -l 0:2000:250 -n 50
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

# --runs N: N calibrations, named run-1..run-N (for bench.sh, with -o).
runs=0
if [ "${1:-}" = --runs ]; then
	want_uint --runs "${2:-}" 1
	runs=$2
	shift 2
fi
grep -q ' syscall_hook_register$' /proc/kallsyms 2>/dev/null ||
	die "this kernel ($(uname -r)) has no syscall hook; boot the lab kernel ('make vm')"
lab_built "$here/calibrate"

loaded_here=0
if [ ! -d /sys/module/delay ]; then
	insmod "$(lab_ko delay)"
	loaded_here=1
fi
cleanup() { [ "$loaded_here" -eq 0 ] || rmmod delay || true; }
trap cleanup EXIT

log "kernel $(uname -r), $(nproc) CPUs; calibrating on CPU 0 into results/"
# CPU 0: in the TCG guest the last vCPU shares its host core with QEMU's
# own threads and its timings wander (getppid: 490-950 ns against 491-508
# on CPU 0 in the same boot).  A later -C overrides this one.
if [ "$runs" -eq 0 ]; then
	"$here/calibrate" -C 0 -o "$LAB_ROOT/results" "$@"
else
	for r in $(seq "$runs"); do
		"$here/calibrate" -C 0 -o "$LAB_ROOT/results" --name "run-$r" "$@"
	done
fi
