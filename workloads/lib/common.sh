# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# What every workload of workloads/sweep.sh uses: the delay module's knobs,
# the cgroup the delayed tasks run in, the page cache, timed runs and the
# raw.csv they append to.  Sourced by sweep.sh after scripts/lib.sh.

DELAY_DIR=/sys/module/delay
DELAY_LOOPS=$DELAY_DIR/parameters/loops
DELAY_CGROUP=$DELAY_DIR/parameters/cgroup
DELAY_NS=$DELAY_DIR/parameters/ns
DELAY_SYSCALLS=$DELAY_DIR/parameters/syscalls
DELAY_CALLS=$DELAY_DIR/stats/calls

# The cgroup v2 of the delayed tasks: WORK_CG is its directory,
# WORK_CG_PATH its name from the cgroup2 root (what the module takes).
WORK_CG=
WORK_CG_PATH=

# Where cgroup2 is mounted; mounts it on /sys/fs/cgroup if nothing is.
cgroup2_root() {
	local mnt
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -z "$mnt" ]; then
		mnt=/sys/fs/cgroup
		mkdir -p "$mnt"
		mount -t cgroup2 none "$mnt" || die "cannot mount cgroup2 on $mnt"
	fi
	printf '%s\n' "$mnt"
}

# Create the cgroup every timed run starts in.
work_cgroup_create() {
	local root
	root=$(cgroup2_root)
	WORK_CG_PATH=/lab-sweep-$$
	WORK_CG=$root$WORK_CG_PATH
	mkdir "$WORK_CG" || die "cannot create the cgroup $WORK_CG"
}

# Stop whatever still runs in the cgroup and remove it.  Idempotent.
work_cgroup_remove() {
	[ -n "$WORK_CG" ] && [ -d "$WORK_CG" ] || return 0
	local i
	if [ -e "$WORK_CG/cgroup.kill" ]; then
		echo 1 >"$WORK_CG/cgroup.kill" 2>/dev/null || true
	else
		xargs -r kill -KILL <"$WORK_CG/cgroup.procs" 2>/dev/null || true
	fi
	for i in $(seq 50); do
		rmdir "$WORK_CG" 2>/dev/null && break
		[ "$i" -lt 50 ] || log "warning: could not remove $WORK_CG"
		sleep 0.1
	done
	WORK_CG=
}

# Run a command inside the work cgroup (it and all its children).  A
# subshell moves itself in and execs the command: no new shell is started
# from the host's files, which under the virtual clock would put a 9p read
# into the timed window.
in_work_cgroup() {
	(echo "$BASHPID" >"$WORK_CG/cgroup.procs" && exec "$@")
}

delay_calls() { cat "$DELAY_CALLS"; }

# Write a module parameter; the module refuses bad values with an errno.
# A newline, so that an empty value is a write too.
delay_write() {
	printf '%s\n' "$2" >"$DELAY_DIR/parameters/$1"
}

delay_set() {
	delay_write "$1" "$2" || die "the delay module refused $1='$2'"
}

# The Linux tree kbuild and grep work on: a bad --tree, or a missing
# default one.
check_tree() {
	[ ! -f "$TREE/Makefile" ] || [ ! -d "$TREE/kernel" ] || return 0
	[ "$TREE" != "$DEFAULT_TREE" ] ||
		die "no Linux tree at '$TREE' (give one with --tree, or run 'make kernel')"
	bad_arg "--tree wants a Linux source tree, not '$TREE' (no Linux tree there)"
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# Wall time in ns (bash's own clock, no fork).
now_ns() {
	local t=${EPOCHREALTIME/[.,]/}
	printf '%s\n' "${t}000"
}

# CSV-quote one field.
csv_field() {
	local s=${1//\"/\"\"}
	printf '"%s"' "$s"
}

# record MEASURE UNITS SECONDS SYSCALLS ERRORS DETAIL: one row of raw.csv
# for the current point (LOOPS, or NS in ns mode: the other is empty) and
# REPEAT.
RAW_HEADER="workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,detail"
record() {
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$WORKLOAD" "$1" "$LOOPS" "$NS" "$REPEAT" \
		"$2" "$3" "$4" "$5" "$(csv_field "$6")" >>"$LAB_DIR/raw.csv"
}

# timed MEASURE LOG CMD...: run CMD in the work cgroup, output into LOG,
# and record one unit of work with its wall time and system calls.  A
# failing command ends the sweep: its time would not be a measurement.
# With cmd --in-memory (MEM_DIR, a tmpfs) the output goes there first and
# to LOG after the clock stopped: in the VM, LOG is on the host's share,
# and every write to it would be a 9p round trip timed with the work.
timed() {
	local measure=$1 logfile=$2 out=$2 t0 t1 c0 c1 status=0
	shift 2
	[ -z "${MEM_DIR:-}" ] || out=$MEM_DIR/output.txt
	c0=$(delay_calls)
	t0=$(now_ns)
	in_work_cgroup "$@" >"$out" 2>&1 || status=$?
	t1=$(now_ns)
	c1=$(delay_calls)
	[ "$out" = "$logfile" ] || mv "$out" "$logfile"
	[ "$status" -eq 0 ] ||
		die "$measure run failed (exit status $status) at $POINT; see $logfile"
	record "$measure" 1 "$(ns_to_s $((t1 - t0)))" $((c1 - c0)) 0 ""
}

ns_to_s() {
	awk -v ns="$1" 'BEGIN { printf "%.6f", ns / 1e9 }'
}
