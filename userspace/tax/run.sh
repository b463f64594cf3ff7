#!/usr/bin/env bash
# The system-call tax: what real kernel features add to each system call.
# Boots the lab kernel (VARIANT, default tax: audit, BPF and the
# mitigations compiled in) on the virtual clock with one vCPU and times
# each call of CALLS under each tax of TAXES (guest.sh).  The software
# taxes run in one boot with no mitigation in force (pti=off
# spectre_v2=off), the audit taxes in one of their own with the same
# options (audit, once enabled, taxes every process forked after it:
# NOTES.md, "What audit leaves behind"); pti and retpoline each in a boot
# of their own, the same but for the one mitigation.  Analyses here
# ('lab analyse'): results/tax-<date>-<time>/.  Then each workload of
# WORKLOADS runs untaxed, under each tax and with the delay module
# standing in for it (lablib.tax.workloads: a sweep a boot, hours for all
# five); then HOST_TAXES on the host's clock, a workload without and with
# each, make ab (lablib.tax.hostclock).
#
# With --here there is no VM: the running kernel of this machine, as root,
# on its own clock (here.sh).  The taxes that need no reboot are timed in
# ROUNDS rounds, each the untaxed calls and every tax once in an order of
# its own, the audit taxes in rounds of their own after the others; pti
# and retpoline, a boot's own, are not measured (the report says where
# their figures are).  Results in results/tax-<date>-<time>/ (results/
# latest-tax-here), each figure with its interval.
#
#   run.sh [--here [--virtual DIR]] [-o PARENT] [--no-analysis]
#   --here         no VM: measure the running kernel (needs root)
#   --virtual DIR  with --here: the virtual clock's figures set beside the
#                  host's come from DIR, a tax run of the lab's VM
#                  (default: those the README records)
#   -o, --output PARENT
#                  where the result folder goes (default results)
#   --no-analysis  record only; analyse later with lab analyse DIR
#
#   CALLS=NAMES    the calls, names or numbers of the 64-bit table
#                  (default: the 99 calls the workloads make that
#                  callcost takes; with --here getppid,read,openat,futex,
#                  execve,faccessat2)
#   TAXES=LIST     the taxes (default all; guest.sh lists them; with
#                  --here all but pti and retpoline, those this machine
#                  cannot apply skipped, and one named here that it
#                  cannot apply refused, status 1)
#   BATCHES=21     timed batches per call and tax (a run, with --here)
#   PER_BATCH=200  calls per batch
#   ROUNDS=12      with --here: rounds (at least 6, for a 95 % interval)
#   SEED=N         with --here: the rounds' order (default from the clock)
#   CPU=N          with --here: the CPU the calls run on (default the last)
#   WORKLOADS=LIST the workloads run under the taxes (default all: every
#                  workload of the sweep's catalog; empty: none); with
#                  --here some of grep,cmd,redis (default none): their calls
#                  counted and timed too, then ROUNDS rounds of each under
#                  every tax (lablib.tax.here_workloads)
#   REPEATS=2      timed runs a point of their sweeps (with --here 3)
#   JOBS=N         their sweeps at once (default lablib.tax.workloads': the
#                  cores)
#   HOST_TAXES=LIST the taxes A/B'd on the host's clock, each one of
#                  TAXES (default those of pti,seccomp-linear that TAXES
#                  holds; empty: none)
#   HOST_WORKLOAD=grep  HOST_RUNS=10  their workload, boots a side
#   RESUME=DIR     carry on a run stopped after its table (results/
#                  latest-tax): no boot, DIR's table kept, then its
#                  workloads and A/B with the run's own WORKLOADS, REPEATS
#                  and HOST_* (from its meta.json; each given here wins),
#                  each sweep and A/B already in DIR not run again
#
# Example:  CALLS=getppid,read TAXES=none,seccomp-linear,pti userspace/tax/run.sh
#           CALLS=getppid,read,openat ROUNDS=12 userspace/tax/run.sh --here
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The tax variant unless VARIANT is given, chosen before lib.sh sets the
# object tree from it.
VARIANT=${VARIANT:-tax}
. "$here/../../scripts/lib.sh"
lab_runner_args '--here -o --no-analysis ...' "$@"
virtual=
set -- "${LAB_REST[@]}"
while [ $# -gt 0 ]; do
	case $1 in
	--virtual) want_value "$@"; virtual=$2; shift ;;
	*) bad_arg "unknown argument '$1' (see --help): CALLS, TAXES, BATCHES, PER_BATCH, ROUNDS, WORKLOADS, REPEATS, JOBS, HOST_*, RESUME come from the environment" ;;
	esac
	shift
done

# --- --here: the running kernel -------------------------------------------------------

# audit_context: yes if a process started now gets audit's context (audit
# has been enabled since the boot, and every call of it pays for that), no
# if not, unknown without bpftrace to look.
audit_context() {
	local seen
	seen=$(bpftrace -q -e 'tracepoint:raw_syscalls:sys_enter /pid == cpid/ {
		printf("%d\n", curtask->audit_context != 0); exit(); }' -c "$(type -P true)" \
		2>/dev/null) || seen=
	case ${seen%%$'\n'*} in 1) echo yes ;; 0) echo no ;; *) echo unknown ;; esac
}

# run_here: the taxes that need no reboot, on the running kernel (here.sh).
run_here() {
	local given=${TAXES:+1} numbers tax why list run=() skipped=() name file mitigations=()
	local tracefs
	for name in RESUME HOST_TAXES; do
		[ -z "${!name:-}" ] ||
			bad_arg "$name runs in the lab's VM; --here measures the table alone (unset it)"
	done
	WORKLOADS=${WORKLOADS:-}
	[ -z "$WORKLOADS" ] || [[ ,$WORKLOADS =~ ^(,(grep|cmd|redis))+$ ]] ||
		bad_arg "WORKLOADS wants some of grep,cmd,redis with --here, not '$WORKLOADS'"
	lab_env_uint REPEATS 3 1
	if [ -n "$virtual" ]; then
		[ -f "$virtual/summary.json" ] ||
			bad_arg "--virtual $virtual: no summary.json there (an analysed tax run of the lab's VM)"
		virtual=$(cd "$virtual" && pwd -P)
	fi
	CALLS=${CALLS:-getppid,read,openat,futex,execve,faccessat2}
	TAXES=${TAXES:-none,seccomp-linear,seccomp-tree,seccomp-args,seccomp-nocache,seccomp-linear-nocache,seccomp-tree-nocache,trace,bpftrace,strace,strace-one,audit-one,audit-all}
	lab_env_uint BATCHES 21 1  PER_BATCH 200 1  ROUNDS 12 6  SEED "$((${EPOCHSECONDS:-0} % 100000))" 0 \
		CPU "$(($(nproc) - 1))" 0
	[ -d "/sys/devices/system/cpu/cpu$CPU" ] || bad_arg "CPU=$CPU: this machine has no such CPU"
	[[ ,$TAXES, == *,none,* ]] || bad_arg "TAXES must hold none: every tax is measured against it"
	IFS=, read -r -a list <<<"$TAXES"
	TAX_HERE=1
	# shellcheck source=userspace/tax/taxes.sh
	. "$here/taxes.sh"
	for tax in "${list[@]}"; do
		tax_known "$tax" || bad_arg "TAXES: unknown tax '$tax'; the taxes: ${TAXES_KNOWN[*]}"
	done
	numbers=$(lab_python -m lablib.syscalls numbers "$CALLS") || bad_arg "CALLS: see above"
	lab_root "--here: seccomp filters, tracing, bpftrace and audit on the running kernel"
	lab_built "$LAB_TOOL" "$here/callcost"
	# What this kernel and machine can apply; tracefs mounted for the look
	# if it is not, and unmounted after.
	[[ ,$TAXES, != *,trace,* ]] || tax_tracefs
	tracefs=$TAX_TRACEFS${TAX_TRACEFS_MOUNTED:+ (mounted by the run, unmounted after)}
	for tax in "${list[@]}"; do
		case $tax in
		none) run+=("$tax"); continue ;;
		pti | retpoline) continue ;;
		esac
		why=$(tax_why "$tax")
		if [ -z "$why" ]; then
			run+=("$tax")
		elif [ -n "$given" ]; then
			tax_tracefs_put
			die "$tax cannot be applied here: $why"
		else
			skipped+=("$tax" "$why")
		fi
	done
	tax_tracefs_put
	for file in /sys/devices/system/cpu/vulnerabilities/*; do
		if [ -f "$file" ]; then
			mitigations+=("mitigations.${file##*/}=$(<"$file")")
		fi
	done
	lab_begin "$LAB_PARENT" tax
	if [ -n "$WORKLOADS" ]; then
		# The calls the workloads make, timed besides CALLS.
		log "counting the calls of $WORKLOADS (a sweep each at ns 0)"
		numbers=$(lab_python -m lablib.tax.here_workloads "$LAB_DIR" --workloads "$WORKLOADS" \
			--count-only --besides "$numbers") || die "counting the workloads' calls failed (above)"
	fi
	"$LAB_TOOL" meta "$LAB_DIR" tax here:=true clock=host calls="$numbers" \
		taxes="$(IFS=,; echo "${run[*]}")" taxes_asked="$TAXES" rounds:="$ROUNDS" \
		batches:="$BATCHES" calls_per_batch:="$PER_BATCH" seed:="$SEED" cpu:="$CPU" \
		virtual="$virtual" cpu_model="$(lscpu | sed -n 's/^Model name: *//p')" \
		hypervisor="$(lscpu | sed -n 's/^Hypervisor vendor: *//p')" \
		loadavg="$(cut -d' ' -f1-3 /proc/loadavg)" audit_context="$(audit_context)" \
		tracefs="$tracefs" "${mitigations[@]}" -- "$0" "${LAB_ARGS[@]}"
	echo "tax,reason" >"$LAB_DIR/skipped.csv"
	while [ ${#skipped[@]} -gt 0 ]; do
		lab_skip "$LAB_DIR/skipped.csv" "${skipped[0]}" "${skipped[1]}"
		skipped=("${skipped[@]:2}")
	done
	lab_guest false "$here/here.sh" "$LAB_DIR" "$numbers" "$(IFS=,; echo "${run[*]}")" \
		"$ROUNDS" "$BATCHES" "$PER_BATCH" "$SEED" "$CPU"
	lab_commit tax-here
	lab_analyse "$analysis"
	[ -n "$WORKLOADS" ] || return 0
	if [ "$analysis" -eq 1 ]; then
		lab_python -m lablib.tax.here_workloads "$LAB_DIR" --workloads "$WORKLOADS" \
			--rounds "$ROUNDS" -r "$REPEATS"
	else
		log "the workloads under the taxes, once analysed: python -m lablib.tax.here_workloads $LAB_DIR --workloads $WORKLOADS"
	fi
}

if [ "$vm" = false ]; then
	run_here
	exit 0
fi
[ -z "$virtual" ] || bad_arg "--virtual goes with --here: the VM's own run is the virtual clock's"

# The calls the five workloads make (their sweeps' calls by number, the
# servers' clients' too, 2026-12-04), less those callcost refuses
# (rt_sigreturn, vfork, exit_group: NOTES.md, "Calls that fail fast").
WORKLOAD_CALLS=$(tr -d '\n' <<'CALLS'
read,write,open,close,stat,lstat,poll,lseek,mmap,mprotect,munmap,brk,rt_sigaction,
rt_sigprocmask,ioctl,pread64,writev,access,madvise,dup2,setitimer,getpid,socket,
connect,sendto,recvfrom,recvmsg,shutdown,bind,listen,getsockname,getpeername,
setsockopt,clone,execve,wait4,uname,fcntl,getcwd,chdir,fchdir,rename,mkdir,creat,
unlink,readlink,chmod,umask,getrusage,sysinfo,times,getuid,getgid,setuid,setgid,
geteuid,getegid,getppid,getpgrp,setsid,setgroups,setresuid,setresgid,sigaltstack,
statfs,fstatfs,sched_setscheduler,sched_get_priority_max,sched_get_priority_min,
prctl,arch_prctl,chroot,gettid,futex,sched_setaffinity,sched_getaffinity,
epoll_create,getdents64,set_tid_address,fadvise64,clock_nanosleep,epoll_wait,
epoll_ctl,openat,newfstatat,unlinkat,renameat,symlinkat,pselect6,set_robust_list,
accept4,epoll_create1,dup3,pipe2,prlimit64,getrandom,rseq,clone3,faccessat2
CALLS
)
CALLS=${CALLS:-$WORKLOAD_CALLS}
TAXES=${TAXES:-none,seccomp-linear,seccomp-tree,seccomp-args,seccomp-nocache,seccomp-linear-nocache,seccomp-tree-nocache,trace,strace,strace-one,audit-one,audit-all,bpftrace,pti,retpoline}
RESUME=${RESUME:-}
if [ -n "$RESUME" ]; then
	[ -f "$RESUME/summary.json" ] ||
		bad_arg "RESUME=$RESUME: no tax run with its table there (no summary.json); 'make tax' without RESUME starts one"
	# The stopped run's own settings, each one not given here.
	settings=$(lab_python -m lablib.results settings "$RESUME" workloads repeats host_taxes \
		host_workload host_runs) || bad_arg "RESUME=$RESUME: see above"
	while IFS='=' read -r key value; do
		[ -n "$key" ] || continue
		name=${key^^}
		[ -n "${!name+set}" ] || printf -v "$name" '%s' "$value"
	done <<<"$settings"
fi
WORKLOADS=${WORKLOADS-all}
# The host clock's A/B: by default those of pti and seccomp-linear that
# this run measures; a tax given that it does not measure is refused now,
# not after the boots.
if [ -z "${HOST_TAXES+set}" ]; then
	HOST_TAXES=
	for tax in pti seccomp-linear; do
		[[ ,$TAXES, != *,$tax,* ]] || HOST_TAXES+=${HOST_TAXES:+,}$tax
	done
fi
IFS=, read -r -a host_list <<<"$HOST_TAXES"
for tax in "${host_list[@]}"; do
	[[ ,$TAXES, == *,$tax,* ]] ||
		bad_arg "HOST_TAXES: $tax is not among TAXES ($TAXES): the A/B needs its measured cost"
done
HOST_WORKLOAD=${HOST_WORKLOAD:-grep}
lab_env_uint BATCHES 21 1  PER_BATCH 200 1  REPEATS 2 1  HOST_RUNS 10 2
[ -z "${JOBS:-}" ] || want_uint JOBS "$JOBS" 1
lab_built "$LAB_TOOL" "$here/callcost"
numbers=$(lab_python -m lablib.syscalls numbers "$CALLS") || bad_arg "CALLS: see above"
[[ ,$TAXES, == *,none,* ]] || bad_arg "TAXES must hold none: every tax is measured against it"
[[ ,grep,cmd,redis,apache,kbuild, == *,$HOST_WORKLOAD,* ]] ||
	bad_arg "HOST_WORKLOAD '$HOST_WORKLOAD': one of grep, cmd, redis, apache, kbuild"

# The boots: the software taxes in the base one, the audit taxes in one
# of their own, each mitigation alone in its own (their calls against the
# base boot's untaxed ones).
base=() others=() audit=()
IFS=, read -r -a list <<<"$TAXES"
for tax in "${list[@]}"; do
	case $tax in
	pti | retpoline) others+=("$tax") ;;
	audit-*) audit+=("$tax") ;;
	*) base+=("$tax") ;;
	esac
done
declare -A APPEND=([base]="pti=off spectre_v2=off" [pti]="pti=on spectre_v2=off"
	[retpoline]="pti=off spectre_v2=retpoline")
APPEND[audit]=${APPEND[base]}

export VARIANT VM_CLOCK=${VM_CLOCK:-virtual} VM_CPUS=${VM_CPUS:-1}
boot() {
	local name=$1 taxes=$2
	log "boot $name (${APPEND[$name]}): $taxes"
	VM_APPEND="${VM_APPEND:+$VM_APPEND }${APPEND[$name]}" lab_guest true "$here/guest.sh" \
		"$LAB_DIR" "$name" "$numbers" "$taxes" "$BATCHES" "$PER_BATCH"
}
if [ -n "$RESUME" ]; then
	LAB_DIR=$(cd "$RESUME" && pwd -P)
	log "carrying on in $LAB_DIR: its table kept, its sweeps and A/Bs not run again; WORKLOADS=$WORKLOADS REPEATS=$REPEATS HOST_TAXES=$HOST_TAXES HOST_WORKLOAD=$HOST_WORKLOAD HOST_RUNS=$HOST_RUNS"
else
	log "the $VARIANT kernel and its modules (make kernel module VARIANT=$VARIANT)"
	make -C "$LAB_ROOT" --no-print-directory -s kernel module VARIANT="$VARIANT" >/dev/null
	lab_begin "$LAB_PARENT" tax
	"$LAB_TOOL" meta "$LAB_DIR" tax calls="$numbers" taxes="$TAXES" batches:="$BATCHES" \
		calls_per_batch:="$PER_BATCH" variant="$VARIANT" workloads="$WORKLOADS" \
		repeats:="$REPEATS" host_taxes="$HOST_TAXES" host_workload="$HOST_WORKLOAD" \
		host_runs:="$HOST_RUNS" -- "$0" "${LAB_ARGS[@]}"
	boot base "$(IFS=,; echo "${base[*]}")"
	[ ${#audit[@]} -eq 0 ] || boot audit "$(IFS=,; echo "${audit[*]}")"
	for tax in "${others[@]}"; do boot "$tax" "$tax"; done
	lab_commit tax
	lab_analyse "$analysis"
fi
[ -z "$WORKLOADS" ] ||
	lab_python -m lablib.tax.workloads "$LAB_DIR" --workloads "$WORKLOADS" -r "$REPEATS" \
		${JOBS:+-j "$JOBS"}
[ -z "$HOST_TAXES" ] ||
	lab_python -m lablib.tax.hostclock "$LAB_DIR" --taxes "$HOST_TAXES" --workload "$HOST_WORKLOAD" \
		-n "$HOST_RUNS" -r "$REPEATS"
