#!/usr/bin/env bash
# On the measured kernel (in the VM, or on a machine booted into it), for
# run.sh: RUNS rounds of every SMP benchmark in both placements, and in
# each round the field's own tools on the same spans, into the result
# folder run.sh made:
#   DIR/runs/CASE-rK/      one smp folder a case and round (raw.csv, meta.json)
#   DIR/tools/TOOL-rK.*    perf bench sched pipe (.txt), cyclictest and
#                          ptsematest (.json, .txt), each round
#   DIR/guest/meta.json    this kernel and machine, the tools' versions
#   DIR/skipped.csv        case,reason of everything not measured
#
#   guest.sh DIR [RUNS [N]]   RUNS rounds (5) of N records a case (500)
#
# Example:  scripts/vm.sh -- userspace/smp/guest.sh results/smp-x.incomplete 1 100
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_guest_args 'RUNS=5:1 N=500:1' "$@"
smp=$here/smp
lab_built "$LAB_TOOL" "$smp"
lab_root "real-time priorities, tun, mlockall"
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || die "needs 2 CPUs or more, this machine has $ncpu"

mkdir -p "$dir/runs" "$dir/tools" "$dir/guest"
[ -f "$dir/skipped.csv" ] || echo "case,reason" >"$dir/skipped.csv"
skip() { lab_skip "$dir/skipped.csv" "$@"; }
have() { command -v "$1" >/dev/null; }

# One smp run: bench CASE ROUND BENCH [OPTIONS...]
bench() {
	local case=$1 round=$2
	shift 2
	"$smp" "$@" -n "$N" -o "$dir/runs" --name "$case-r$round" -q
}

"$LAB_TOOL" meta "$dir/guest" smp runs:="$RUNS" n:="$N" cpus:="$ncpu" \
	perf="$(perf --version 2>/dev/null || echo none)" \
	rt_tests="$(cyclictest --help 2>&1 | sed -n 's/^cyclictest V *//p' | head -1)" \
	tun:="$([ -c /dev/net/tun ] && echo true || echo false)" \
	-- "$0" "$@"
log "kernel $(uname -r) ($(uname -v | grep -o 'PREEMPT[_A-Z]*' | head -1)), $ncpu CPUs; $RUNS rounds of $N records"

tun=1
[ -c /dev/net/tun ] || { tun=0; skip tun "no /dev/net/tun (CONFIG_TUN off?)"; }
have perf || skip perf-bench "perf is not installed (Debian: linux-perf)"
have cyclictest || skip rt-tests "rt-tests are not installed (Debian: rt-tests)"
# perf bench's op is one round trip; 20 of them per smp record.
loops=$((20 * N))
pages=(1 16 512)

for ((r = 1; r <= RUNS; r++)); do
	log "round $r of $RUNS"
	for p in cross same; do
		same=()
		[ "$p" = same ] && same=(--same-cpu)
		bench "pipes-$p" "$r" pipes "${same[@]}"
		bench "cv-$p" "$r" cv "${same[@]}"
		[ "$tun" -eq 0 ] || bench "tun-$p" "$r" tun "${same[@]}"
	done
	bench timer "$r" timer
	for pg in "${pages[@]}"; do
		for ((rem = 0; rem < ncpu; rem++)); do
			bench "tlbflush-p$pg-remote$rem" "$r" tlbflush --pages "$pg" --remote "$rem"
		done
	done

	if have perf; then
		# perf bench cannot pin each end: taskset confines both to the CPUs.
		for mode in process threads; do
			t=()
			[ "$mode" = threads ] && t=(-T)
			taskset -c 0,1 perf bench sched pipe "${t[@]}" -l "$loops" \
				>"$dir/tools/perf-pipe-$mode-cross-r$r.txt"
			taskset -c 0 perf bench sched pipe "${t[@]}" -l "$loops" \
				>"$dir/tools/perf-pipe-$mode-same-r$r.txt"
		done
	fi
	if have cyclictest; then
		# One measuring thread on CPU 0 at the top FIFO priority, 1 ms period,
		# 1 us histogram bins up to 10 ms: clock_nanosleep, then POSIX timers.
		ct=(cyclictest -q -m -p 99 -a 0 -t 1 -i 1000 -l "$N" -h 10000)
		"${ct[@]}" --json="$dir/tools/cyclictest-nanosleep-r$r.json" \
			>"$dir/tools/cyclictest-nanosleep-r$r.txt"
		"${ct[@]}" -x --json="$dir/tools/cyclictest-posix-r$r.json" \
			>"$dir/tools/cyclictest-posix-r$r.txt"
		# A mutex hand-off between two FIFO 99 threads on CPU 0.
		ptsematest -q -t 1 -a -p 99 -i 1000 -l "$N" \
			--json="$dir/tools/ptsematest-r$r.json" >"$dir/tools/ptsematest-r$r.txt"
	fi
done
log "done: $dir"
