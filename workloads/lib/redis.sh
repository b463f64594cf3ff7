# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# redis: a private Redis server on 127.0.0.1, an instance of the server
# form (server.sh); sourced by sweep.sh.  No persistence, one database,
# its files in a folder of its own.  Its load generator is
# redis-benchmark, on the client CPU as an idle-class task (as Apache's
# httperf: it takes only the time the server leaves).  Its measures:
#   reply       reqtime --redis: GET of one REDIS_VALUE_BYTES value, on
#               one connection kept open, each request timed from its send
#               to the reply's last byte
#   saturation  redis-benchmark's GETs of that value, REDIS_CLIENTS
#               connections at once, REDIS_REQUESTS requests, as fast as
#               the server answers (a closed loop: its throughput is the
#               knee), timed by the window
#   server      the same requests over the CPU time the server took
# The value is redis-benchmark's own key (key:__rand_int__), which its
# SET writes in each load (srv_load).  The server runs no timer of its own
# but serverCron at a fixed 10 Hz (no dynamic hz, no jemalloc background
# thread): a timer that fires inside a reply's span makes it dearer; and
# its reply buffer keeps its size (DEBUG REPLYBUFFER RESIZING 0, through
# redis-cli once it answers): resized every 5 s, one reply in five was
# dearer (NOTES.md, "Redis").
# shellcheck source=workloads/lib/server.sh
. "$SWEEP_DIR/lib/server.sh"

# On the virtual clock a reply was 35.4 us and 2 delayed calls (d½ 17.7
# us, 5,860 loops), a request at saturation 42.5 us and 3 (d½ 14.1 us),
# Redis's CPU a request 21.3 us (d½ 7.1 us): 12000 loops
# (36 us) is 2.0, 2.6 and 5 d½.
WL_ABOUT="a private Redis server: reply time, then redis-benchmark's GETs"
WL_LOOPS=0:12000:1500
WL_REPEATS=3
WL_POINT_SECONDS=40
WL_STAGE=guest
WL_REPEATS_VIRTUAL=2
WL_SERVER=1
WL_PACKAGES=redis-tools
WL_BAND_POINT="2.5e-3 0"
# Its replies 1.003 s apart, not a whole number of the tick's periods: on
# a grid of whole seconds each boot's replies met the kernel's periodic
# work in a phase of their own and the reply at loops 0 differed by up to
# 0.37 % between boots (NOTES.md, "Redis's reply between boots").
SRV_INTERVAL_MS=1003
REDIS_PORT=${REDIS_PORT:-16379}
server_is Redis "$REDIS_PORT" redis.pid redis-benchmark
# Debian's redis-tools has the server's program as redis-check-rdb (the
# redis-server package adds the name, and a system service); it runs as
# the server when called redis-server, through a link in SRV_DIR.
REDIS_BIN=${REDIS_BIN:-}
REDIS_KEY=key:__rand_int__
REDIS_VALUE_BYTES=${REDIS_VALUE_BYTES:-1024}
REDIS_CLIENTS=${REDIS_CLIENTS:-8}
REDIS_REQUESTS=${REDIS_REQUESTS:-20000}
want_uint REDIS_VALUE_BYTES "$REDIS_VALUE_BYTES" 1
want_uint REDIS_CLIENTS "$REDIS_CLIENTS" 1
want_uint REDIS_REQUESTS "$REDIS_REQUESTS" 1

srv_check() {
	command -v redis-benchmark >/dev/null ||
		die "redis-benchmark is not installed (redis-tools: 'make deps')"
	command -v redis-cli >/dev/null || die "redis-cli is not installed (redis-tools: 'make deps')"
	if [ -z "$REDIS_BIN" ]; then
		REDIS_BIN=$(command -v redis-server || command -v redis-check-rdb) ||
			die "no Redis server (redis-tools: 'make deps')"
	fi
	[ -x "$REDIS_BIN" ] || die "REDIS_BIN wants the Redis server's program, not '$REDIS_BIN'"
	REDIS_BIN=$(readlink -f "$REDIS_BIN")
	# Run through a link in SRV_DIR (in /dev/shm, which staging does not
	# copy but the staged root mounts): staged by its own name.
	WL_STAGE_TREES=(--program "$REDIS_BIN")
}

srv_settings() {
	printf '%s\n' "redis=$REDIS_BIN" "key=$REDIS_KEY" "value_bytes=$REDIS_VALUE_BYTES" \
		"clients=$REDIS_CLIENTS" "requests=$REDIS_REQUESTS"
}

srv_prepare() {
	ln -s "$REDIS_BIN" "$SRV_DIR/redis-server"
	cat >"$SRV_DIR/redis.conf" <<EOF
# The lab's Redis for workloads/sweep.sh redis (lib/redis.sh writes it).
bind 127.0.0.1
port $REDIS_PORT
dir $SRV_DIR
pidfile $SRV_DIR/$SRV_PIDFILE
logfile $SRV_DIR/redis.log
loglevel warning
databases 1
save ""
appendonly no
io-threads 1
enable-debug-command local
hz 10
dynamic-hz no
jemalloc-bg-thread no
EOF
	cp "$SRV_DIR/redis.conf" "$LAB_DIR/redis.conf"
}

srv_setup() { log "$("$SRV_DIR/redis-server" --version)"; }

srv_start() { "$@" "$SRV_DIR/redis-server" "$SRV_DIR/redis.conf" --daemonize yes; }

srv_foreground() { SRV_FG=("$SRV_DIR/redis-server" "$SRV_DIR/redis.conf" --daemonize no); }

srv_ready() {
	READY_CMD=(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" DEBUG REPLYBUFFER RESIZING 0)
	READY_WANT=OK
}

srv_reference() { REFERENCE_ARGS=(--redis 127.0.0.1 "$REDIS_PORT" "$REDIS_KEY"); }

# redis_benchmark TESTS REQUESTS CLIENTS: LOAD_CMD, redis-benchmark on the
# client CPU as an idle-class task, with the value's size.
redis_benchmark() {
	LOAD_CMD=(taskset -c "$CLIENT_CPU" chrt --idle 0 redis-benchmark -h 127.0.0.1
		-p "$REDIS_PORT" -t "$1" -n "$2" -c "$3" -d "$REDIS_VALUE_BYTES" --csv)
}

# small: the value written and read a little; burst: a tenth of a
# saturation run.
srv_load() {
	case $1 in
	small) redis_benchmark set,get 1000 1 ;;
	burst) redis_benchmark set,get $((REDIS_REQUESTS / 10)) "$REDIS_CLIENTS" ;;
	esac
}

# srv_saturate TAG REPLY_SECONDS: REDIS_REQUESTS GETs from REDIS_CLIENTS
# connections, timed by the window, with the server's CPU time around it.
srv_saturate() {
	local tag=$1 u0 u1 log=$LAB_DIR/logs/saturation-$1.txt
	redis_benchmark get "$REDIS_REQUESTS" "$REDIS_CLIENTS"
	u0=$(server_usec)
	measured_window "$CLIENT_CG" "$log" "${WL_EXEC[@]}" "${LOAD_CMD[@]}" ||
		die "the redis-benchmark window at $POINT said nothing"
	u1=$(server_usec)
	[ "$WINDOW_STATUS" = 0 ] ||
		die "redis-benchmark failed (exit status $WINDOW_STATUS) at $POINT; see $log"
	if [ -z "$u0" ] || [ -z "$u1" ]; then
		die "no CPU time of Redis's cgroup ($WORK_CG/cpu.stat) at $POINT"
	fi
	grep -q '^"GET",' "$log" || die "redis-benchmark reported no GETs at $POINT; see $log"
	record saturation "$REDIS_REQUESTS" "$(ns_to_s $((WINDOW_T1 - WINDOW_T0)))" "$WINDOW_CALLS" 0 \
		"$REDIS_REQUESTS GETs from $REDIS_CLIENTS connections (redis-benchmark, timed by the window)"
	record server "$REDIS_REQUESTS" "$(ns_to_s $(((u1 - u0) * 1000)))" "$WINDOW_CALLS" 0 \
		"Redis's CPU time for the $REDIS_REQUESTS GETs (its cgroup's cpu.stat)"
}

srv_finish() {
	[ -z "$SRV_DIR" ] || [ ! -f "$SRV_DIR/redis.log" ] ||
		cp "$SRV_DIR/redis.log" "$LAB_DIR/logs/redis.log" 2>/dev/null || true
}
