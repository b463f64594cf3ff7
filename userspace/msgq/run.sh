#!/usr/bin/env bash
# The message bus profiled: boots the lab kernel (VARIANT=stock|rt) and runs
# guest.sh there, which runs the msgq program under perf stat with both of
# the module's buffer strategies, RUNS rounds each, and once more under perf
# record; or, with --here, runs it on the kernel this machine is running (a
# machine booted into the lab kernel; needs root).  Writes
# results/msgq-profile-<date>-<time>/ and prints the table of 'lab analyse'
# (userspace/msgq/README.md).
#
#   run.sh [-r RUNS] [-n N] [-o PARENT] [--here] [--no-analysis] [-- MSGQ-OPTIONS...]
#   -r, --repeats RUNS
#                   rounds of each strategy (default $RUNS or 5)
#   -n N            messages a run (default $N or 30000)
#   -o, --output PARENT
#                   where the result folder goes (default results)
#   --here          no VM: measure the running kernel
#   --no-analysis   record only; analyse later with lab analyse DIR
#   MSGQ-OPTIONS    go to every msgq run (--size 16:1024, --rate R, -C LIST)
#
# Example:  userspace/msgq/run.sh -r 3 -n 10000 -- --size 64:512   (make msgq RUNS=3 N=10000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_runner_args '-r=5 -n=30000 -o --here --no-analysis --' "$@"
set -- "${LAB_REST[@]}"
lab_built "$LAB_TOOL" "$here/msgq"
if [ "$vm" = false ]; then
	lab_root "--here: insmod, perf -a"
	lab_ko msgq >/dev/null
fi

lab_begin "$LAB_PARENT" msgq-profile
"$LAB_TOOL" meta "$LAB_DIR" msgq-profile runs:="$RUNS" n:="$N" \
	vm:="$vm" msgq_options="$*" -- "$0" "${LAB_ARGS[@]}"
start=$(date +%s)
lab_guest "$vm" "$here/guest.sh" "$LAB_DIR" "$RUNS" "$N" "$@"
lab_commit msgq-profile
log "measured in $(($(date +%s) - start)) s"
lab_analyse "$analysis"
