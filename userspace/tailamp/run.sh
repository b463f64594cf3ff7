#!/usr/bin/env bash
# Tail amplification: Apache's replies with a share P of its system calls
# delayed, on the virtual clock with one vCPU (the same calls delayed in
# every boot), analysed here: mean, p50, p99 and p99.9 against P beside
# the binomial model (userspace/tailamp/README.md).  Boots the lab kernel
# and runs guest.sh there, or, with --here, runs it on the kernel this
# machine runs (needs root).  Writes results/tailamp-<date>-<time>/.
#
#   run.sh [--here] [--no-analysis] [GUEST-OPTIONS...]
#   --here          no VM: measure the running kernel
#   --no-analysis   record only; analyse later with lab analyse DIR
#   GUEST-OPTIONS   go to guest.sh (guest.sh --help: --ppm, --ns, --mode,
#                   --seed, -n, --interval-ms, -o PARENT)
#
# Environment: VM_CLOCK (default auto: virtual under TCG), VM_VIRTUAL_CPUS
# (default 1, as the Apache sweep), VM_TIMEOUT (default 21600 s: make
# tailamp has taken 17 min beside two other VMs, but over an hour beside
# three, when vm.sh's default hour stopped its last point), VM_MEM
# (scripts/vm.sh).
#
# Example:  userspace/tailamp/run.sh --ppm 0,1000,10000 -n 2000   (make tailamp)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_runner_args '--here --no-analysis ...' "$@"
lab_built "$LAB_TOOL"
[ "$vm" = true ] || lab_root "--here: insmod, cgroups, Apache"
export VM_CLOCK=${VM_CLOCK:-auto} VM_VIRTUAL_CPUS=${VM_VIRTUAL_CPUS:-1}
export VM_TIMEOUT=${VM_TIMEOUT:-21600}

lab_guest_named "$vm" tailamp "$here/guest.sh" "${LAB_REST[@]}"
lab_analyse "$analysis"
log "results in $LAB_DIR"
