#!/usr/bin/env bash
# How repeatable the calibration is: RUNS calibrations in each of BOOTS
# boots of the lab kernel, each analysed on the host, then the spread of
# the slope and R^2 within a boot and across boots
# (lablib.calibrate.bench_report).
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

lab_env_uint RUNS 5 2  BOOTS 2 1
lab_built "$LAB_TOOL"

lab_begin "$LAB_ROOT/results" calibrate-bench
"$LAB_TOOL" meta "$LAB_DIR" calibrate-bench runs:="$RUNS" boots:="$BOOTS" -- "$0" "$@"
for boot in $(seq "$BOOTS"); do
	mkdir "$LAB_DIR/boot-$boot"
	log "boot $boot/$BOOTS: $RUNS calibrations"
	"$LAB_ROOT/scripts/vm.sh" -- "$here/guest.sh" --runs "$RUNS" -q -o "$LAB_DIR/boot-$boot" "$@"
done
lab_commit calibrate-bench
for run in "$LAB_DIR"/boot-*/run-*/; do
	lab_python -m lablib.lab analyse "$run" --no-plot >/dev/null
done
lab_python -m lablib.calibrate.bench_report "$LAB_DIR"
