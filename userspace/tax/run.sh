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
#   CALLS=NAMES    the calls, names or numbers of the 64-bit table
#                  (default: the 99 calls the workloads make that
#                  callcost takes)
#   TAXES=LIST     the taxes (default all; guest.sh lists them)
#   BATCHES=21     timed batches per call and tax
#   PER_BATCH=200  calls per batch
#   WORKLOADS=LIST the workloads run under the taxes (default
#                  grep,cmd,redis,apache,kbuild; empty: none)
#   REPEATS=2      timed runs a point of their sweeps
#   JOBS=N         their sweeps at once (default lablib.tax.workloads': the
#                  cores)
#   HOST_TAXES=LIST the taxes A/B'd on the host's clock (default
#                  pti,seccomp-linear; empty: none)
#   HOST_WORKLOAD=grep  HOST_RUNS=10  their workload, boots a side
#   RESUME=DIR     carry on a run stopped after its table (results/
#                  latest-tax): no boot, DIR's table kept, then its
#                  workloads and A/B with the run's own WORKLOADS, REPEATS
#                  and HOST_* (from its meta.json; each given here wins),
#                  each sweep and A/B already in DIR not run again
#
# Example:  CALLS=getppid,read TAXES=none,seccomp-linear,pti userspace/tax/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The tax variant unless VARIANT is given, chosen before lib.sh sets the
# object tree from it.
VARIANT=${VARIANT:-tax}
. "$here/../../scripts/lib.sh"
lab_help "$@"
[ $# -eq 0 ] || bad_arg "takes no arguments, not '$1': CALLS, TAXES, BATCHES, PER_BATCH, WORKLOADS, REPEATS, JOBS, HOST_*, RESUME come from the environment"

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
WORKLOADS=${WORKLOADS-grep,cmd,redis,apache,kbuild}
HOST_TAXES=${HOST_TAXES-pti,seccomp-linear} HOST_WORKLOAD=${HOST_WORKLOAD:-grep}
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
	lab_begin "$LAB_ROOT/results" tax
	"$LAB_TOOL" meta "$LAB_DIR" tax calls="$numbers" taxes="$TAXES" batches:="$BATCHES" \
		calls_per_batch:="$PER_BATCH" variant="$VARIANT" workloads="$WORKLOADS" \
		repeats:="$REPEATS" host_taxes="$HOST_TAXES" host_workload="$HOST_WORKLOAD" \
		host_runs:="$HOST_RUNS" -- "$0" "$@"
	boot base "$(IFS=,; echo "${base[*]}")"
	[ ${#audit[@]} -eq 0 ] || boot audit "$(IFS=,; echo "${audit[*]}")"
	for tax in "${others[@]}"; do boot "$tax" "$tax"; done
	lab_commit tax
	lab_analyse 1
fi
[ -z "$WORKLOADS" ] ||
	lab_python -m lablib.tax.workloads "$LAB_DIR" --workloads "$WORKLOADS" -r "$REPEATS" \
		${JOBS:+-j "$JOBS"}
[ -z "$HOST_TAXES" ] ||
	lab_python -m lablib.tax.hostclock "$LAB_DIR" --taxes "$HOST_TAXES" --workload "$HOST_WORKLOAD" \
		-n "$HOST_RUNS" -r "$REPEATS"
