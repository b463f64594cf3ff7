#!/usr/bin/env bash
# The lab's delay side by side with strace and perf, in one boot of the lab
# kernel: per-call latency of getppid and of a 1-byte read from /dev/zero
# with no tool, the delay module (loops=0, loops=1, ns=1000/10000 when the
# module has 'ns'), strace (no delay, delay_enter=1ns/1us/10us, and
# --seccomp-bpf when the kernel has seccomp) and a perf counter on
# raw_syscalls:sys_enter.  Writes results/peers-<date>-<time>/ and prints
# the table of 'lab analyse' (userspace/peers/README.md).
#
#   run.sh [-n N] [--warmup N] [--no-analysis]
#   -n N            timed calls per case and system call (default $N or 10000)
#   --warmup N      untimed calls before them (default $WARMUP or 1000)
#   --no-analysis   record only; analyse later with lab analyse DIR
#
# Example:  N=2000 userspace/peers/run.sh     (make bench-peers N=2000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_runner_args '-n=10000 --warmup=1000 --no-analysis' "$@"
lab_built "$LAB_TOOL" "$here/percall"

lab_begin "$LAB_ROOT/results" peers
"$LAB_TOOL" meta "$LAB_DIR" peers n:="$N" warmup:="$WARMUP" cpu:=0 \
	syscalls:='["getppid", "read"]' -- "$0" "${LAB_ARGS[@]}"
start=$(date +%s)
lab_guest true "$here/guest.sh" "$LAB_DIR" "$N" "$WARMUP"
lab_commit peers
log "measured in $(($(date +%s) - start)) s"
lab_analyse "$analysis"
