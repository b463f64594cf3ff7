#!/usr/bin/env bash
# In the guest, for run.sh: time each call of CALLS under each tax of
# TAXES (callcost, a child per call), the tax applied before and put back
# after, whatever ends the run.  Appends "tax,nr,batch,calls,ns_per_call"
# rows to DIR/raw.csv and a "tax,reason" row to DIR/skipped.csv for each
# tax this kernel or machine cannot apply (each file begun if absent), and
# writes the boot's DIR/boots/BOOT/meta.json.
#
#   guest.sh DIR BOOT CALLS TAXES BATCHES PER_BATCH
#
# The taxes (README.md): none, seccomp-linear, seccomp-tree, seccomp-args
# (seccomptax's allowlists), seccomp-nocache, seccomp-linear-nocache,
# seccomp-tree-nocache (with no answer cached: seccomptax --no-cache),
# trace (the raw_syscalls events into the ring buffer, trace-cmd start),
# strace (every call stopped), strace-one (--seccomp-bpf, only getppid
# stopped), audit-one and audit-all (a rule on a few calls, on every
# call), bpftrace (a count on raw_syscalls:sys_enter); pti and retpoline
# are the boot's own (run.sh boots with pti=on, spectre_v2=retpoline):
# the calls run untaxed, checked to be under the mitigation.
#
# Example (in the guest):  guest.sh results/tax-x.incomplete base 39,110 none,trace 21 200
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

[ $# -eq 6 ] || bad_arg "usage: guest.sh DIR BOOT CALLS TAXES BATCHES PER_BATCH"
dir=$1 boot=$2 calls=$3 taxes=$4 batches=$5 per_batch=$6
# shellcheck source=userspace/tax/taxes.sh
. "$here/taxes.sh"
IFS=, read -r -a tax_list <<<"$taxes"
for tax in "${tax_list[@]}"; do
	tax_known "$tax" || bad_arg "unknown tax '$tax'; the taxes: ${TAXES_KNOWN[*]}"
done
# A signal stops the worker's calls; its EXIT trap then puts every tax back.
lab_supervise "$@"
callcost=$here/callcost
TAX_SCRATCH=$(mktemp -d)
trap 'tax_off; rm -rf "$TAX_SCRATCH"' EXIT

mkdir -p "$dir/boots/$boot"
"$LAB_TOOL" meta "$dir/boots/$boot" tax boot="$boot" calls="$calls" taxes="$taxes" \
	batches:="$batches" calls_per_batch:="$per_batch" cpu:=0 -- "$0" "$@"
[ -e "$dir/raw.csv" ] || echo "tax,nr,batch,calls,ns_per_call" >"$dir/raw.csv"
[ -e "$dir/skipped.csv" ] || echo "tax,reason" >"$dir/skipped.csv"
n=0
for tax in "${tax_list[@]}"; do
	n=$((n + 1))
	why=$(tax_why "$tax")
	if [ -n "$why" ]; then
		lab_skip "$dir/skipped.csv" "$tax" "$why"
		continue
	fi
	log "[$n/${#tax_list[@]}] $tax: calls $calls"
	# strace --seccomp-bpf stops every call of a tracee until its first
	# traced one: each child makes that one first.
	first=()
	[ "$tax" != strace-one ] || first=(--first "$TAX_ONE_NR")
	# The rows go to memory while the calls are timed, to the host's files after.
	tax_on "$tax"
	tax_measure "${TAX_CMD[@]}" taskset -c 0 "$callcost" -C none -s "$calls" -n "$batches" \
		--calls "$per_batch" "${first[@]}" >"$TAX_SCRATCH/rows.csv"
	tax_off "$dir"
	tail -n +2 "$TAX_SCRATCH/rows.csv" | sed "s/^/$tax,/" >>"$dir/raw.csv"
done
