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

# Memory for what a timed window writes: its output goes there and into
# the result folder after the window closed (in the VM the result folder is
# on the host's files).  /dev/shm is a tmpfs on every Linux system.
SCRATCH=
scratch_create() {
	SCRATCH=$(mktemp -d /dev/shm/lab-sweep.XXXXXX) ||
		die "cannot create a scratch folder in /dev/shm"
}

scratch_remove() {
	[ -n "$SCRATCH" ] || return 0
	rm -rf "$SCRATCH"
	SCRATCH=
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

# The guest's requests to the host's files in each timed window.  In the
# VM the root file system is the host's, over 9p: a request waits for the
# host, and under the virtual clock it lasts until the next timer tick, so
# a window that made one did not time the workload alone.  They are
# counted with the 9p:9p_client_req trace event, in a trace instance of
# the sweep's own that records only while a window is open; the count is
# the events written, those the buffer kept and those it overwrote.
# Without 9p in the kernel (on hardware) P9_DIR stays empty and so do the
# counts.  Every step is a shell builtin: no program is started from the
# host's files to open or close a window.
P9_DIR=
P9_COUNT=
p9_setup() {
	local tracefs=/sys/kernel/tracing
	[ -d "$tracefs/events" ] || mount -t tracefs nodev "$tracefs" 2>/dev/null || return 0
	[ -d "$tracefs/events/9p/9p_client_req" ] || return 0
	P9_DIR=$tracefs/instances/lab-sweep-$$
	mkdir "$P9_DIR" || die "cannot create the trace instance $P9_DIR"
	echo 0 >"$P9_DIR/tracing_on"
	echo 1 >"$P9_DIR/events/9p/9p_client_req/enable"
}

p9_teardown() {
	[ -n "$P9_DIR" ] && [ -d "$P9_DIR" ] || return 0
	echo 0 >"$P9_DIR/tracing_on"
	rmdir "$P9_DIR" || log "warning: could not remove the trace instance $P9_DIR"
	P9_DIR=
}

# Open a window: the instance emptied, then recording.
p9_start() {
	[ -n "$P9_DIR" ] || return 0
	: >"$P9_DIR/trace"
	echo 1 >"$P9_DIR/tracing_on"
}

# Close it: P9_COUNT is then the requests it saw (empty without 9p).
p9_stop() {
	P9_COUNT=
	[ -n "$P9_DIR" ] || return 0
	echo 0 >"$P9_DIR/tracing_on"
	local stats key value n=0
	for stats in "$P9_DIR"/per_cpu/cpu*/stats; do
		while read -r key value _; do
			case $key in entries: | overrun:) n=$((n + value)) ;; esac
		done <"$stats"
	done
	P9_COUNT=$n
}

# record MEASURE UNITS SECONDS SYSCALLS ERRORS DETAIL: one row of raw.csv
# for the current point (LOOPS, or NS in ns mode: the other is empty) and
# REPEAT, with the 9p requests of the window just closed (P9_COUNT).
RAW_HEADER="workload,measure,loops,ns,repeat,units,seconds,syscalls,errors,p9_requests,detail"
record() {
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$WORKLOAD" "$1" "$LOOPS" "$NS" "$REPEAT" \
		"$2" "$3" "$4" "$5" "$P9_COUNT" "$(csv_field "$6")" >>"$LAB_DIR/raw.csv"
}

# timed MEASURE LOG CMD...: run CMD in the work cgroup, output into LOG,
# and record one unit of work with its wall time and system calls.  A
# failing command ends the sweep: its time would not be a measurement.
# The output goes to SCRATCH first and to LOG after the clock stopped: in
# the VM, LOG is on the host's share, and every write to it would be a 9p
# round trip timed with the work.
timed() {
	local measure=$1 logfile=$2 out=$SCRATCH/output.txt t0 t1 c0 c1 status=0
	shift 2
	c0=$(delay_calls)
	p9_start
	t0=$(now_ns)
	in_work_cgroup "$@" >"$out" 2>&1 || status=$?
	t1=$(now_ns)
	p9_stop
	c1=$(delay_calls)
	mv "$out" "$logfile"
	[ "$status" -eq 0 ] ||
		die "$measure run failed (exit status $status) at $POINT; see $logfile"
	record "$measure" 1 "$(ns_to_s $((t1 - t0)))" $((c1 - c0)) 0 ""
}

ns_to_s() {
	awk -v ns="$1" 'BEGIN { printf "%.6f", ns / 1e9 }'
}
