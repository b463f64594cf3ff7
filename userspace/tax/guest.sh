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
TAXES_KNOWN=(none seccomp-linear seccomp-tree seccomp-args seccomp-nocache
	seccomp-linear-nocache seccomp-tree-nocache trace strace strace-one audit-one
	audit-all bpftrace pti retpoline)
IFS=, read -r -a tax_list <<<"$taxes"
for tax in "${tax_list[@]}"; do
	[[ " ${TAXES_KNOWN[*]} " == *" $tax "* ]] ||
		bad_arg "unknown tax '$tax'; the taxes: ${TAXES_KNOWN[*]}"
done
# A signal stops the worker's calls; its EXIT trap then puts every tax back.
lab_supervise "$@"
callcost=$here/callcost
seccomptax=$here/seccomptax
scratch=$(mktemp -d)
undo=()
# What a tax changed, put back in the reverse order; on any exit.
put_back() {
	local i
	for ((i = ${#undo[@]} - 1; i >= 0; i--)); do
		eval "${undo[i]}" || log "could not put back: ${undo[i]}"
	done
	undo=()
}
trap 'put_back; rm -rf "$scratch"' EXIT

# The call of the *-one taxes: getppid alone (the calibration's call).
ONE_CALLS=getppid ONE_NR=110

# measure CMD...: the timed command, in this worker's process group.  A
# stop asked before it began (the supervisor's signal found nothing to
# stop) kills it now; after a stop, what is left of it (a tracee strace
# let go of) is killed too.
measure() {
	local pid status=0
	"$@" &
	pid=$!
	! lab_stopping || kill_the_rest
	wait "$pid" || status=$?
	! lab_stopping || kill_the_rest
	return "$status"
}

# kill_the_rest: SIGKILL to every other process of this worker's group
# (the timed command, its tracer and tracees) until none is left: one that
# forked while the group was walked is found the next time.
kill_the_rest() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		lab_signal_group KILL "$$"
		group_alone && return 0
		sleep 0.1
	done
	log "warning: processes of group $$ outlived SIGKILL"
}

# group_alone: no process but this one (and its zombies) is in its group.
group_alone() {
	local stat line pid rest state pgrp
	for stat in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$stat" || continue
		pid=${line%% *}
		rest=${line##*) }
		read -r state _ pgrp _ <<<"$rest"
		if [ "$pgrp" = "$$" ] && [ "$pid" != "$$" ] && [ "$state" != Z ]; then
			return 1
		fi
	done
}

# Each tax: can_TAX says why it cannot be applied here (nothing if it can),
# run_TAX runs its arguments under it (through measure).  What a tax
# changes is put on undo before it is changed.
can_none() { :; }
run_none() { measure "$@"; }
can_seccomp() { [ -x "$seccomptax" ] || echo "seccomptax is not built (libseccomp-dev missing?)"; }
# run_seccomp FORM[-nocache] CMD...
run_seccomp() {
	local form=${1%-nocache} cache=()
	[ "$form" = "$1" ] || cache=(--no-cache)
	measure "$seccomptax" -q -f "$form" "${cache[@]}" -- "${@:2}"
}
can_trace() {
	command -v trace-cmd >/dev/null || { echo "trace-cmd is not installed"; return; }
	[ -d /sys/kernel/tracing/events/raw_syscalls ] ||
		echo "the kernel has no raw_syscalls events (CONFIG_FTRACE_SYSCALLS)"
}
run_trace() {
	undo+=("trace-cmd reset >/dev/null")
	trace-cmd start -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit >/dev/null
	measure "$@"
	trace-cmd stop >/dev/null
	# The last of the ring buffer, for KernelShark: what the tax recorded.
	trace-cmd extract -o "$scratch/trace.dat" >/dev/null
	cp "$scratch/trace.dat" "$dir/trace-raw_syscalls.dat"
	put_back
}
can_strace() { command -v strace >/dev/null || echo "strace is not installed"; }
# -I1: strace dies of the stop's SIGTERM (by default, writing to a file, it
# blocks it, and a tracee it had yet to start then ran on: NOTES.md).
run_strace() { measure strace -I1 -f -qq -o /dev/null -- "$@"; }
run_strace_one() {
	measure strace -I1 -f -qq --seccomp-bpf -e trace="$ONE_CALLS" -o /dev/null -- "$@"
}
can_audit() {
	command -v auditctl >/dev/null || { echo "auditctl is not installed (auditd)"; return; }
	auditctl -s >/dev/null 2>&1 || echo "the kernel has no audit (CONFIG_AUDIT): VARIANT=tax"
}
# The records go to an audit daemon of the run's own, writing into memory
# (without one the kernel prints each record on the console).
run_audit() {
	local pid backlog
	mkdir -p "$scratch/audit"
	printf '%s\n' "log_file = $scratch/audit/audit.log" "log_format = RAW" \
		"flush = none" "max_log_file_action = ignore" "space_left = 2" \
		"admin_space_left = 1" "space_left_action = ignore" \
		"admin_space_left_action = ignore" "disk_full_action = ignore" \
		"disk_error_action = ignore" >"$scratch/audit/auditd.conf"
	auditd -n -c "$scratch/audit" >"$scratch/audit/auditd.out" 2>&1 &
	pid=$!
	undo+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null || true")
	until auditctl -s 2>/dev/null | grep -q "^pid $pid\$"; do
		kill -0 "$pid" 2>/dev/null || die "auditd ended: $(cat "$scratch/audit/auditd.out")"
		sleep 0.1
	done
	# Debian's own rules' backlog (audit.rules: -b 8192), the kernel's put back.
	backlog=$(auditctl -s | sed -n 's/^backlog_limit //p')
	undo+=("auditctl -D >/dev/null; auditctl -b ${backlog:-64} >/dev/null")
	auditctl -D >/dev/null
	auditctl -b 8192 >/dev/null
	if [ "$1" = one ]; then
		auditctl -a always,exit -F arch=b64 -S "$ONE_CALLS" -k lab-tax >/dev/null
	else
		auditctl -a always,exit -F arch=b64 -S all -k lab-tax >/dev/null
	fi
	measure "${@:2}"
	put_back
	cp "$scratch/audit/audit.log" "$dir/audit-$1.log" 2>/dev/null || true
}
can_bpftrace() {
	command -v bpftrace >/dev/null || { echo "bpftrace is not installed"; return; }
	bpftrace_command
	"${BPFTRACE[@]}" -e 'BEGIN { exit(); }' >/dev/null 2>&1 ||
		echo "bpftrace cannot load a program (CONFIG_BPF_SYSCALL, BPF_EVENTS): VARIANT=tax"
}
# bpftrace reads the tracepoint's layout with the kernel's headers: the
# lab kernel's source and build tree (the guest has no /lib/modules/*/build).
# bpftrace_command sets BPFTRACE, the command that runs it so; env execs
# bpftrace, so that a background one's $! is bpftrace's own pid.
bpftrace_command() {
	BPFTRACE=(env BPFTRACE_KERNEL_SOURCE="$LAB_BUILD/src/linux-source-6.12"
		BPFTRACE_KERNEL_BUILD="$(kobj_of "$("$LAB_TOOL" variant)")" bpftrace)
}
run_bpftrace() {
	local pid
	bpftrace_command
	"${BPFTRACE[@]}" -e 'tracepoint:raw_syscalls:sys_enter { @calls = count(); }' \
		>"$scratch/bpftrace.txt" 2>&1 &
	pid=$!
	undo+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null || true")
	# Attached once it says so.
	until grep -q Attaching "$scratch/bpftrace.txt"; do
		kill -0 "$pid" 2>/dev/null || die "bpftrace ended: $(cat "$scratch/bpftrace.txt")"
		sleep 0.1
	done
	measure "$@"
	put_back
}

# The mitigations of the boot's command line: in force or not.
can_pti() {
	grep -qw pti /proc/cpuinfo ||
		echo "page-table isolation is not in force in this boot (pti=on; CONFIG_MITIGATION_PAGE_TABLE_ISOLATION: VARIANT=tax)"
}
can_retpoline() {
	grep -q "Retpolines" /sys/devices/system/cpu/vulnerabilities/spectre_v2 2>/dev/null ||
		echo "retpolines are not in force in this boot (spectre_v2=retpoline; CONFIG_MITIGATION_RETPOLINE: VARIANT=tax)"
}

# check TAX: why TAX cannot be applied here, on stdout; nothing if it can.
# apply TAX CMD...: CMD under TAX.
check() {
	case $1 in
	none) can_none ;;
	seccomp-linear | seccomp-tree | seccomp-args | seccomp-nocache | \
		seccomp-linear-nocache | seccomp-tree-nocache) can_seccomp ;;
	trace) can_trace ;;
	strace | strace-one) can_strace ;;
	audit-one | audit-all) can_audit ;;
	bpftrace) can_bpftrace ;;
	pti) can_pti ;;
	retpoline) can_retpoline ;;
	esac
}
apply() {
	local tax=$1
	shift
	case $tax in
	none | pti | retpoline) run_none "$@" ;;
	seccomp-nocache) run_seccomp none-nocache "$@" ;;
	seccomp-*) run_seccomp "${tax#seccomp-}" "$@" ;;
	trace) run_trace "$@" ;;
	strace) run_strace "$@" ;;
	strace-one) run_strace_one "$@" ;;
	audit-*) run_audit "${tax#audit-}" "$@" ;;
	bpftrace) run_bpftrace "$@" ;;
	esac
}

mkdir -p "$dir/boots/$boot"
"$LAB_TOOL" meta "$dir/boots/$boot" tax boot="$boot" calls="$calls" taxes="$taxes" \
	batches:="$batches" calls_per_batch:="$per_batch" cpu:=0 -- "$0" "$@"
[ -e "$dir/raw.csv" ] || echo "tax,nr,batch,calls,ns_per_call" >"$dir/raw.csv"
[ -e "$dir/skipped.csv" ] || echo "tax,reason" >"$dir/skipped.csv"
n=0
for tax in "${tax_list[@]}"; do
	n=$((n + 1))
	why=$(check "$tax")
	if [ -n "$why" ]; then
		lab_skip "$dir/skipped.csv" "$tax" "$why"
		continue
	fi
	log "[$n/${#tax_list[@]}] $tax: calls $calls"
	# strace --seccomp-bpf stops every call of a tracee until its first
	# traced one: each child makes that one first.
	first=()
	[ "$tax" != strace-one ] || first=(--first "$ONE_NR")
	# The rows go to memory while the calls are timed, to the host's files after.
	apply "$tax" taskset -c 0 "$callcost" -C none -s "$calls" -n "$batches" \
		--calls "$per_batch" "${first[@]}" >"$scratch/rows.csv"
	tail -n +2 "$scratch/rows.csv" | sed "s/^/$tax,/" >>"$dir/raw.csv"
done
