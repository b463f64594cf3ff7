#!/usr/bin/env bash
# In the guest (root, lab kernel), for run.sh: every case of the peers
# experiment in one boot, both system calls in each, into the result
# folder run.sh made:
#   DIR/runs/CASE-SYSCALL/   raw.csv (call,ns) and meta.json from percall
#   DIR/guest/meta.json      this kernel, the tools' versions, what exists
#   DIR/skipped.csv          case,syscall,reason of every case not measured
#   DIR/tools/               perf's counts (perf-SYSCALL.csv)
#
#   guest.sh DIR [N [WARMUP]]   N timed calls per case (10000), WARMUP (1000)
#
# The delay module is unloaded first and at the end, also when a case fails.
#
# Example:  scripts/vm.sh -- userspace/peers/guest.sh results/peers-x.incomplete 500
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_guest_args 'N=10000:1 WARMUP=1000:0' "$@"
percall=$here/percall
lab_built "$LAB_TOOL" "$percall"
lab_root "insmod, module parameters"
grep -q ' syscall_hook_register$' /proc/kallsyms 2>/dev/null ||
	die "this kernel ($(uname -r)) has no syscall hook; boot the lab kernel ('make vm')"
command -v strace >/dev/null || die "strace is missing; run 'make deps'"
ko=$(lab_ko delay)
params=/sys/module/delay/parameters
syscalls=(getppid read)
declare -A nr=([getppid]=110 [read]=0)	# x86-64 system-call numbers

unload() { [ ! -d /sys/module/delay ] || rmmod delay; }
trap 'unload || log "warning: could not unload delay"' EXIT
unload

mkdir -p "$dir/runs" "$dir/tools"
[ -f "$dir/skipped.csv" ] || echo "case,syscall,reason" >"$dir/skipped.csv"
# skip CASE SYSCALL|all REASON: a case not measured, and why.
skip() { lab_skip "$dir/skipped.csv" "$@"; }

# measure CASE SYSCALL [TOOL ARGS... --]: percall under the tool, if any.
# The tool's own arguments end with '--' as strace's and perf's do.
measure() {
	local case=$1 sc=$2
	shift 2
	"$@" "$percall" -n "$N" --warmup "$WARMUP" -C 0 --syscall "$sc" --case "$case" \
		-o "$dir/runs" --name "$case-$sc"
}

# With the module loaded: restrict it to the measured call if it can be.
target() {
	[ -e "$params/syscalls" ] || return 0
	echo "${nr[$1]}" >"$params/syscalls" ||
		die "the delay module refused syscalls=${nr[$1]}"
}

# What this guest offers, for the analysis and the reader.
insmod "$ko" loops=0
has_ns=false has_syscalls=false
[ ! -e "$params/ns" ] || has_ns=true
[ ! -e "$params/syscalls" ] || has_syscalls=true
rmmod delay
seccomp_msg=$(strace --seccomp-bpf -f -qq -o /dev/null -e trace=getppid true 2>&1) ||
	seccomp_msg="strace --seccomp-bpf failed: $seccomp_msg"
perf_msg=
if ! command -v perf >/dev/null; then
	perf_msg="perf is not installed (Debian: linux-perf)"
elif ! perf_out=$(perf stat -x, -e raw_syscalls:sys_enter -- true 2>&1); then
	perf_msg="perf stat -e raw_syscalls:sys_enter failed: $(printf '%s\n' "$perf_out" | head -1)"
fi
mkdir -p "$dir/guest"
"$LAB_TOOL" meta "$dir/guest" peers n:="$N" warmup:="$WARMUP" cpu:=0 \
	strace="$(strace -V | head -1)" \
	perf="$(perf --version 2>/dev/null || echo none)" \
	seccomp_bpf="${seccomp_msg:-works}" perf_tracepoint="${perf_msg:-works}" \
	module_ns:="$has_ns" module_syscalls:="$has_syscalls" \
	clocksource="$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	-- "$0" "$@"
log "kernel $(uname -r), $(nproc) CPUs; $N calls a case on CPU 0 after $WARMUP"

log "baseline: no module"
for sc in "${syscalls[@]}"; do measure baseline "$sc"; done

log "the lab's delay module"
insmod "$ko" loops=0
$has_syscalls || log "note: the module has no 'syscalls' parameter: it delays every call"
for sc in "${syscalls[@]}"; do target "$sc" && measure module-0 "$sc"; done
echo 1 >"$params/loops"
for sc in "${syscalls[@]}"; do target "$sc" && measure module-loops-1 "$sc"; done
for ns in 1000 10000; do
	if ! $has_ns; then
		skip "module-ns-$ns" all "the delay module has no 'ns' parameter yet ($params/ns)"
		continue
	fi
	echo "$ns" >"$params/ns" || die "the delay module refused ns=$ns"
	for sc in "${syscalls[@]}"; do target "$sc" && measure "module-ns-$ns" "$sc"; done
done
# The same 10 us at exit (strace's delay_exit), and slept instead of spun
# (strace's tracee waits off the CPU while the tracer sleeps).
if [ ! -e "$params/where" ] || [ ! -e "$params/mode" ]; then
	skip module-exit-ns-10000 all "the delay module has no 'where' and 'mode' parameters yet"
	skip module-sleep-ns-10000 all "the delay module has no 'where' and 'mode' parameters yet"
	skip module-every2-ns-10000 all "the delay module has no 'where' and 'mode' parameters yet"
elif $has_ns; then
	echo 10000 >"$params/ns"
	echo exit >"$params/where"
	for sc in "${syscalls[@]}"; do target "$sc" && measure module-exit-ns-10000 "$sc"; done
	echo entry >"$params/where"
	if echo sleep >"$params/mode"; then
		for sc in "${syscalls[@]}"; do target "$sc" && measure module-sleep-ns-10000 "$sc"; done
	else
		skip module-sleep-ns-10000 all "the delay module cannot sleep on this kernel (no RCU Tasks)"
	fi
	# Every other call (the 1st, 3rd ...), as strace's when=1+2.
	echo spin >"$params/mode"
	if [ -e "$params/every" ]; then
		echo 2 >"$params/every"
		for sc in "${syscalls[@]}"; do target "$sc" && measure module-every2-ns-10000 "$sc"; done
	else
		skip module-every2-ns-10000 all "the delay module has no 'every' parameter yet"
	fi
fi
rmmod delay

log "strace ($(strace -V | head -1))"
for sc in "${syscalls[@]}"; do
	# -f: follow children; -qq: no attach/exit lines; -o /dev/null: the
	# trace is formatted and thrown away.  Without seccomp every call of
	# the tracee stops twice (entry, exit); -e trace= only picks what is
	# printed.
	st=(strace -f -qq -o /dev/null -e "trace=$sc")
	measure strace-0 "$sc" "${st[@]}" --
	for d in 1ns 1us 10us; do
		measure "strace-$d" "$sc" "${st[@]}" -e "inject=$sc:delay_enter=$d" --
	done
	measure strace-exit-10us "$sc" "${st[@]}" -e "inject=$sc:delay_exit=10us" --
	measure strace-every2-10us "$sc" "${st[@]}" -e "inject=$sc:delay_enter=10us:when=1+2" --
done
if [ -n "$seccomp_msg" ]; then
	for c in strace-seccomp-0 strace-seccomp-1us strace-seccomp-10us; do
		skip "$c" all "$seccomp_msg (no CONFIG_SECCOMP in this kernel): strace falls back to stopping every call, which strace-* measures already"
	done
else
	for sc in "${syscalls[@]}"; do
		st=(strace --seccomp-bpf -f -qq -o /dev/null -e "trace=$sc")
		measure strace-seccomp-0 "$sc" "${st[@]}" --
		for d in 1us 10us; do
			measure "strace-seccomp-$d" "$sc" "${st[@]}" -e "inject=$sc:delay_enter=$d" --
		done
	done
fi

log "perf: a syscall tracepoint with a counter attached"
if [ -n "$perf_msg" ]; then
	skip perf-tracepoint all "$perf_msg"
else
	for sc in "${syscalls[@]}"; do
		measure perf-tracepoint "$sc" perf stat -x, -o "$dir/tools/perf-$sc.csv" \
			-e raw_syscalls:sys_enter --
	done
fi
skip bpftrace all "the lab kernel has no BPF (CONFIG_BPF_SYSCALL is off)"

log "baseline again: how far the machine drifted during the run"
for sc in "${syscalls[@]}"; do measure baseline-end "$sc"; done
log "done: $dir"
