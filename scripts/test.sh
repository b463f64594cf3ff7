#!/usr/bin/env bash
# make test's passes, three at a time: the stock guest pass in front (its
# output here), and beside it the host tests, and the timing pass on the
# virtual clock followed by the rt variant's build and boot.  A guest pass
# keeps about one host CPU busy, its tests being mostly one process at a
# time; run one after the other the passes left the machine's second CPU
# idle for most of half an hour.  The background passes' output goes to
# LOGS/host.log and LOGS/later.log, is shown when the stock pass ends (all
# of a pass that failed, the end of one that passed), and a line says when
# each ended.  Exit status 0 when all passed, 1 otherwise.
#
#   scripts/test.sh
#
# Example:  make test      (builds and sets up what the passes need first)
#
# Environment (the Makefile sets them): PY (the virtualenv's Python), VM
# (scripts/vm.sh), TEST_LOGS (default build/test-logs), TEST_CLOCK (the
# timing pass's clock, default virtual), VARIANT_TESTS (the rt
# boot's tests), VM_TIMEOUT (the stock pass's limit, default 7200 s).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lab_help "$@"
[ $# -eq 0 ] || bad_arg "no arguments (see --help)"
PY=${PY:-$LAB_ROOT/.venv/bin/python}
VM=${VM:-$LAB_ROOT/scripts/vm.sh}
LOGS=${TEST_LOGS:-$LAB_BUILD/test-logs}
TEST_CLOCK=${TEST_CLOCK:-virtual}
VARIANT_TESTS=${VARIANT_TESTS:-tests/guest/test_variants.py}
[ -x "$PY" ] || die "no $PY: run 'make venv'"
mkdir -p "$LOGS"
cd "$LAB_ROOT"
declare -A pids

host_pass() {
	"$PY" -m pytest -q --durations=10 tests/host
}
stock_pass() {
	VM_KLOG=$LOGS/stock-kernel.log VM_TIMEOUT=${VM_TIMEOUT:-7200} "$VM" -- \
		"$PY" -m pytest -q --durations=15 -p no:cacheprovider -m 'not timing' tests/guest
}
# The timing tests (their figures are instruction counts on the virtual
# clock, whatever else the host runs), then the rt kernel and its boot.
# The rt boot asserts no time: it runs on the host's clock, its vCPUs on
# one host thread as under the virtual clock (2 min 55 s where the
# virtual clock took 13 min 30 s: its workers spin in the hook for half
# a minute of guest time, which icount emulates instruction by
# instruction; multi-threaded TCG once lost that guest without a word,
# 2026-11-28).  (Called where a failure does not stop the shell: each
# step says so.)
later_passes() {
	VM_KLOG=$LOGS/timing-kernel.log VM_CLOCK=$TEST_CLOCK "$VM" -- \
		"$PY" -m pytest -q --durations=5 -p no:cacheprovider -m timing tests/guest || return
	make --no-print-directory VARIANT=rt kernel module || return
	# shellcheck disable=SC2086  # a list of test files
	VM_KLOG=$LOGS/rt-kernel.log VARIANT=rt VM_CLOCK=host VM_TCG_THREAD=single "$VM" -- \
		"$PY" -m pytest -q --durations=5 -p no:cacheprovider -m 'not timing' $VARIANT_TESTS
}

# in_background NAME FUNCTION: FUNCTION's output to LOGS/NAME.log, a line
# here when it ends; its status is this function's.
in_background() {
	local start=$SECONDS status=0
	"$2" >"$LOGS/$1.log" 2>&1 </dev/null || status=$?
	log "$1: ended with status $status after $((SECONDS - start)) s ($LOGS/$1.log)"
	return "$status"
}

log "beside the stock guest pass: the host tests ($LOGS/host.log), the timing" \
	"and rt passes ($LOGS/later.log)"
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
