#!/usr/bin/env bash
# On the measured kernel (in the VM, or on a machine booted into it), for
# run.sh: the msgq program with the module's two buffer strategies, each
# run under perf stat, then one run of each under perf record, into the
# result folder run.sh made:
#   DIR/runs/STRATEGY-rK/     one msgq folder a run (messages.csv, meta.json)
#   DIR/perf/STRATEGY-rK.csv  perf stat -x, of that run
#   DIR/profile/STRATEGY*     perf record -e cpu-clock -a -g of one more run:
#                             .data (perf report -i), -symbols.txt (flat, per symbol), callers.txt
#                             (call graphs), the run's folder in run/
#   DIR/guest/meta.json       this kernel and machine, perf's version, the
#                             events asked for and those perf does not know
#   DIR/skipped.csv           what,reason of everything not measured
#
#   guest.sh DIR [RUNS [N [MSGQ-OPTIONS...]]]
#   RUNS rounds (default 5); in each, one run of N messages (default 30000)
#   per strategy, dynamic then static, the module loaded afresh for each.
#   MSGQ-OPTIONS go to every msgq run (--size, --rate, -C ...).
#
# The msgq module is unloaded first and at the end, also when a run fails.
#
# Example:  scripts/vm.sh -- userspace/msgq/guest.sh results/msgq-profile-x.incomplete 1 2000
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
args=("$@")
lab_guest_args 'RUNS=5:1 N=30000:1 MSGQ-OPTIONS...' "$@"
set -- "${LAB_REST[@]}"
msgq=$here/msgq
lab_built "$LAB_TOOL" "$msgq"
lab_root "insmod, perf -a"
ko=$(lab_ko msgq)
strategies=(dynamic static)
# Software events count everywhere; the hardware ones need a PMU, which
# QEMU TCG does not emulate (perf says <not supported>), and mem-loads and
# mem-stores exist only where the CPU's PMU has them (Intel): perf refuses
# a name it does not know, so those are left out and named in skipped.csv.
wanted=(task-clock context-switches cpu-migrations page-faults
	cycles:u cycles:k instructions:u instructions:k mem-loads mem-stores)

unload() { [ ! -d /sys/module/msgq ] || rmmod msgq; }
trap 'unload || log "warning: could not unload msgq"' EXIT
unload

mkdir -p "$dir/runs" "$dir/perf" "$dir/profile" "$dir/guest" "$dir/warmup"
[ -f "$dir/skipped.csv" ] || echo "what,reason" >"$dir/skipped.csv"
skip() { lab_skip "$dir/skipped.csv" "$@"; }

command -v perf >/dev/null || die "perf is missing; run 'make deps' (Debian: linux-perf)"
events=()
for ev in "${wanted[@]}"; do
	if perf stat -x, -e "$ev" -o /dev/null -- true >/dev/null 2>&1; then
		events+=("$ev")
	else
		skip "$ev" "perf $(perf --version | cut -d' ' -f3) on this machine does not know the event (no such PMU event)"
	fi
done
[ ${#events[@]} -gt 0 ] || die "perf stat counts none of ${wanted[*]}"
evlist=$(IFS=,; printf '%s' "${events[*]}")

"$LAB_TOOL" meta "$dir/guest" msgq-profile runs:="$RUNS" n:="$N" cpus:="$(nproc)" \
	perf="$(perf --version)" events="$evlist" wanted="$(IFS=,; printf '%s' "${wanted[*]}")" \
	msgq_options="$*" -- "$0" "${args[@]}"
log "kernel $(uname -r), $(nproc) CPUs; $RUNS rounds of $N messages a strategy; perf counts $evlist"

msgq_options=("$@")
# perf counts only while the messages flow: it starts with its counters off
# (-D -1) and msgq turns them on and off through these FIFOs.
fifos=$(mktemp -d)
trap 'rm -rf "$fifos"; unload || log "warning: could not unload msgq"' EXIT
mkfifo "$fifos/ctl" "$fifos/ack"
control=(-D -1 --control "fifo:$fifos/ctl,$fifos/ack")
# One msgq run of COUNT messages with the module loaded afresh for STRATEGY,
# under the perf command PERF... if given: run STRATEGY COUNT FOLDER NAME [PERF...]
run() {
	local strategy=$1 count=$2 parent=$3 name=$4
	local ctl=()
	shift 4
	[ $# -eq 0 ] || ctl=(--perf-control "$fifos/ctl,$fifos/ack")
	insmod "$ko" alloc="$strategy"
	"$@" "$msgq" -n "$count" -o "$parent" --name "$name" -q "${ctl[@]}" \
		"${msgq_options[@]}" >/dev/null
	rmmod msgq
}

# The first pass through every path is slow under the emulator: one short
# run of each strategy first, kept apart.
for s in "${strategies[@]}"; do
	run "$s" $((N < 2000 ? N : 2000)) "$dir/warmup" "$s"
done

for ((r = 1; r <= RUNS; r++)); do
	log "round $r of $RUNS"
	for s in "${strategies[@]}"; do
		run "$s" "$N" "$dir/runs" "$s-r$r" perf stat "${control[@]}" -x, -e "$evlist" \
			-o "$dir/perf/$s-r$r.csv" --
	done
done

log "where the time goes: perf record -e cpu-clock -a -g, one run a strategy"
for s in "${strategies[@]}"; do
	# perf.data goes to the guest's own /tmp first: written over 9p while
	# perf samples every CPU, the writes fed the samples and a run of
	# seconds took many minutes.  The report is made there too.
	data=$fifos/$s.data
	run "$s" "$N" "$dir/profile/run" "$s" perf record "${control[@]}" -q -e cpu-clock -F 999 \
		-a -g -o "$data" --
	# Flat: each symbol's share of all samples, kernel and user, all CPUs.
	perf report -i "$data" --stdio --no-children --sort dso,sym -g none \
		--percent-limit 0.3 >"$dir/profile/$s-symbols.txt" 2>/dev/null
	# Who calls the hot ones: call graphs of the symbols above 2 %.
	perf report -i "$data" --stdio --no-children --sort sym -g caller,0.5,callee,function \
		--percent-limit 2 >"$dir/profile/$s-callers.txt" 2>/dev/null
	# Per task: the senders, the daemon, the receivers, idle and the rest.
	perf report -i "$data" --stdio --no-children --sort comm -g none \
		>"$dir/profile/$s-tasks.txt" 2>/dev/null
	cp "$data" "$dir/profile/$s.data"
done
log "done: $dir"
