# shellcheck shell=bash disable=SC2034  # TAX_* for the callers
# The taxes (README.md), applied and put back: for guest.sh, which times
# each call under them, and for a workload sweep's --tax (workloads/
# sweep.sh), which runs a workload under one.  Sourced after
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
#
# pti and retpoline are a boot's own (spectre_v2=retpoline, pti=on on the
# kernel's command line): tax_on checks nothing and changes nothing, and
# tax_why says if the boot is not under them.
TAXES_KNOWN=(none seccomp-linear seccomp-tree seccomp-args seccomp-nocache
	seccomp-linear-nocache seccomp-tree-nocache trace strace strace-one audit-one
	audit-all bpftrace pti retpoline)
# The call of the *-one taxes: getppid alone (the calibration's call).
TAX_ONE_CALLS=getppid TAX_ONE_NR=110
TAX_SECCOMP=$LAB_ROOT/userspace/tax/seccomptax
# What a staged root needs to run TAX_CMD (lablib.sweep.stage --program):
# strace where PATH finds it, as tax_begin (workloads/sweep.sh) looks it up.
TAX_PROGRAMS=("$TAX_SECCOMP" "$(readlink -f "$(command -v strace)" 2>/dev/null)")
TAX_CMD=()
TAX_UNDO=()
TAX_NAME=

tax_known() { [[ " ${TAXES_KNOWN[*]} " == *" $1 "* ]]; }

tax_why() {
	case $1 in
	none) ;;
	seccomp-*)
		[ -x "$TAX_SECCOMP" ] || echo "seccomptax is not built (libseccomp-dev missing?)" ;;
	trace)
		if ! command -v trace-cmd >/dev/null; then
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
		TAX_UNDO+=("trace-cmd reset >/dev/null")
		trace-cmd start -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit >/dev/null
		;;
	audit-*) tax_audit_on "${1#audit-}" ;;
	bpftrace) tax_bpftrace_on ;;
	*) die "'$1' is not a tax; the taxes: ${TAXES_KNOWN[*]}" ;;
	esac
}

tax_off() {
	local i keep=${1:-}
	if [ -n "$keep" ]; then
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
	case $TAX_NAME:$keep in
	audit-*:?*) cp "$TAX_SCRATCH/audit/audit.log" "$keep/$TAX_NAME.log" 2>/dev/null || true ;;
	esac
	TAX_NAME='' TAX_CMD=()
}

# The records go to an audit daemon of the tax's own, writing into memory
# (without one the kernel prints each record on the console): at most two
# logs of 8 MB, the older one dropped (audit-all writes some 500 bytes a
# call).
tax_audit_on() {
	local pid backlog dir=$TAX_SCRATCH/audit
	mkdir -p "$dir"
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
		auditctl -a always,exit -F arch=b64 -S "$TAX_ONE_CALLS" -k lab-tax >/dev/null
	else
		auditctl -a always,exit -F arch=b64 -S all -k lab-tax >/dev/null
	fi
}

# bpftrace reads the tracepoint's layout with the kernel's headers: the
# lab kernel's source and build tree (the guest has no /lib/modules/*/build).
# tax_bpftrace_command sets BPFTRACE, the command that runs it so; env
# execs bpftrace, so that a background one's $! is bpftrace's own pid.
tax_bpftrace_command() {
	BPFTRACE=(env BPFTRACE_KERNEL_SOURCE="$LAB_BUILD/src/linux-source-6.12"
		BPFTRACE_KERNEL_BUILD="$(kobj_of "$("$LAB_TOOL" variant)")" bpftrace)
}

tax_bpftrace_on() {
	local pid out=$TAX_SCRATCH/bpftrace.txt
	tax_bpftrace_command
	"${BPFTRACE[@]}" -e 'tracepoint:raw_syscalls:sys_enter { @calls = count(); }' \
		>"$out" 2>&1 &
	pid=$!
	TAX_UNDO+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null || true")
	# Attached once it says so.
	until grep -q Attaching "$out"; do
		kill -0 "$pid" 2>/dev/null || die "bpftrace ended: $(cat "$out")"
		sleep 0.1
	done
}
