# shellcheck shell=bash disable=SC2034  # TAX_* for the callers
# The taxes (README.md), applied and put back: for guest.sh, which times
# each call under them, and for a workload sweep's TAX (sweep-hooks.sh,
# the sweep's hooks), which runs a workload under one.  Sourced after
# scripts/lib.sh; TAX_SCRATCH is a folder in memory the caller made (the
# audit daemon's log and the trace's copy go there).
#
#   tax_known NAME   status 0 if NAME is one of TAXES_KNOWN
#   tax_why NAME     why NAME cannot be applied here, on stdout (nothing
#                    if it can)
#   tax_on NAME      apply NAME: its machine-wide part (trace events, audit
#                    rules and their daemon, a BPF program) now, and
#                    TAX_CMD set to what the taxed work runs under (seccomp
#                    and strace: a command before the work's, which execs
#                    it; empty for the others).  Each change is put on
#                    TAX_UNDO before it is made.
#   tax_off [DIR]    put back what tax_on changed, the newest first; with
#                    DIR, what the tax recorded is kept there first
#                    (trace-raw_syscalls.dat, for KernelShark;
#                    audit-FORM.log)
#   tax_measure CMD...  run the timed command in the caller's process group,
#                    stopped with it (lab_supervise's worker)
#
# pti and retpoline are a boot's own (spectre_v2=retpoline, pti=on on the
# kernel's command line): tax_on checks nothing and changes nothing, and
# tax_why says if the boot is not under them.
#
# With TAX_HERE=1 (run.sh --here: the running kernel of a machine others
# use, not the lab's VM) three taxes take a form that leaves the machine's
# own set-up alone: trace enables the events in a trace instance of its
# own in the tracefs TAX_TRACEFS names (tax_tracefs finds or mounts it),
# not through trace-cmd, which resets the top instance and needs
# kernel.ftrace_enabled writable; bpftrace runs the program with the
# running kernel's BTF and starts the command itself once the probe is
# attached (bpftrace -c); the audit rules name only TAX_AUDIT_EXE's calls
# (-F exe=), and audit is refused where a daemon of the machine's runs.
TAXES_KNOWN=(none seccomp-linear seccomp-tree seccomp-args seccomp-nocache
	seccomp-linear-nocache seccomp-tree-nocache trace strace strace-one audit-one
	audit-all bpftrace pti retpoline)
# The call of the *-one taxes: getppid alone (the calibration's call).
TAX_ONE_CALLS=getppid TAX_ONE_NR=110
TAX_SECCOMP=$LAB_ROOT/userspace/tax/seccomptax
# What a staged root needs to run TAX_CMD (lablib.sweep.stage --program):
# strace where PATH finds it, as hook_begin (sweep-hooks.sh) looks it up
# (none without strace: the strace taxes then say so in tax_why).
TAX_PROGRAMS=("$TAX_SECCOMP")
if command -v strace >/dev/null; then
	TAX_PROGRAMS+=("$(readlink -f "$(command -v strace)")")
fi
TAX_CMD=()
TAX_UNDO=()
TAX_NAME=
TAX_HERE=${TAX_HERE:-}
TAX_TRACEFS=${TAX_TRACEFS:-}
TAX_TRACEFS_MOUNTED=
TAX_AUDIT_EXE=${TAX_AUDIT_EXE:-}
# On the running kernel bpftrace starts the taxed command itself (-c, one
# command line: here.sh's callcost); TAX_BPFTRACE_BESIDE=1 runs it beside
# whatever runs, as in the lab's VM (a sweep's windows, each a shell).
TAX_BPFTRACE_BESIDE=${TAX_BPFTRACE_BESIDE:-}

tax_known() { [[ " ${TAXES_KNOWN[*]} " == *" $1 "* ]]; }

tax_why() {
	case $1 in
	none) ;;
	seccomp-*)
		[ -x "$TAX_SECCOMP" ] || echo "seccomptax is not built (libseccomp-dev missing?)" ;;
	trace)
		if [ -n "$TAX_HERE" ]; then
			if [ -z "$TAX_TRACEFS" ]; then
				echo "no tracefs mounted, and it cannot be (CONFIG_FTRACE)"
			elif [ ! -d "$TAX_TRACEFS/events/raw_syscalls" ]; then
				echo "the kernel has no raw_syscalls events (CONFIG_FTRACE_SYSCALLS)"
			elif [ ! -d "$TAX_TRACEFS/instances" ]; then
				echo "the kernel's tracefs has no instances"
			fi
		elif ! command -v trace-cmd >/dev/null; then
			echo "trace-cmd is not installed"
		elif [ ! -d /sys/kernel/tracing/events/raw_syscalls ]; then
			echo "the kernel has no raw_syscalls events (CONFIG_FTRACE_SYSCALLS)"
		fi
		;;
	strace | strace-one) command -v strace >/dev/null || echo "strace is not installed" ;;
	audit-*)
		if ! command -v auditctl >/dev/null; then
			echo "auditctl is not installed (auditd)"
		elif ! auditctl -s >/dev/null 2>&1; then
			echo "the kernel has no audit (CONFIG_AUDIT): VARIANT=tax"
		elif [ -n "$TAX_HERE" ] && ! auditctl -s | grep -q '^pid 0$'; then
			echo "an audit daemon runs ($(auditctl -s | grep '^pid ')): its rules are the machine's"
		fi
		;;
	bpftrace)
		if ! command -v bpftrace >/dev/null; then
			echo "bpftrace is not installed"
		else
			tax_bpftrace_command
			"${BPFTRACE[@]}" -e 'BEGIN { exit(); }' >/dev/null 2>&1 ||
				echo "bpftrace cannot load a program (CONFIG_BPF_SYSCALL, BPF_EVENTS): VARIANT=tax"
		fi
		;;
	pti)
		grep -qw pti /proc/cpuinfo ||
			echo "page-table isolation is not in force in this boot (pti=on; CONFIG_MITIGATION_PAGE_TABLE_ISOLATION: VARIANT=tax)"
		;;
	retpoline)
		grep -q "Retpolines" /sys/devices/system/cpu/vulnerabilities/spectre_v2 2>/dev/null ||
			echo "retpolines are not in force in this boot (spectre_v2=retpoline; CONFIG_MITIGATION_RETPOLINE: VARIANT=tax)"
		;;
	*) echo "'$1' is not a tax; the taxes: ${TAXES_KNOWN[*]}" ;;
	esac
}

tax_on() {
	TAX_NAME=$1 TAX_CMD=()
	case $1 in
	none | pti | retpoline) ;;
	seccomp-nocache) TAX_CMD=("$TAX_SECCOMP" -q -f none --no-cache --) ;;
	seccomp-*-nocache) TAX_CMD=("$TAX_SECCOMP" -q -f "${1:8:-8}" --no-cache --) ;;
	seccomp-*) TAX_CMD=("$TAX_SECCOMP" -q -f "${1#seccomp-}" --) ;;
	# -I1: strace dies of a stop's SIGTERM (by default, writing to a file,
	# it blocks it, and a tracee it had yet to start then ran on: NOTES.md).
	strace) TAX_CMD=(strace -I1 -f -qq -o /dev/null --) ;;
	strace-one)
		TAX_CMD=(strace -I1 -f -qq --seccomp-bpf -e trace="$TAX_ONE_CALLS" -o /dev/null --) ;;
	trace)
		if [ -n "$TAX_HERE" ]; then
			tax_trace_instance_on
		else
			TAX_UNDO+=("trace-cmd reset >/dev/null")
			trace-cmd start -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit >/dev/null
		fi
		;;
	audit-*) tax_audit_on "${1#audit-}" ;;
	bpftrace) tax_bpftrace_on ;;
	*) die "'$1' is not a tax; the taxes: ${TAXES_KNOWN[*]}" ;;
	esac
}

tax_off() {
	local i keep=${1:-}
	if [ -n "$keep" ] && [ -z "$TAX_HERE" ]; then
		case $TAX_NAME in
		trace)
			trace-cmd stop >/dev/null
			# The last of the ring buffer: what the tax recorded.
			trace-cmd extract -o "$TAX_SCRATCH/trace.dat" >/dev/null &&
				cp "$TAX_SCRATCH/trace.dat" "$keep/trace-raw_syscalls.dat"
			;;
		esac
	fi
	for ((i = ${#TAX_UNDO[@]} - 1; i >= 0; i--)); do
		eval "${TAX_UNDO[i]}" || log "could not put back: ${TAX_UNDO[i]}"
	done
	TAX_UNDO=()
	case $TAX_NAME:$keep:$TAX_HERE in
	audit-*:?*:) cp "$TAX_SCRATCH/audit/audit.log" "$keep/$TAX_NAME.log" 2>/dev/null || true ;;
	esac
	TAX_NAME='' TAX_CMD=()
}

# The records go to an audit daemon of the tax's own, writing into memory
# (without one the kernel prints each record on the console): at most two
# logs of 8 MB, the older one dropped (audit-all writes some 500 bytes a
# call).
tax_audit_on() {
	local pid backlog enabled exe=() dir=$TAX_SCRATCH/audit
	mkdir -p "$dir"
	if [ -n "$TAX_HERE" ]; then
		# Audit as it was: the daemon turns it on.
		enabled=$(auditctl -s | sed -n 's/^enabled //p')
		TAX_UNDO+=("auditctl -e ${enabled:-0} >/dev/null")
		[ -z "$TAX_AUDIT_EXE" ] || exe=(-F "exe=$TAX_AUDIT_EXE")
	fi
	printf '%s\n' "log_file = $dir/audit.log" "log_format = RAW" "flush = none" \
		"max_log_file = 8" "max_log_file_action = rotate" "num_logs = 2" \
		"space_left = 2" "admin_space_left = 1" "space_left_action = ignore" \
		"admin_space_left_action = ignore" "disk_full_action = ignore" \
		"disk_error_action = ignore" >"$dir/auditd.conf"
	auditd -n -c "$dir" >"$dir/auditd.out" 2>&1 &
	pid=$!
	TAX_UNDO+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null || true")
	until auditctl -s 2>/dev/null | grep -q "^pid $pid\$"; do
		kill -0 "$pid" 2>/dev/null || die "auditd ended: $(cat "$dir/auditd.out")"
		sleep 0.1
	done
	# Debian's own rules' backlog (audit.rules: -b 8192), the kernel's put back.
	backlog=$(auditctl -s | sed -n 's/^backlog_limit //p')
	TAX_UNDO+=("auditctl -D >/dev/null; auditctl -b ${backlog:-64} >/dev/null")
	auditctl -D >/dev/null
	auditctl -b 8192 >/dev/null
	if [ "$1" = one ]; then
		auditctl -a always,exit -F arch=b64 -S "$TAX_ONE_CALLS" "${exe[@]}" -k lab-tax >/dev/null
	else
		auditctl -a always,exit -F arch=b64 -S all "${exe[@]}" -k lab-tax >/dev/null
	fi
}

# bpftrace reads the tracepoint's layout with the kernel's headers: the
# lab kernel's source and build tree (the guest has no /lib/modules/*/build).
# tax_bpftrace_command sets BPFTRACE, the command that runs it so; env
# execs bpftrace, so that a background one's $! is bpftrace's own pid.
# On the running kernel (TAX_HERE) bpftrace reads its BTF.
tax_bpftrace_command() {
	if [ -n "$TAX_HERE" ]; then
		BPFTRACE=(bpftrace)
	else
		BPFTRACE=(env BPFTRACE_KERNEL_SOURCE="$LAB_BUILD/src/linux-source-6.12"
			BPFTRACE_KERNEL_BUILD="$(kobj_of "$("$LAB_TOOL" variant)")" bpftrace)
	fi
}

TAX_BPFTRACE_PROGRAM='tracepoint:raw_syscalls:sys_enter { @calls = count(); }'

tax_bpftrace_on() {
	local pid out=$TAX_SCRATCH/bpftrace.txt
	if [ -n "$TAX_HERE" ] && [ -z "$TAX_BPFTRACE_BESIDE" ]; then
		# bpftrace starts the command once the probe is attached, and
		# ends with it.  -c takes the command as one line, its program by
		# its full path (a name PATH finds twice is refused); bpftrace's
		# messages and the command's go to bpftrace.err.
		# shellcheck disable=SC2016  # the wrapper's own $1, $2
		TAX_CMD=(bash -c 'out=$1 prog=$2; shift 2; set -- "$(command -v "$1")" "${@:2}"
exec bpftrace -q -o "$out" -e "$prog" -c "$*" 2>>"$out.err"' tax-bpftrace "$out"
			"$TAX_BPFTRACE_PROGRAM")
		return 0
	fi
	tax_bpftrace_command
	"${BPFTRACE[@]}" -e "$TAX_BPFTRACE_PROGRAM" >"$out" 2>&1 &
	pid=$!
	TAX_UNDO+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null || true")
	# Attached once it says so.
	until grep -q Attaching "$out"; do
		kill -0 "$pid" 2>/dev/null || die "bpftrace ended: $(cat "$out")"
		sleep 0.1
	done
}

# The trace tax on the running kernel: the raw_syscalls events recorded
# into the ring buffer of an instance of the tax's own (every process's
# calls, as trace-cmd start records them), which goes with the tax.
tax_trace_instance_on() {
	local dir=$TAX_TRACEFS/instances/lab-tax-$$
	TAX_UNDO+=("tax_trace_instance_off $dir")
	mkdir "$dir"
	echo 1 >"$dir/events/raw_syscalls/sys_enter/enable"
	echo 1 >"$dir/events/raw_syscalls/sys_exit/enable"
}

tax_trace_instance_off() {
	[ -d "$1" ] || return 0
	echo 0 >"$1/events/raw_syscalls/enable"
	echo 0 >"$1/tracing_on"
	rmdir "$1"
}

# tax_tracefs: TAX_TRACEFS set to where tracefs is mounted (the first of
# /proc/self/mounts), else mounted on /sys/kernel/tracing by this shell
# (TAX_TRACEFS_MOUNTED=1; tax_tracefs_put unmounts it); empty if it cannot
# be.
tax_tracefs() {
	local _dev dir type _rest
	TAX_TRACEFS=
	while read -r _dev dir type _rest; do
		if [ "$type" = tracefs ]; then
			TAX_TRACEFS=$dir
			return 0
		fi
	done </proc/self/mounts
	if [ -d /sys/kernel/tracing ] && mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
		TAX_TRACEFS=/sys/kernel/tracing TAX_TRACEFS_MOUNTED=1
	fi
}

tax_tracefs_put() {
	[ -n "$TAX_TRACEFS_MOUNTED" ] || return 0
	umount "$TAX_TRACEFS" || log "could not unmount $TAX_TRACEFS"
	TAX_TRACEFS='' TAX_TRACEFS_MOUNTED=''
}

# tax_measure CMD...: the timed command, in this worker's process group.  A
# stop asked before it began (the supervisor's signal found nothing to
# stop) kills it now; after a stop, what is left of it (a tracee strace
# let go of) is killed too.
tax_measure() {
	local pid status=0
	"$@" &
	pid=$!
	! lab_stopping || tax_kill_the_rest
	wait "$pid" || status=$?
	! lab_stopping || tax_kill_the_rest
	return "$status"
}

# tax_kill_the_rest: SIGKILL to every other process of this worker's group
# (the timed command, its tracer and tracees) until none is left: one that
# forked while the group was walked is found the next time.
tax_kill_the_rest() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		lab_signal_group KILL "$$"
		tax_group_alone && return 0
		sleep 0.1
	done
	log "warning: processes of group $$ outlived SIGKILL"
}

# tax_group_alone: no process but this one (and its zombies) is in its group.
tax_group_alone() {
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
