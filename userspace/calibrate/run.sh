#!/usr/bin/env bash
# The calibration (loop count -> added system-call latency): boots the lab
# kernel and runs guest.sh there, on the virtual clock under TCG and the
# host's under KVM (VM_CLOCK=auto; VM_CLOCK=host keeps the host's), or, with
# --here, runs it on the kernel this machine is running (a machine booted
# into the lab kernel; needs root).  Then 'lab analyse' on the result
# folder the calibrate tool made (results/calibrate-<date>-<time>/, or -o's).
#
#   run.sh [--here] [--no-analysis] [CALIBRATE-OPTIONS...]
#   --here          no VM: measure the running kernel
#   --no-analysis   record only; analyse later with lab analyse DIR
#   CALIBRATE-OPTIONS
#                   go to the calibrate tool (userspace/calibrate/calibrate
#                   --help: -l LOOPS, -n BATCHES, -o PARENT, --name NAME ...)
#
# Example:  userspace/calibrate/run.sh -l 0:2000:250 -n 50   (make calibrate LOOPS=0:2000:250)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_runner_args '--here --no-analysis ...' "$@"
lab_built "$LAB_TOOL" "$here/calibrate"
[ "$vm" = true ] || lab_root "--here: insmod delay"

export VM_CLOCK=${VM_CLOCK:-auto}
lab_guest_named "$vm" calibrate "$here/guest.sh" "${LAB_REST[@]}"
lab_analyse "$analysis"
