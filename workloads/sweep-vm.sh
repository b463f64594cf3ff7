#!/usr/bin/env bash
# From the host: run workloads/sweep.sh in the patched kernel (VM) and
# analyse its results here.
#
#   sweep-vm.sh WORKLOAD [sweep.sh options]      (what 'make sweep' runs)
#
# The kbuild object tree is prepared here first, natively: in the TCG
# guest configuring a kernel tree alone takes minutes.  kbuild and grep are
# staged here too (sweep.sh --stage-only: recorded under strace and what
# they touched written to build/stage/<workload>.tar), and the guest
# unpacks that into memory (--stage-from) instead of copying it from the
# host's files itself.  The analysis (summary, model, plot) also runs
# here, where Python is fast.
#
# Example:  workloads/sweep-vm.sh grep -l 0,200000 -r 1   (sweep.sh --help: its options)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
lab_help "$@"

[ $# -ge 1 ] || bad_arg "usage: ${0##*/} kbuild|grep|apache|all|cmd [sweep.sh options]"
workload=$1
scale=vm
staging=1
prev=
for a in "$@"; do
	case $prev in -s | --scale) scale=$a ;; esac
	case $a in --no-stage) staging=0 ;; --stage-only | --stage-from)
		bad_arg "$a is for sweep.sh; ${0##*/} stages kbuild and grep itself" ;;
	esac
	prev=$a
done
case $workload in
kbuild | all)
	"$LAB_ROOT/workloads/kbuild-prepare.sh" "$scale" "$LAB_BUILD/kbuild-$scale" \
		"$LAB_BUILD/src/linux-source-6.12"
	;;
esac

stage_args=()
if [ "$staging" -eq 1 ]; then
	stage_dir=$LAB_BUILD/stage
	for w in kbuild grep; do
		case $workload in "$w" | all)
			"$LAB_ROOT/workloads/sweep.sh" "$w" "${@:2}" --stage-only "$stage_dir" ;;
		esac
	done
	stage_args=(--stage-from "$stage_dir")
fi

# A whole sweep takes a while under TCG; 'all' is three of them.  The
# guest holds the staged files in memory (a kbuild's: 650 MB).
export VM_TIMEOUT=${VM_TIMEOUT:-21600}
export VM_MEM=${VM_MEM:-4G}
# The virtual clock under TCG, the host's under KVM (VM_CLOCK=host keeps
# the host's): on it every point is the same on every machine.
export VM_CLOCK=${VM_CLOCK:-auto}
# One vCPU on the virtual clock: its instruction count is global, so with
# two a reply's time included the client's turns on the other vCPU
# (Apache's reference reply: 0.2 ms with one vCPU, 1.1 ms with two, for
# the same 30 server calls, 2026-11-26); kbuild and grep gain nothing
# from a second vCPU that only takes turns with the first.
export VM_VIRTUAL_CPUS=${VM_VIRTUAL_CPUS:-1}
results=$LAB_ROOT/results
mkdir -p "$results"
# A finished sweep points results/latest-<workload> at its folder; an
# interrupted one leaves <workload>-<time>.incomplete/ and says so itself.
workloads=$workload
[ "$workload" != all ] || workloads="kbuild grep apache"
declare -A before
for w in $workloads; do before[$w]=$(readlink "$results/latest-$w" || true); done
status=0
"$LAB_ROOT/scripts/vm.sh" -- "$LAB_ROOT/workloads/sweep.sh" "$@" "${stage_args[@]}" \
	--no-analysis -o "$results" ||
	status=$?
for w in $workloads; do
	now=$(readlink "$results/latest-$w" || true)
	if [ -z "$now" ] || [ "$now" = "${before[$w]}" ]; then
		log "no new $w sweep (exit status $status)"
		[ "$status" -ne 0 ] || status=1
		continue
	fi
	LAB_DIR=$results/$now
	lab_analyse 1 "$LAB_ROOT/workloads/analyse.py" || status=1
done
exit "$status"
