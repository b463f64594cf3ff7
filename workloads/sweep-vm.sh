#!/usr/bin/env bash
# From the host: run workloads/sweep.sh in the patched kernel (VM) and
# analyse its results here.
#
#   sweep-vm.sh WORKLOAD [sweep.sh options]      (what 'make sweep' runs)
#
# The kbuild object tree is prepared here first, natively: in the TCG
# guest configuring a kernel tree alone takes minutes.  The analysis
# (summary, model, plot) also runs here, where Python is fast.
#
# Example:  workloads/sweep-vm.sh grep -l 0,200000 -r 1   (sweep.sh --help: its options)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
lab_help "$@"

[ $# -ge 1 ] || bad_arg "usage: ${0##*/} kbuild|grep|apache|all|cmd [sweep.sh options]"
workload=$1
scale=vm
prev=
for a in "$@"; do
	case $prev in -s | --scale) scale=$a ;; esac
	prev=$a
done
case $workload in
kbuild | all)
	"$LAB_ROOT/workloads/kbuild-prepare.sh" "$scale" "$LAB_BUILD/kbuild-$scale" \
		"$LAB_BUILD/src/linux-source-6.12"
	;;
esac

# A whole sweep takes a while under TCG; 'all' is three of them.
export VM_TIMEOUT=${VM_TIMEOUT:-21600}
results=$LAB_ROOT/results
mkdir -p "$results"
# A finished sweep points results/latest-<workload> at its folder; an
# interrupted one leaves <workload>-<time>.incomplete/ and says so itself.
workloads=$workload
[ "$workload" != all ] || workloads="kbuild grep apache"
declare -A before
for w in $workloads; do before[$w]=$(readlink "$results/latest-$w" || true); done
status=0
"$LAB_ROOT/scripts/vm.sh" -- "$LAB_ROOT/workloads/sweep.sh" "$@" --no-analysis -o "$results" ||
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
