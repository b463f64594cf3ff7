#!/usr/bin/env bash
# make test's passes in three lanes on the host's two CPUs: in front, a
# stock guest pass (its output here); beside it the host tests; and a lane
# of the timing pass on the virtual clock, then a second stock boot with
# the guest tests of STOCK_LATER_TESTS (files or pytest node ids), which
# the front pass leaves out.  A guest pass keeps about one host CPU busy,
# its tests being mostly one process at a time; the second stock boot
# moves work from the longest lane to one that would end long before it.
# The background lanes' output goes to LOGS/host.log and LOGS/later.log,
# is shown when the front pass ends (all of a lane that failed, the end of
# one that passed), and a line says when each ended.  Exit status 0 when
# all passed, 1 otherwise.
#
# Only the stock kernel, which make has built: the other variants, rt
# among them, boot in make test-debug.  On a fresh machine their builds
# start from an empty ccache, and one alone would take half of make test's
# half hour: the stock kernel's took 889 s of both CPUs there,
# and the rt tree has as many objects (1,366).
#
#   scripts/test.sh
#
# Example:  make test      (builds and sets up what the passes need first)
#
# Environment (the Makefile sets them): PY (the virtualenv's Python), VM
# (scripts/vm.sh), TEST_LOGS (default build/test-logs), TEST_CLOCK (the
# timing pass's clock, default virtual), STOCK_LATER_TESTS (the second
# stock boot's test files), VM_TIMEOUT (the front pass's limit, default
# 7200 s), VM_TCG_THREAD (default single: one host thread a guest).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lab_help "$@"
[ $# -eq 0 ] || bad_arg "no arguments (see --help)"
PY=${PY:-$LAB_ROOT/.venv/bin/python}
VM=${VM:-$LAB_ROOT/scripts/vm.sh}
LOGS=${TEST_LOGS:-$LAB_BUILD/test-logs}
TEST_CLOCK=${TEST_CLOCK:-virtual}
# Each guest on one host thread: three lanes on two CPUs leave a guest's
# second vCPU thread waiting for a CPU while the first spins for it (the
# kernel's locks, its calls to the other CPU), and a fresh clone's make
# test took 1,377 s and 40 CPU-minutes so against 1,559 s and 46 with a
# thread a vCPU (tests/NOTES.md, "One host thread a guest").
export VM_TCG_THREAD=${VM_TCG_THREAD:-single}
# The kbuild sweep (six minutes of the front pass's thirty-one),
# nginx's and the dropped toy workload's, and the interfaces' fuzzing go
# with them, so that the lanes end together: a guest on one host thread
# leaves the other CPU idle once it runs alone (tests/README.md, "make
# test").
STOCK_LATER_TESTS=${STOCK_LATER_TESTS:-tests/guest/test_irqhook.py tests/guest/test_msgq.py tests/guest/test_peers.py tests/guest/test_rtcompare.py tests/guest/test_sweep.py::test_small_sweep[kbuild-series1] tests/guest/test_sweep_nginx.py tests/guest/test_sweep_catalog.py tests/guest/test_interfaces_stress.py}
# Split on blanks, never expanded as a pattern (a node id has brackets).
read -r -a later_tests <<<"$STOCK_LATER_TESTS"

[ -x "$PY" ] || die "no $PY: run 'make venv'"
mkdir -p "$LOGS"
cd "$LAB_ROOT"
declare -A pids

host_pass() {
	"$PY" -m pytest -q --durations=10 tests/host
}
stock_pass() {
	local f ignore=()
	for f in "${later_tests[@]}"; do ignore+=("--deselect=$f"); done
	VM_KLOG=$LOGS/stock-kernel.log VM_TIMEOUT=${VM_TIMEOUT:-7200} "$VM" -- \
		"$PY" -m pytest -q --durations=15 -p no:cacheprovider -m 'not timing' \
		"${ignore[@]}" tests/guest
}
# The timing tests (their figures are instruction counts on the virtual
# clock, whatever else the host runs), then the second stock boot, which
# runs whatever the timing pass did.
later_passes() {
	local status=0
	VM_KLOG=$LOGS/timing-kernel.log VM_CLOCK=$TEST_CLOCK "$VM" -- \
		"$PY" -m pytest -q --durations=5 -p no:cacheprovider -m timing tests/guest ||
		status=1
	# Those whose files exist: a lab without an experiment has not its
	# tests either.
	local f files=()
	for f in "${later_tests[@]}"; do [ ! -e "${f%%::*}" ] || files+=("$f"); done
	[ ${#files[@]} -eq 0 ] ||
		VM_KLOG=$LOGS/stock-later-kernel.log "$VM" -- "$PY" -m pytest -q --durations=5 \
			-p no:cacheprovider -m 'not timing' "${files[@]}" || status=1
	return "$status"
}

# in_background NAME FUNCTION: FUNCTION's output to LOGS/NAME.log, a line
# here when it ends; its status is this function's.
in_background() {
	local start=$SECONDS status=0
	"$2" >"$LOGS/$1.log" 2>&1 </dev/null || status=$?
	log "$1: ended with status $status after $((SECONDS - start)) s ($LOGS/$1.log)"
	return "$status"
}

log "beside the stock guest pass: the host tests ($LOGS/host.log); the timing pass," \
	"then the stock boot of $STOCK_LATER_TESTS ($LOGS/later.log)"
in_background host host_pass &
pids=([host]=$!)
in_background later later_passes &
pids[later]=$!
start=$SECONDS stock=0
stock_pass || stock=$?
log "stock: ended with status $stock after $((SECONDS - start)) s"

failed=()
[ "$stock" -eq 0 ] || failed+=(stock)
for pass in host later; do
	status=0
	wait "${pids[$pass]}" || status=$?
	if [ "$status" -eq 0 ]; then
		log "$pass: passed; the end of $LOGS/$pass.log:"
		tail -n 15 "$LOGS/$pass.log"
	else
		log "$pass: failed ($status); $LOGS/$pass.log:"
		cat "$LOGS/$pass.log"
		failed+=("$pass")
	fi
done
[ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]}"
log "all passed"
