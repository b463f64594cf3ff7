#!/usr/bin/env bash
# On the running kernel, for run.sh --here: time each call of CALLS
# untaxed and under each tax of TAXES in ROUNDS rounds.  A round runs the
# untaxed calls and every tax once, in an order of its own (a shuffle from
# bash's RANDOM seeded with SEED); a run is callcost's BATCHES batches of
# PER_BATCH calls of each call, pinned to CPU, the tax applied before it
# and put back after, whatever ends the run.  The audit taxes, if any, run
# in rounds of their own after all the others, the untaxed calls among
# them again: audit, once enabled, gives every process started after it
# audit's context until the next boot (NOTES.md, "What audit leaves
# behind").  Appends "phase,round,position,tax,nr,batch,calls,ns_per_call"
# rows to DIR/raw.csv (phase: base, or audit for the audit rounds) and a
# "phase,round,position,tax,start_s,end_s,load1" row a run to
# DIR/runs.csv (the run's wall-clock times and the 1-minute load average
# at its start); each file begun if absent.
#
#   here.sh DIR CALLS TAXES ROUNDS BATCHES PER_BATCH SEED CPU
#
# CALLS are numbers of the 64-bit table; TAXES are taxes.sh's, none among
# them, pti and retpoline not (a boot's own), each applied in its form for
# a machine others use (TAX_HERE: taxes.sh).  Needs root.
#
# Example (as root):  here.sh results/tax-x.incomplete 110,0 none,seccomp-linear 6 5 100 1 1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

[ $# -eq 8 ] || bad_arg "usage: here.sh DIR CALLS TAXES ROUNDS BATCHES PER_BATCH SEED CPU"
dir=$1 calls=$2 taxes=$3 rounds=$4 batches=$5 per_batch=$6 seed=$7 cpu=$8
want_uint ROUNDS "$rounds" 1
want_uint BATCHES "$batches" 1
want_uint PER_BATCH "$per_batch" 1
want_uint SEED "$seed"
want_uint CPU "$cpu"
TAX_HERE=1
# shellcheck source=userspace/tax/taxes.sh
. "$here/taxes.sh"
IFS=, read -r -a tax_list <<<"$taxes"
base=() audit=()
for tax in "${tax_list[@]}"; do
	tax_known "$tax" || bad_arg "unknown tax '$tax'; the taxes: ${TAXES_KNOWN[*]}"
	case $tax in
	pti | retpoline) bad_arg "$tax is a boot option, not a tax of the running kernel" ;;
	none) ;;
	audit-*) audit+=("$tax") ;;
	*) base+=("$tax") ;;
	esac
done
[[ ,$taxes, == *,none,* ]] || bad_arg "TAXES must hold none: every tax is measured against it"
[ -d "$dir" ] || die "no result folder $dir (run.sh makes it)"
lab_root "the taxes change the running kernel's filters, tracing and audit"
# A signal stops the worker's calls; its EXIT trap then puts every tax back.
lab_supervise "$@"
callcost=$here/callcost
TAX_AUDIT_EXE=$(readlink -f "$callcost")
TAX_SCRATCH=$(mktemp -d)
trap 'tax_off; tax_tracefs_put; rm -rf "$TAX_SCRATCH"' EXIT
if [[ " ${base[*]} " == *" trace "* ]]; then
	tax_tracefs
	why=$(tax_why trace)
	[ -z "$why" ] || die "trace: $why"
fi

[ -e "$dir/raw.csv" ] || echo "phase,round,position,tax,nr,batch,calls,ns_per_call" >"$dir/raw.csv"
[ -e "$dir/runs.csv" ] || echo "phase,round,position,tax,start_s,end_s,load1" >"$dir/runs.csv"
RANDOM=$seed

# shuffle: ORDER in a random order (Fisher-Yates).
shuffle() {
	local i j t
	for ((i = ${#ORDER[@]} - 1; i > 0; i--)); do
		j=$((RANDOM % (i + 1)))
		t=${ORDER[i]} ORDER[i]=${ORDER[j]} ORDER[j]=$t
	done
}

# run_round PHASE ROUND FIRST TAX...: the untaxed calls and each TAX, once
# each in a shuffled order, ROUND of FIRST .. FIRST + ROUNDS - 1.
run_round() {
	local phase=$1 round=$2 first=$3 tax pos=0 load1 start end extra
	shift 3
	ORDER=(none "$@")
	shuffle
	log "$phase round $((round - first + 1))/$rounds: ${ORDER[*]}"
	for tax in "${ORDER[@]}"; do
		pos=$((pos + 1))
		# strace --seccomp-bpf stops every call of a tracee until its
		# first traced one: each child makes that one first.
		extra=()
		[ "$tax" != strace-one ] || extra=(--first "$TAX_ONE_NR")
		read -r load1 _ </proc/loadavg
		start=$EPOCHREALTIME
		# The rows go to memory while the calls are timed, to DIR after.
		tax_on "$tax"
		if ! tax_measure "${TAX_CMD[@]}" taskset -c "$cpu" "$callcost" -C none -s "$calls" \
			-n "$batches" --calls "$per_batch" "${extra[@]}" >"$TAX_SCRATCH/rows.csv"; then
			die "$tax: the timed run failed$(tail -n 2 "$TAX_SCRATCH"/*.err 2>/dev/null |
				tr '\n' ' ' | sed 's/^/: /')"
		fi
		tax_off ""
		end=$EPOCHREALTIME
		# The rows alone: bpftrace -c ends the command's output with empty lines.
		tail -n +2 "$TAX_SCRATCH/rows.csv" | sed -n "/./s/^/$phase,$round,$pos,$tax,/p" \
			>>"$dir/raw.csv"
		echo "$phase,$round,$pos,$tax,$start,$end,$load1" >>"$dir/runs.csv"
	done
}

for ((r = 1; r <= rounds; r++)); do
	run_round base "$r" 1 "${base[@]}"
done
if [ ${#audit[@]} -gt 0 ]; then
	log "the audit taxes, in rounds of their own: from now on every new process pays audit's context, until the next boot"
	for ((r = rounds + 1; r <= 2 * rounds; r++)); do
		run_round audit "$r" $((rounds + 1)) "${audit[@]}"
	done
fi
