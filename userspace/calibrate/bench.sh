#!/usr/bin/env bash
# How repeatable the calibration is: RUNS calibrations in each of BOOTS
# boots of the lab kernel, each analysed on the host, then the spread of
# the slope and R^2 within a boot and across boots (bench_report.py).
#
#   RUNS=5 BOOTS=2 userspace/calibrate/bench.sh [calibrate options]
#
# Writes results/calibrate-bench-<date>-<time>/boot-<b>/run-<r>/ (each a
# calibrate result folder) and bench.json, bench.txt there.
#
# Example:  RUNS=3 BOOTS=1 userspace/calibrate/bench.sh -l 0:700:100
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

RUNS=${RUNS:-5}
BOOTS=${BOOTS:-2}
want_uint RUNS "$RUNS" 2
want_uint BOOTS "$BOOTS" 1
[ -x "$LAB_TOOL" ] || die "$LAB_TOOL is not built; run 'make userspace'"

dir=$("$LAB_TOOL" begin "$LAB_ROOT/results" calibrate-bench)
trap 'log "stopped; what was measured is in $dir"' EXIT
"$LAB_TOOL" meta "$dir" calibrate-bench runs:="$RUNS" boots:="$BOOTS" -- "$0" "$@"
for boot in $(seq "$BOOTS"); do
	mkdir "$dir/boot-$boot"
	log "boot $boot/$BOOTS: $RUNS calibrations"
	"$LAB_ROOT/scripts/vm.sh" -- "$here/run.sh" --runs "$RUNS" -q -o "$dir/boot-$boot" "$@"
done
trap - EXIT
dir=$("$LAB_TOOL" commit "$dir" calibrate-bench)
for run in "$dir"/boot-*/run-*/; do
	"$LAB_VENV/bin/python" "$here/analyse.py" --no-plot "$run" >/dev/null
done
"$LAB_VENV/bin/python" "$here/bench_report.py" "$dir"
