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

[ $# -ge 1 ] || die "usage: ${0##*/} kbuild|grep|apache|all|cmd [sweep.sh options]"
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
# Result folders only: the latest-* links are not folders to find.
listing() { find "$results" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort; }
before=$(listing)
status=0
"$LAB_ROOT/scripts/vm.sh" -- "$LAB_ROOT/workloads/sweep.sh" "$@" --no-analysis -o "$results" ||
	status=$?
new=$(comm -13 <(echo "$before") <(listing))
[ -n "$new" ] || die "the sweep left no result folder (exit status $status)"
for d in $new; do
	case $d in
	*.incomplete) log "incomplete (the sweep stopped): $results/$d" ;;
	*) "$LAB_VENV/bin/python" "$LAB_ROOT/workloads/report.py" "$results/$d" || status=1 ;;
	esac
done
exit "$status"
