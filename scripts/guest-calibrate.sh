#!/usr/bin/env bash
# In the patched kernel: load the delay module (if it is not loaded), run
# the calibration into results/, unload the module if we loaded it.
# Extra arguments go to userspace/calibrate/calibrate (see its --help).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d /sys/module/delay ] || [ -f "$LAB_ROOT/modules/delay/delay.ko" ] ||
	die "modules/delay/delay.ko is not built; run 'make module'"
grep -q ' syscall_hook_register$' /proc/kallsyms 2>/dev/null ||
	die "this kernel ($(uname -r)) has no syscall hook; boot the lab kernel ('make vm')"

loaded_here=0
if [ ! -d /sys/module/delay ]; then
	insmod "$LAB_ROOT/modules/delay/delay.ko"
	loaded_here=1
fi
cleanup() { [ "$loaded_here" -eq 0 ] || rmmod delay || true; }
trap cleanup EXIT

export LAB_PYTHON=${LAB_PYTHON:-$LAB_VENV/bin/python}
log "kernel $(uname -r), $(nproc) CPUs; calibrating on CPU 0 into results/"
# CPU 0: in the TCG guest the last vCPU shares its host core with QEMU's
# own threads and its timings wander (getppid: 490-950 ns against 491-508
# on CPU 0 in the same boot).  A later --cpu overrides this one.
"$LAB_ROOT/userspace/calibrate/calibrate" --cpu 0 -o "$LAB_ROOT/results" "$@"
