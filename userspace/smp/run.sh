#!/usr/bin/env bash
# The SMP micro-benchmarks (pipes, cv, tlbflush, timer, tun) and, in the
# same boot, perf bench sched pipe, cyclictest and ptsematest: boots the
# lab kernel (VARIANT=stock|rt, VM_CPUS=N) and runs guest.sh there, or,
# with --here, runs it on the kernel this machine is running (a real
# machine booted into the lab kernel; needs root).  Writes
# results/smp-<date>-<time>/ and prints the tables of 'lab analyse'
# (userspace/smp/README.md).
#
#   run.sh [-r RUNS] [-n N] [-o PARENT] [--here] [--no-analysis]
#   -r, --repeats RUNS
#                   rounds of every benchmark (default $RUNS or 5)
#   -n N            records a benchmark and round (default $N or 500)
#   -o, --output PARENT
#                   where the result folder goes (default results)
#   --here          no VM: measure the running kernel
#   --no-analysis   record only; analyse later with lab analyse DIR
#
# Example:  VARIANT=rt VM_CPUS=4 userspace/smp/run.sh -r 3   (make smp VARIANT=rt VM_CPUS=4 RUNS=3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_runner_args '-r=5 -n=500 -o --here --no-analysis' "$@"
lab_built "$LAB_TOOL" "$here/smp"
[ "$vm" = true ] || lab_root "--here: real-time priorities, tun, mlockall"

lab_begin "$LAB_PARENT" smp
"$LAB_TOOL" meta "$LAB_DIR" smp runs:="$RUNS" n:="$N" vm:="$vm" \
	-- "$0" "${LAB_ARGS[@]}"
start=$(date +%s)
lab_guest "$vm" "$here/guest.sh" "$LAB_DIR" "$RUNS" "$N"
lab_commit smp
log "measured in $(($(date +%s) - start)) s"
lab_analyse "$analysis"
