# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# The server form: what a server workload (apache.sh, redis.sh) shares;
# sourced by it.  The server runs in the work cgroup, the only one the
# delay module delays, pinned to the last CPU; its clients run outside it
# on CPU 0, so that no client is delayed.  Each repeat measures:
#   reply       the reference client (workloads/reqtime: one request at a
#               time, SERVER_REQUESTS of them on a grid of
#               SERVER_INTERVAL_MS, each timed to the ns with the delayed
#               calls made in its span, every reply a row of
#               logs/reply-TAG-REPEAT.csv); the host makes a run's reply
#               of them (lablib: the trimmed mean of the replies that made
#               the fewest calls)
#   saturation  the load generator's knee (the server file's srv_saturate)
#   server      the knee's replies over the CPU time the server took for
#               them (its cgroup's cpu.stat, server_usec)
# Before each run an untimed burst of load (srv_load burst); each point
# starts a fresh server.  Why each is so: NOTES.md, "Apache", where each
# was found.
#
# A server file declares itself (WL_*: lablib.sweep.catalog), names itself
# with server_is NAME PORT PIDFILE LOAD (its name in messages, its port,
# its pid file's name in SRV_DIR, its load generator) and defines:
#   srv_check       its programs are there (die if not)
#   srv_settings    its own meta.json settings, one NAME=VALUE a line
#   srv_prepare     write its configuration into SRV_DIR (a fresh folder),
#                   before staging
#   srv_setup       after staging: the machine settings it changes, and
#                   its own files in LAB_DIR
#   srv_start       start it in the background, as a daemon, with its pid
#                   in SRV_DIR/SRV_PIDFILE; run through "$@" (the cgroup,
#                   the staged root, the CPU), returns when it is started
#   srv_foreground  SRV_FG: the command that runs it in the foreground
#                   (what staging records)
#   srv_ready       READY_CMD: a command that sets the server up once it
#                   answers, before anything is measured, and READY_WANT:
#                   what it prints when the server took it (optional;
#                   none by default)
#   srv_reference   REFERENCE_ARGS: reqtime's protocol and target
#   srv_load small|burst
#                   LOAD_CMD: the load generator (SRV_LOAD: its name) for
#                   a small untimed load (a new server's first, and what
#                   staging records) or the burst before each run
#   srv_saturate TAG NS  the saturation measure of a run (NS: the
#                   reference reply's ns): records its
#                   saturation and server rows (record)
#   srv_finish      put back what it changed (may be empty)
# and the sweep calls the wl_* steps below.  Settings every server takes:
#   SERVER_REQUESTS     reference requests a run (10; 100 on the virtual clock)
#   SERVER_INTERVAL_MS  their grid (SRV_INTERVAL_MS, the server's own
#                       default: 1000 unless it sets another)
#   SERVER_SATURATION   0 leaves the saturation measure out (tailamp)
#   SERVER_FAIR_SERVER  the fair server's runtime while it runs (0: off;
#                       "keep": the machine's own)
#   SERVER_TIME_WAIT    the TIME_WAIT sockets the kernel keeps while it runs
#                       (net.ipv4.tcp_max_tw_buckets; 0 by default, "keep":
#                       the machine's own; workloads/NOTES.md, "No TIME_WAIT")

SERVER_REQUESTS_VIRTUAL=100
# server_is NAME PORT PIDFILE LOAD: the server's name in messages, its
# port on 127.0.0.1, its pid file's name in SRV_DIR, its load generator.
server_is() { SRV_NAME=$1 SRV_PORT=$2 SRV_PIDFILE=$3 SRV_LOAD=$4; }

# wl_describe: what a point does beyond its runs, for --dry-run (a server
# may say more).
wl_describe() { echo ", $(server_requests) replies a reference"; }

server_requests() {
	if [ -n "${SERVER_REQUESTS:-}" ]; then
		echo "$SERVER_REQUESTS"
	elif [ "$RUN_CLOCK" = virtual ]; then
		echo "$SERVER_REQUESTS_VIRTUAL"
	else
		echo 10
	fi
}
SRV_INTERVAL_MS=1000
# Where on the interval's grid a request starts (reqtime --phase): half a
# second after the whole seconds for an interval of whole seconds, else 0.
SERVER_PHASE_MS=0
SERVER_SATURATION=${SERVER_SATURATION:-1}
# The reference client's SCHED_FIFO priority (reqtime --fifo).
REFERENCE_FIFO=10
SERVER_FAIR_SERVER=${SERVER_FAIR_SERVER:-0}
FAIR_SERVER_DIR=/sys/kernel/debug/sched/fair_server
FAIR_SERVER_BEFORE=
[ "$SERVER_FAIR_SERVER" = keep ] || want_uint SERVER_FAIR_SERVER "$SERVER_FAIR_SERVER" 0
SERVER_TIME_WAIT=${SERVER_TIME_WAIT:-0}
[ "$SERVER_TIME_WAIT" = keep ] || want_uint SERVER_TIME_WAIT "$SERVER_TIME_WAIT" 0
TIME_WAIT_SYSCTL=/proc/sys/net/ipv4/tcp_max_tw_buckets
TIME_WAIT_BEFORE=
SRV_DIR=
READY_CMD=() READY_WANT=
srv_ready() { READY_CMD=() READY_WANT=; }

# fair_server_read: FAIR_SERVER_BEFORE, each CPU's fair server runtime
# (ns, comma-separated, in the order of FAIR_SERVER_DIR's listing), or
# "none" where there is none or the kernel lets no one read it (a locked
# down debugfs): then it is left as it is.  Mounts debugfs where it is not
# (the VM) unless only staging.
fair_server_read() {
	if [ -z "$STAGE_ONLY" ] && [ ! -d "$FAIR_SERVER_DIR" ]; then
		lab_debugfs || true
	fi
	local f v values=()
	for f in "$FAIR_SERVER_DIR"/cpu*/runtime; do
		[ -f "$f" ] || break
		if ! read -r v 2>/dev/null <"$f"; then
			log "cannot read $f: the fair server is left as it is"
			values=()
			break
		fi
		values+=("$v")
	done
	FAIR_SERVER_BEFORE=$(IFS=,; echo "${values[*]:-none}")
}

# fair_server_set NS: each CPU's fair server runtime, put back at the end.
fair_server_set() {
	local f
	for f in "$FAIR_SERVER_DIR"/cpu*/runtime; do
		set_setting "$f" "$1" || return 1
	done
}

wl_check() {
	srv_check
	[ -x "$SWEEP_DIR/reqtime" ] || die "workloads/reqtime is not built ('make userspace')"
	command -v taskset >/dev/null || die "taskset (util-linux) is not installed"
	command -v chrt >/dev/null || die "chrt (util-linux) is not installed"
	SERVER_REQUESTS=$(server_requests)
	want_uint SERVER_REQUESTS "$SERVER_REQUESTS" 1
	SERVER_INTERVAL_MS=${SERVER_INTERVAL_MS:-$SRV_INTERVAL_MS}
	want_uint SERVER_INTERVAL_MS "$SERVER_INTERVAL_MS" 1
	SERVER_PHASE_MS=$((SERVER_INTERVAL_MS % 1000 ? 0 : 500))
	case $SERVER_SATURATION in 0 | 1) ;; *) bad_arg "SERVER_SATURATION wants 0 or 1, not '$SERVER_SATURATION'" ;; esac
	fair_server_read
	TIME_WAIT_BEFORE=$(cat "$TIME_WAIT_SYSCTL") || die "cannot read $TIME_WAIT_SYSCTL"
	if (exec 3<>"/dev/tcp/127.0.0.1/$SRV_PORT") 2>/dev/null; then
		die "port $SRV_PORT on 127.0.0.1 is taken; set ${WORKLOAD^^}_PORT"
	fi
	SERVER_CPU=$(($(nproc) - 1))
	CLIENT_CPU=0
}

wl_settings() {
	printf '%s\n' "port=$SRV_PORT" "server_cpu=$SERVER_CPU" "client_cpu=$CLIENT_CPU" \
		"reference=${SERVER_REQUESTS}conns@${SERVER_INTERVAL_MS}ms" \
		"reference_phase_ms=$SERVER_PHASE_MS" "reference_fifo=$REFERENCE_FIFO" \
		"saturation=$SERVER_SATURATION" \
		"fair_server_runtime=$SERVER_FAIR_SERVER" "fair_server_runtime_before=$FAIR_SERVER_BEFORE" \
		"time_wait_buckets=$SERVER_TIME_WAIT" "time_wait_buckets_before=$TIME_WAIT_BEFORE"
	srv_settings
}

wl_prepare() {
	# In memory when the rest is (staging): the server's files too.
	local parent=$WORKDIR
	! stage_wanted || parent=$SCRATCH
	SRV_DIR=$parent/$WORKLOAD
	rm -rf "$SRV_DIR"
	mkdir -p "$SRV_DIR"
	chmod 755 "$parent" "$SRV_DIR"
	srv_prepare
	# The VM may come up with the loopback interface down.
	ip link set lo up 2>/dev/null || true
	# In the VM the server and its clients run from memory (staging), so
	# that no server process reads the host's files during a window.
	if stage_wanted; then stage_workload; fi
	if [ "$SERVER_FAIR_SERVER" != keep ] && [ "$FAIR_SERVER_BEFORE" != none ]; then
		fair_server_set "$SERVER_FAIR_SERVER" ||
			die "cannot set the fair server's runtime to $SERVER_FAIR_SERVER ns ($FAIR_SERVER_DIR)"
	fi
	[ "$SERVER_TIME_WAIT" = keep ] || set_setting "$TIME_WAIT_SYSCTL" "$SERVER_TIME_WAIT" ||
		die "cannot write $TIME_WAIT_SYSCTL"
	srv_setup
	log "$SRV_NAME on 127.0.0.1:$SRV_PORT, CPU $SERVER_CPU; its clients on CPU $CLIENT_CPU"
}

# load_run small|burst: the load generator once (in the staged root if
# there is one); prints what it printed.
load_run() {
	srv_load "$1"
	"${WL_EXEC[@]}" "${LOAD_CMD[@]}" 2>&1
}

# A fresh server for each point (with the point's delay already set).
wl_point_begin() {
	server_stop
	if [ ${#SERVER_TRACER[@]} -gt 0 ]; then
		# The tracer here, the server in the work cgroup: a shell joins it
		# and execs the server.
		# shellcheck disable=SC2016  # the shell's own code
		srv_start "${SERVER_TRACER[@]}" "${WINDOW_BASH[@]}" -c 'echo "$BASHPID" >"$0" && exec "$@"' \
			"$WORK_CG/cgroup.procs" "${WL_EXEC[@]}" taskset -c "$SERVER_CPU" ||
			die "$SRV_NAME did not start under ${SERVER_TRACER[*]} at $POINT; see $SRV_DIR"
	else
		srv_start in_work_cgroup "${WL_EXEC[@]}" "${WL_TAX[@]}" taskset -c "$SERVER_CPU" ||
			die "$SRV_NAME did not start at $POINT; see $SRV_DIR"
	fi
	server_wait_up
	server_ready
	# One untimed load so that the first run does not pay for cold caches.
	load_run small >/dev/null
}

# server_ready: the server file's READY_CMD (srv_ready), if it has one,
# in the staged root if there is one.
server_ready() {
	srv_ready
	[ ${#READY_CMD[@]} -gt 0 ] || return 0
	local out=$LAB_DIR/logs/ready.txt
	if ! "${WL_EXEC[@]}" "${READY_CMD[@]}" >"$out" 2>&1 ||
		{ [ -n "$READY_WANT" ] && [ "$(cat "$out")" != "$READY_WANT" ]; }; then
		die "$SRV_NAME was not set up by ${READY_CMD[*]}: $(head -c 300 "$out")"
	fi
}

# Up: it answers on its port and has written its pid file (server_stop's).
server_wait_up() {
	local i
	for i in $(seq 300); do
		if [ -s "$SRV_DIR/$SRV_PIDFILE" ] &&
			(exec 3<>"/dev/tcp/127.0.0.1/$SRV_PORT") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	die "$SRV_NAME does not answer on port $SRV_PORT; see $SRV_DIR"
}

# Staging (in the VM): the server from its start to its stop, in the
# foreground so that strace follows it until it stops, in a session of its
# own (a server may signal its whole process group), with its load and the
# reference client meanwhile.
WL_STAGE_TREES=()
wl_stage_record() {
	srv_foreground
	stage_record_start "$WORKLOAD" setsid taskset -c "$SERVER_CPU" "${SRV_FG[@]}"
	server_wait_up
	srv_ready
	[ ${#READY_CMD[@]} -eq 0 ] || stage_record ready "${READY_CMD[@]}"
	srv_load small
	stage_record "$SRV_LOAD" "${LOAD_CMD[@]}"
	reference_cmd 2
	stage_record reference "${REFERENCE_CMD[@]}" 3<"${DELAY_CALLS:-/dev/null}"
	server_stop
	stage_record_end "$WORKLOAD"
}

# reference_cmd REQUESTS: REFERENCE_CMD, the reference client on the
# client CPU, as a real-time task, on the interval's grid, after one
# untimed request (workloads/reqtime.c says why each), reading each
# reply's calls from fd 3 where the delay has a file for them.
reference_cmd() {
	srv_reference
	REFERENCE_CMD=(taskset -c "$CLIENT_CPU" "$SWEEP_DIR/reqtime" -n "$1" -i "$SERVER_INTERVAL_MS"
		--phase "$SERVER_PHASE_MS" --warmup 1 ${DELAY_CALLS:+--calls-fd 3}
		--fifo "$REFERENCE_FIFO" "${REFERENCE_ARGS[@]}")
}

# reference_measured LOG: run the reference client, keep its CSV (a row a
# request, workloads/reqtime.c) in LOG and print "replies seconds errors
# syscalls p9_requests": the replies (status 200), the sum of their
# seconds and of their delayed calls ("-" without a count), the other
# requests (failed, or another status) and the window's 9p requests.
# Where the delay has no file of its calls (DELAY_CALLS empty: the BPF
# delay) no reply has a count, and the reply has no model: the window's
# calls are mostly the idle server's between the requests.  No reduction
# here: the host makes the run's reply time of LOG
# (lablib.experiments.workloads: read_raw, clean_reply).
reference_measured() {
	# The window's log ends in .txt, which measured_window takes off to
	# name its 9p log (reply-TAG-9p.txt), and is LOG once the window is
	# closed.
	local txt=${1%.csv}.txt
	reference_cmd "$SERVER_REQUESTS"
	# shellcheck disable=SC2153  # CLIENT_CG is common.sh's
	measured_window "$CLIENT_CG" "$txt" "${WL_EXEC[@]}" "${REFERENCE_CMD[@]}" \
		3<"${DELAY_CALLS:-/dev/null}" ||
		die "the reference window at $POINT said nothing"
	mv "$txt" "$1"
	[ "$WINDOW_STATUS" = 0 ] ||
		die "the reference run failed (exit status $WINDOW_STATUS) at $POINT; see $1"
	# Column 2 is the status; an error row has none (its reason, last, may
	# be quoted with commas in it: no column after it is read).
	awk -F, -v p9="${P9_COUNT:--}" '
	NR == 1 { next }
	$2 == "200" { n++; s += $3; c += $4; if ($4 == "") uncounted = 1; next }
	{ e++ }
	END { printf "%d %.9f %d %s %s\n", n, s, e, (uncounted || !n) ? "-" : sprintf("%.0f", c), p9 }' "$1"
}

wl_run() {
	local tag=$TAG-$REPEAT replies seconds errors calls p9 file
	file=$LAB_DIR/logs/reply-$tag.csv
	load_run burst >"$LAB_DIR/logs/warm-$tag.txt" ||
		die "$SRV_NAME's warm-up failed at $POINT; see $LAB_DIR/logs/warm-$tag.txt"
	read -r replies seconds errors calls p9 < <(reference_measured "$file")
	P9_COUNT=${p9#-}
	[ "$replies" -gt 0 ] || die "no replies from $SRV_NAME at $POINT; see $file"
	# Where the clients are counted (count_clients), each reply's count
	# holds reqtime's own read of the counter after the reply (reqtime.c,
	# exchange()), outside the span it times: one a reply, taken off.
	[ -z "$CLIENT_CG" ] || [ "$calls" = - ] || calls=$((calls - replies))
	# Sums: lablib's read_raw tells the row by its log and makes it one
	# reply, the clean replies' trimmed mean (its detail names the log).
	record reply "$replies" "$seconds" "${calls#-}" "$errors" \
		"every reply in logs/reply-$tag.csv (reqtime)"
	[ "$SERVER_SATURATION" -eq 1 ] || return 0
	# The saturation search starts from the replies' mean time.
	local total_ns
	printf -v total_ns '%.0f' "${seconds}e9"
	srv_saturate "$tag" $((total_ns / replies))
}

# server_usec: the CPU time the server's processes have taken (us), from
# the work cgroup's cpu.stat, read by the shell itself: no program started.
# Prints nothing without it.
server_usec() {
	local key value
	while read -r key value; do
		[ "$key" != usage_usec ] || { echo "$value"; return; }
	done <"$WORK_CG/cpu.stat"
}

wl_finish() {
	server_stop
	srv_finish
}

# Stop the server by its pid file (SIGTERM) and wait up to 5 s for it to go.
server_stop() {
	[ -n "$SRV_DIR" ] && [ -f "$SRV_DIR/$SRV_PIDFILE" ] || return 0
	local pid i
	pid=$(cat "$SRV_DIR/$SRV_PIDFILE")
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$SRV_DIR/$SRV_PIDFILE"
}
