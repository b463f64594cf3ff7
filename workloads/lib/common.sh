# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# What every workload of workloads/sweep.sh uses: the cgroup the delayed
# tasks run in, the machine's settings put back, the page cache, timed runs
# and the raw.csv they append to.  Sourced by sweep.sh after scripts/lib.sh;
# the delay itself is the plan's source's (workloads/delay/: delay_set,
# delay_stat, DELAY_CALLS ...).

# The cgroup v2 of the delayed tasks: WORK_CG is its directory,
# WORK_CG_PATH its name from the cgroup2 root.  The module targets
# TARGET_CG_PATH (TARGET_CG its directory): the work cgroup itself, or,
# where the clients are delayed too (WITH_CLIENTS=1, the tax's
# DELAY_CLIENTS), the cgroup that holds it and the clients' beside it.
WORK_CG=
WORK_CG_PATH=
TARGET_CG=
TARGET_CG_PATH=
# A server's clients run outside the work cgroup; in CLIENT_CG when it is
# set (the tax's COUNT_CLIENTS: a cgroup the module counts instead; with
# WITH_CLIENTS, the work cgroup's sibling under the target).
CLIENT_CG=

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

# work_cgroup_create [WITH_CLIENTS]: create the cgroup every timed run
# starts in; with WITH_CLIENTS 1, inside a target cgroup that also holds
# the clients' (server/ and clients/ under /lab-sweep-PID).
work_cgroup_create() {
	local root
	root=$(cgroup2_root)
	TARGET_CG_PATH=/lab-sweep-$$
	TARGET_CG=$root$TARGET_CG_PATH
	mkdir "$TARGET_CG" || die "cannot create the cgroup $TARGET_CG"
	if [ "${1:-0}" -eq 1 ]; then
		WORK_CG_PATH=$TARGET_CG_PATH/server
		CLIENT_CG=$TARGET_CG/clients
		mkdir "$root$WORK_CG_PATH" "$CLIENT_CG" ||
			die "cannot create the cgroups of $TARGET_CG"
	else
		WORK_CG_PATH=$TARGET_CG_PATH
	fi
	WORK_CG=$root$WORK_CG_PATH
}

# Stop whatever still runs in the work cgroup, the clients' and the
# target (each that there is) and remove them.  Idempotent.
work_cgroup_remove() {
	cgroup_remove "$CLIENT_CG"
	CLIENT_CG=
	cgroup_remove "$WORK_CG"
	WORK_CG=
	cgroup_remove "$TARGET_CG"
	TARGET_CG=
}

# cgroup_remove DIR: kill what runs in cgroup DIR and remove it (nothing
# if DIR is empty or gone).
cgroup_remove() {
	[ -n "$1" ] && [ -d "$1" ] || return 0
	local i
	if [ -e "$1/cgroup.kill" ]; then
		echo 1 >"$1/cgroup.kill" 2>/dev/null || true
	else
		xargs -r kill -KILL <"$1/cgroup.procs" 2>/dev/null || true
	fi
	for i in $(seq 50); do
		rmdir "$1" 2>/dev/null && break
		[ "$i" -lt 50 ] || log "warning: could not remove $1"
		sleep 0.1
	done
}

# pin_work: with the plan's WORK_CPUS (lab sweep --here --cpus), this
# shell, and so the work it starts, on those CPUs only; a server's own
# taskset inside it still wins.
pin_work() {
	[ -z "$WORK_CPUS" ] || taskset -p -c "$WORK_CPUS" "$BASHPID" >/dev/null ||
		die "cannot run on CPUs $WORK_CPUS (taskset)"
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

# The workload's files in memory: staging.sh.
# shellcheck source=workloads/lib/staging.sh
. "$LAB_ROOT/workloads/lib/staging.sh"

# window CGROUP OUT CMD...: one timed window, run by a shell of its own: in
# the staged root's bash if there is one (WINDOW_BASH), so that the code
# the window runs is in memory too (the sweep's own bash is the host's: a
# page of it that no earlier step had touched was read over 9p, 17
# requests a window).  It opens the 9p count, reads the clock,
# runs CMD in CGROUP (none if empty) with its output into OUT, reads the
# clock again and closes the count; it prints "t0_ns t1_ns exit_status".
# The C locale first: chroot (the program) runs in the host's root, and
# with the caller's LANG=C.UTF-8 it read the locale's files over 9p.
WINDOW_BASH=(bash)
# What runs the window's shell (timed(): TIMED_TAX).
WINDOW_TAX=()
# shellcheck disable=SC2016  # the window's own code
WINDOW_CODE='export LC_ALL=C
p9=$1 cg=$2 out=$3
shift 3
if [ -n "$p9" ]; then : >"$p9/trace"; echo 1 >"$p9/tracing_on"; fi
t0=${EPOCHREALTIME/[.,]/}
if [ -n "$cg" ]; then
	(echo "$BASHPID" >"$cg/cgroup.procs" && exec "$@") >"$out" 2>&1
else
	"$@" >"$out" 2>&1
fi
status=$?
t1=${EPOCHREALTIME/[.,]/}
if [ -n "$p9" ]; then echo 0 >"$p9/tracing_on"; fi
echo "${t0}000 ${t1}000 $status"'
window() {
	! lab_stopping || return 1
	"${WINDOW_TAX[@]}" "${WINDOW_BASH[@]}" -c "$WINDOW_CODE" window "$P9_DIR" "$@"
}

# Run a command inside the work cgroup (it and all its children).  A
# subshell moves itself in and execs the command: no new shell is started
# from the host's files, which under the virtual clock would put a 9p read
# into the timed window.
in_work_cgroup() {
	(echo "$BASHPID" >"$WORK_CG/cgroup.procs" && exec "$@")
}

# --- The machine's settings a sweep changes, put back however it ends -------
# save_setting FILE: keep FILE's value (a module parameter, a sysctl, a
# debugfs knob) the first time, for restore_settings; status 1 if it
# cannot be read.  set_setting FILE VALUE: save it, then write VALUE and a
# newline (so that an empty value is a write too; a module refuses a bad one
# with an errno).
# restore_settings writes every kept value back, the newest first, and
# says which it could not; forget_settings PREFIX drops those under PREFIX
# (a module unloaded: its parameters went with it).
SAVED_FILES=() SAVED_VALUES=()
save_setting() {
	local f v
	for f in "${SAVED_FILES[@]}"; do [ "$f" != "$1" ] || return 0; done
	v=$(cat "$1") || return 1
	SAVED_FILES+=("$1") SAVED_VALUES+=("$v")
}
set_setting() {
	save_setting "$1" || return 1
	printf '%s\n' "$2" >"$1"
}
restore_settings() {
	local i
	for ((i = ${#SAVED_FILES[@]} - 1; i >= 0; i--)); do
		printf '%s\n' "${SAVED_VALUES[i]}" >"${SAVED_FILES[i]}" 2>/dev/null ||
			log "warning: could not put ${SAVED_FILES[i]} back to '${SAVED_VALUES[i]}'"
	done
	SAVED_FILES=() SAVED_VALUES=()
}
forget_settings() {
	local i files=() values=()
	for i in "${!SAVED_FILES[@]}"; do
		[[ ${SAVED_FILES[i]} == "$1"* ]] ||
			{ files+=("${SAVED_FILES[i]}"); values+=("${SAVED_VALUES[i]}"); }
	done
	SAVED_FILES=("${files[@]}") SAVED_VALUES=("${values[@]}")
}

DEFAULT_TREE=$LAB_ROOT/build/src/linux-source-6.12
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

# A window (window(), below) empties the instance and records while it
# runs; p9_stop then sets P9_COUNT to the requests it saw (empty without
# 9p), and p9_keep FILE keeps what they were (the trace's lines), if any.
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

p9_keep() {
	[ -n "$P9_COUNT" ] && [ "$P9_COUNT" -gt 0 ] || return 0
	grep -v '^#' "$P9_DIR/trace" >"$1" || true
}

# record MEASURE UNITS SECONDS SYSCALLS ERRORS DETAIL: one row of raw.csv
# for the current point (LOOPS, or NS in ns mode: the other is empty) and
# REPEAT, with the 9p requests of the window just closed (P9_COUNT); the
# fields in the order of lablib's RAW_COLUMNS, the plan's header.
# Into RECORD_TO in LAB_DIR (the tax's COUNT_CLIENTS: clients.csv).
RECORD_TO=raw.csv
record() {
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$WORKLOAD" "$1" "$LOOPS" "$NS" "$REPEAT" \
		"$2" "$3" "$4" "$5" "$P9_COUNT" "$(csv_field "$6")" >>"$LAB_DIR/$RECORD_TO"
}

# timed MEASURE LOG CMD...: run CMD in the work cgroup, output into LOG,
# and record one unit of work with its wall time and system calls.  A
# failing command ends the sweep: its time would not be a measurement.
# The output goes to SCRATCH first and to LOG after the clock stopped: in
# the VM, LOG is on the host's share, and every write to it would be a 9p
# round trip timed with the work.
timed() {
	local measure=$1 logfile=$2 WINDOW_TAX=("${TIMED_TAX[@]}")
	shift 2
	measured_window "$WORK_CG" "$logfile" "$@" ||
		die "the timed window of $measure at $POINT said nothing"
	[ "$WINDOW_STATUS" -eq 0 ] ||
		die "$measure run failed (exit status $WINDOW_STATUS) at $POINT; see $logfile"
	record "$measure" 1 "$(ns_to_s $((WINDOW_T1 - WINDOW_T0)))" "$WINDOW_CALLS" 0 ""
}

# measured_window CGROUP LOG CMD...: one window (window()) of CMD, in
# CGROUP (none if empty), with the delayed cgroup's system calls counted
# around it.  Sets WINDOW_T0 and WINDOW_T1 (ns), WINDOW_STATUS (CMD's exit
# status), WINDOW_CALLS and P9_COUNT, and keeps CMD's output in LOG, moved
# there once the window is closed.  Status 1 if the window said nothing.
measured_window() {
	local cg=$1 log=$2 out=$SCRATCH/window.txt c0 c1
	shift 2
	c0=$(delay_stat calls)
	WINDOW_STATUS=
	read -r WINDOW_T0 WINDOW_T1 WINDOW_STATUS < <(window "$cg" "$out" "$@")
	[ -n "$WINDOW_STATUS" ] || return 1
	p9_stop
	c1=$(delay_stat calls)
	WINDOW_CALLS=$((c1 - c0))
	mv "$out" "$log"
	p9_keep "${log%.txt}-9p.txt"
}

# ns_to_s NS: NS in seconds, to the microsecond (half up).
ns_to_s() {
	local us=$((($1 + 500) / 1000))
	printf '%d.%06d' $((us / 1000000)) $((us % 1000000))
}
