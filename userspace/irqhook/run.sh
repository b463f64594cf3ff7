#!/usr/bin/env bash
# The wake-up experiment's reference grid: boots the lab kernel and runs
# guest.sh there (load tasks x normal/rt, one irqhook run a cell, some
# cells traced), or, with --here, runs it on the kernel this machine is
# running (a machine booted into the lab kernel; needs root).  Then, here:
# lablib.irqhook.trace_report on each traced cell and 'lab analyse' on the
# grid (table.txt, table.csv, sweep.json, sweep.png).  Writes
# results/irqhook-sweep-<date>-<time>/ (userspace/irqhook/README.md).
#
#   run.sh [--here] [--no-analysis] [GUEST-OPTIONS...]
#   --here          no VM: measure the running kernel
#   --no-analysis   record only; says how to analyse later
#   GUEST-OPTIONS   go to guest.sh (guest.sh --help: -n EVENTS, --loads,
#                   --period-us, --trace-cells, -C CPU, -o PARENT)
#
# Environment: VM_CLOCK (default auto: virtual under TCG, the host's under
# KVM), VM_VIRTUAL_CPUS (default 1, the reference's uniprocessor board:
# README, "The clock and the CPUs", says why), VM_CPUS (scripts/vm.sh).
#
# Example:  userspace/irqhook/run.sh -n 10000 --loads 0,8,16   (make irqhook-sweep IRQHOOK_N=10000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_runner_args '--here --no-analysis ...' "$@"
export VM_CLOCK=${VM_CLOCK:-auto} VM_VIRTUAL_CPUS=${VM_VIRTUAL_CPUS:-1}
lab_built "$LAB_TOOL" "$here/irqhook"
[ "$vm" = true ] || lab_root "--here: real-time priorities, /dev/irqhook"

lab_guest_named "$vm" irqhook-sweep "$here/guest.sh" "${LAB_REST[@]}"
if [ "$analysis" -eq 1 ]; then
	for t in "$LAB_DIR"/traced-*/; do
		[ ! -d "$t" ] || lab_python -m lablib.irqhook.trace_report "$t"
	done
	lab_analyse 1
else
	log "analyse with: python -m lablib.irqhook.trace_report on each $LAB_DIR/traced-*," \
		"then lab analyse $LAB_DIR"
fi
log "results in $LAB_DIR"
