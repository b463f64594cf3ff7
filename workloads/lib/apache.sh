# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# apache: a private Apache httpd on 127.0.0.1 driven by httperf; sourced by
# sweep.sh.  httpd runs in the work cgroup, the only one the delay module
# delays, pinned to the last CPU; httperf runs outside it on CPU 0, so the
# load generator is never delayed.  Each repeat measures two things:
#   reply       the reference method: 10 connections at 1 per second,
#               throughput 1 / reply time (from the connection being up
#               to the reply's last byte), timed by reqtime
#               (workloads/reqtime.c) to the ns, with the delayed calls
#               made while each reply was in flight counted at the same
#               instants (httperf prints reply times to 0.1 ms, half a
#               reply's time on the virtual clock)
#   saturation  the offered rate raised by APACHE_RATE_FACTOR per step of
#               --step-seconds until the reply rate falls below
#               APACHE_KEEPUP of it (95 %, 99.5 % on the virtual clock)
#               or errors appear (halved instead while no step has kept up);
#               then bisects between the last rate kept up with and the
#               first that was not until they are within APACHE_REFINE
#               (5 %, 0.5 % on the virtual clock) of each other: the
#               knee.  Throughput is the highest reply rate of a step
#               that kept up.  Each run starts on a grid of rates
#               (APACHE_FIRST_RATE x APACHE_RATE_FACTOR^k) at most 35 %
#               of 1 / its reference reply time.  Every step is in
#               saturation.csv (phase ramp, down or refine), with the
#               CPU time Apache took in it (server_s) and the wall time
#               of the window that was read over (window_s).
#   server      the replies of every step kept up with over the CPU time
#               Apache took for them (its cgroup's cpu.stat): the rate
#               Apache would sustain with a client that cost it nothing.
#               Not the knee step's alone: at the edge a step's last
#               replies come late and Apache's time a reply moved 0.23 %
#               between boots (114.02-114.28 us at loops 0), where over
#               the steps below it, 22,000 replies at 3,000-5,400/s, it
#               moved 0.07 %, and 114.06-114.22 us from step to step.  Where
#               httperf shares Apache's CPU (one vCPU), the knee is set by
#               both: httperf polls, taking what Apache leaves, and its
#               share per request moved with the delay (74, 80 and 70 us
#               at 0, 4000 and 8000 loops), where Apache's own time per
#               request is its base plus its delayed calls.
# APACHE_REQUESTS (10, 100 on the virtual clock) and APACHE_INTERVAL_MS
# (1000) size the reference method, and APACHE_SATURATION=0 leaves the
# saturation search out: what userspace/tailamp sets to time thousands of
# replies at one delay.
# Each point starts a fresh Apache with an empty access log, so that a
# point is the same measure whichever point ran before it (the parts of a
# parallel sweep run other points before it than a serial sweep).
# The reference reply makes 7 delayed calls and takes 91.2 us on the
# virtual clock after the warm-up burst (wl_run; the trimmed mean of
# 100), d½ = 13.0 us (4,305 loops); saturation's request 19 calls,
# d½ 9.8 us, and Apache's CPU a request d½ 6.0 us (2026-11-29): 8000
# loops (24 us) is 1.85, 2.5 and 4.0 d½.
WL_LOOPS=0:8000:1000
WL_REPEATS=3
# A point's runs agree to the instruction there, and a saturation step of
# a second is 10^9 emulated instructions of httperf polling.
WL_REPEATS_VIRTUAL=2
# A point gets cheaper as its delay grows: under TCG a spin emulates
# faster than Apache's own code.  The default sweep's points took 2.7 min
# at 0 and 1000 loops down to 1.65 at 8000 (-r 1, 2026-11-28): for a split
# sweep (sweep.sh part_points) a cost of 1 - 0.4 x loops / the last.
WL_COST_SLOPE=-0.4
APACHE_PORT=${APACHE_PORT:-18080}
APACHE_BIN=${APACHE_BIN:-/usr/sbin/apache2}
APACHE_MODULES=${APACHE_MODULES:-/usr/lib/apache2/modules}
APACHE_FIRST_RATE=100
# The warm-up burst (wl_run): 512 connections at 500/s, a tenth of the
# knee on the virtual clock, near it on the host's under TCG (438/s,
# 2026-11-22), where a step over it only costs the warm-up a few failed
# connections.
APACHE_WARM_CONNS=512
APACHE_WARM_RATE=500
APACHE_RATE_FACTOR=1.3
APACHE_MAX_STEPS=20
# Bisect until the first overloaded rate is within this of the last one
# kept up with: 5 % on the host's clock, where a step's rate is noisy, 0.5 %
# on the virtual clock, where each step is the same in every boot and the
# knee must be closer than the model check's 1 %.
APACHE_REFINE=0.05
APACHE_REFINE_VIRTUAL=0.005
# A step kept up when its replies came at this fraction of the offered
# rate: 95 % on the host's clock, where a step's rate is noisy; 99.5 % on
# the virtual clock, where it is not.  At 95 % a step up to 5 % over what
# Apache sustains passed on the backlog it built: the knee at loops 0 was
# 5,373 requests/s against 5,285 at 99.5 %, and the model check +2.9 and
# +1.7 % at 4000 and 8000 loops against +2.1 and +1.6 % (prefork,
# 2026-11-28; workloads/README.md, "Apache's knee", says what is left).
APACHE_KEEPUP=${APACHE_KEEPUP:-0.95}
APACHE_KEEPUP_VIRTUAL=${APACHE_KEEPUP_VIRTUAL:-0.995}
for v in APACHE_KEEPUP APACHE_KEEPUP_VIRTUAL; do
	[[ ${!v} =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]] ||
		bad_arg "$v wants a fraction in (0, 1], not '${!v}'"
done
APACHE_MAX_REFINE_STEPS=8
# A reply's time varies with the kernel's state: on the virtual clock the
# 10 replies of a run spread over 0.1-1.6 us, by the fair server and by
# where the slab allocator's per-CPU slabs stood (reply_clean), and the
# medians of two boots were up to 0.65 % apart at loops 0.  The medians
# of 100 (100 s of the guest's idle time, which the virtual clock skips)
# agreed within 0.045 % in two 3-point boots, and within 0.21 % in two
# default sweeps (0.08 % but at 0, 1000 and 2000 loops;
# workloads/README.md, 2026-11-29): the fair server (APACHE_FAIR_SERVER)
# and reqtime's look at the reply with its Date header in the span moved
# them.  Without both, two boots with their clocks an hour apart within
# 0.058 % at 0, 4000 and 8000 loops.
# On the host's clock each is a second of the machine's time.
APACHE_REQUESTS_VIRTUAL=100
apache_requests() {
	if [ -n "${APACHE_REQUESTS:-}" ]; then
		echo "$APACHE_REQUESTS"
	elif [ "$RUN_CLOCK" = virtual ]; then
		echo "$APACHE_REQUESTS_VIRTUAL"
	else
		echo 10
	fi
}
APACHE_INTERVAL_MS=${APACHE_INTERVAL_MS:-1000}
# Where on the interval's grid a request starts (reqtime --phase): half a
# second after the whole ones, where the kernel's timers rounded to whole
# seconds are not (workloads/reqtime.c); 0 for an interval that is no
# whole number of seconds (tailamp's 10 ms).
APACHE_PHASE_MS=0
APACHE_SATURATION=${APACHE_SATURATION:-1}
# The MPM: prefork (APACHE_MPM=event for Apache's default).  A prefork
# process accepts and serves a connection itself, so a reply is the same
# 7 calls every time.  The event MPM hands each connection from a
# listener thread to a worker, and whether the woken worker preempted the
# listener before it went back to epoll_wait depended on the scheduler's
# history: replies of 11, 12, 17 and 19 calls in one run at 8000 loops,
# and two boots of the same sweep 3.5 % apart (2026-11-28).
APACHE_MPM=${APACHE_MPM:-prefork}
case $APACHE_MPM in
event | prefork) ;;
*) bad_arg "APACHE_MPM wants event or prefork, not '$APACHE_MPM'" ;;
esac
# The reference client's SCHED_FIFO priority (reqtime --fifo).
REFERENCE_FIFO=10
# TIME_WAIT sockets the kernel keeps while Apache runs
# (net.ipv4.tcp_max_tw_buckets; "keep" leaves the machine's own).  httperf
# closes first, so each of its connections left one behind for 60 s, on
# this machine because client and server share it: 16,384 (the cap, at
# 4 GiB) after the first overloaded step, over half of the 28,232 local
# ports, and connect() searched past them.  The capacity then depended on
# how many the search so far had left: at 7000 loops overloaded steps
# replied at 1,691 down to 1,657/s one after the other, and the knee moved
# 1-2 % between boots.  With none kept, the overloaded steps at loops 0
# replied at 5,385-5,391/s and the knee rose 2.4 %, to 5,407/s
# (2026-11-29).  Put back when the sweep ends.
APACHE_TIME_WAIT=${APACHE_TIME_WAIT:-0}
TIME_WAIT_SYSCTL=/proc/sys/net/ipv4/tcp_max_tw_buckets
TIME_WAIT_BEFORE=
TIME_WAIT_SET=0
[ "$APACHE_TIME_WAIT" = keep ] || want_uint APACHE_TIME_WAIT "$APACHE_TIME_WAIT" 0
# The fair server's runtime while Apache runs (ns a period; 0 turns it
# off, "keep" leaves the machine's own).  Since 6.12 a deadline server
# reserves time for the normal tasks (50 ms a second), charging it with
# their run time whether it was needed or not, and starting a new period
# when the charge ran out: in every reply, Apache's switch to the woken
# reqtime took that path (an hrtimer cancelled and started again) or not,
# as the server's state since its last period had it.  Its period is a
# second, as the reference's interval is, so that a run kept what it met:
# on the virtual clock a run's replies moved 0.49 us (0.5 %) together from
# one request to the next and stayed there, and a point's medians were
# 0.2-0.4 % apart between boots (ftrace's function_graph, 2026-11-29).
# With the server off the kernel's real-time throttling
# (kernel.sched_rt_runtime_us) still keeps reqtime, the one real-time
# task, from starving the others.  Put back when the sweep ends; a kernel
# without one (before 6.12) is recorded as "none".
APACHE_FAIR_SERVER=${APACHE_FAIR_SERVER:-0}
FAIR_SERVER_DIR=/sys/kernel/debug/sched/fair_server
FAIR_SERVER_BEFORE=
FAIR_SERVER_SET=0
[ "$APACHE_FAIR_SERVER" = keep ] || want_uint APACHE_FAIR_SERVER "$APACHE_FAIR_SERVER" 0
APACHE_DIR=

# fair_server_read: FAIR_SERVER_BEFORE, each CPU's fair server runtime
# (ns, comma-separated, in the order of FAIR_SERVER_DIR's listing), or
# "none".  Mounts debugfs where it is not (the VM) unless only staging.
fair_server_read() {
	if [ -z "$STAGE_ONLY" ] && [ ! -d "$FAIR_SERVER_DIR" ]; then
		lab_debugfs || true
	fi
	local f v values=()
	for f in "$FAIR_SERVER_DIR"/cpu*/runtime; do
		[ -f "$f" ] || break
		read -r v <"$f" || die "cannot read $f"
		values+=("$v")
	done
	FAIR_SERVER_BEFORE=$(IFS=,; echo "${values[*]:-none}")
}

# fair_server_write VALUES: each CPU's runtime, from one value for all or
# a list as fair_server_read gives it.
fair_server_write() {
	local f i=0 values
	IFS=, read -r -a values <<<"$1"
	for f in "$FAIR_SERVER_DIR"/cpu*/runtime; do
		echo "${values[i]:-${values[0]}}" >"$f" || return 1
		i=$((i + 1))
	done
}

wl_check() {
	[ -x "$APACHE_BIN" ] || die "no Apache at $APACHE_BIN (install apache2-bin: 'make deps')"
	local m
	for m in "mpm_$APACHE_MPM" authz_core dir mime; do
		[ -f "$APACHE_MODULES/mod_$m.so" ] || die "Apache module mod_$m.so missing in $APACHE_MODULES"
	done
	command -v httperf >/dev/null || die "httperf is not installed ('make deps')"
	[ -x "$SWEEP_DIR/reqtime" ] || die "workloads/reqtime is not built ('make userspace')"
	command -v taskset >/dev/null || die "taskset (util-linux) is not installed"
	command -v chrt >/dev/null || die "chrt (util-linux) is not installed"
	APACHE_REQUESTS=$(apache_requests)
	want_uint APACHE_REQUESTS "$APACHE_REQUESTS" 1
	want_uint APACHE_INTERVAL_MS "$APACHE_INTERVAL_MS" 1
	APACHE_PHASE_MS=$((APACHE_INTERVAL_MS % 1000 ? 0 : 500))
	case $APACHE_SATURATION in 0 | 1) ;; *) bad_arg "APACHE_SATURATION wants 0 or 1, not '$APACHE_SATURATION'" ;; esac
	TIME_WAIT_BEFORE=$(cat "$TIME_WAIT_SYSCTL") || die "cannot read $TIME_WAIT_SYSCTL"
	fair_server_read
	if (exec 3<>"/dev/tcp/127.0.0.1/$APACHE_PORT") 2>/dev/null; then
		die "port $APACHE_PORT on 127.0.0.1 is taken; set APACHE_PORT"
	fi
	if [ "$RUN_CLOCK" = virtual ]; then
		APACHE_REFINE=$APACHE_REFINE_VIRTUAL
		APACHE_KEEPUP=$APACHE_KEEPUP_VIRTUAL
	fi
	SERVER_CPU=$(($(nproc) - 1))
	CLIENT_CPU=0
}

wl_settings() {
	printf '%s\n' "port=$APACHE_PORT" "apache=$APACHE_BIN" "server_cpu=$SERVER_CPU" \
		"client_cpu=$CLIENT_CPU" "step_seconds=$STEP_SECONDS" \
		"first_rate=$APACHE_FIRST_RATE" "rate_factor=$APACHE_RATE_FACTOR" "refine=$APACHE_REFINE" \
		"keepup=$APACHE_KEEPUP" \
		"reference=${APACHE_REQUESTS}conns@${APACHE_INTERVAL_MS}ms" "reference_phase_ms=$APACHE_PHASE_MS" \
		"reference_fifo=$REFERENCE_FIFO" \
		"saturation=$APACHE_SATURATION" "mpm=$APACHE_MPM" \
		"time_wait_buckets=$APACHE_TIME_WAIT" "time_wait_buckets_before=$TIME_WAIT_BEFORE" \
		"fair_server_runtime=$APACHE_FAIR_SERVER" "fair_server_runtime_before=$FAIR_SERVER_BEFORE"
}

wl_prepare() {
	local user=nobody group
	group=$(id -gn "$user")
	# In memory when the rest is (staging): each request reads the page
	# and appends to the log.
	local parent=$WORKDIR
	! stage_wanted || parent=$SCRATCH
	APACHE_DIR=$parent/apache
	rm -rf "$APACHE_DIR"
	mkdir -p "$APACHE_DIR/htdocs"
	chmod 755 "$parent" "$APACHE_DIR" "$APACHE_DIR/htdocs"
	cp "$SWEEP_DIR/apache/index.html" "$APACHE_DIR/htdocs/"
	sed -e "s|@DIR@|$APACHE_DIR|g" -e "s|@PORT@|$APACHE_PORT|g" \
		-e "s|@MODULES@|$APACHE_MODULES|g" -e "s|@MPM@|$APACHE_MPM|g" -e "s|@USER@|$user|g" -e "s|@GROUP@|$group|g" \
		"$SWEEP_DIR/apache/httpd.conf.in" >"$APACHE_DIR/httpd.conf"
	cp "$APACHE_DIR/httpd.conf" "$LAB_DIR/httpd.conf"
	# The VM may come up with the loopback interface down.
	ip link set lo up 2>/dev/null || true
	# In the VM Apache, httperf and taskset run from memory (staging), so
	# that no server process reads the host's files during a window.
	if stage_wanted; then stage_workload; fi
	if [ "$APACHE_TIME_WAIT" != keep ]; then
		echo "$APACHE_TIME_WAIT" >"$TIME_WAIT_SYSCTL" || die "cannot write $TIME_WAIT_SYSCTL"
		TIME_WAIT_SET=1
	fi
	if [ "$APACHE_FAIR_SERVER" != keep ] && [ "$FAIR_SERVER_BEFORE" != none ]; then
		FAIR_SERVER_SET=1
		fair_server_write "$APACHE_FAIR_SERVER" ||
			die "cannot set the fair server's runtime to $APACHE_FAIR_SERVER ns ($FAIR_SERVER_DIR)"
	fi
	log "Apache $("$APACHE_BIN" -v | sed -n 's/^Server version: //p') on 127.0.0.1:$APACHE_PORT, CPU $SERVER_CPU; reqtime and httperf on CPU $CLIENT_CPU"
	echo "loops,ns,repeat,phase,offered,reply_rate,errors,client_cpu_pct,sustained,server_s,window_s" >"$LAB_DIR/saturation.csv"
}

# A fresh Apache for each point (with the point's delay already set, as a
# serial sweep had it for the previous point's last run).
wl_point_begin() {
	apache_stop
	rm -f "$APACHE_DIR/access.log"
	in_work_cgroup "${WL_EXEC[@]}" taskset -c "$SERVER_CPU" "$APACHE_BIN" \
		-f "$APACHE_DIR/httpd.conf" -k start ||
		die "Apache did not start at $POINT; see $APACHE_DIR/error.log"
	apache_wait_up
	# One untimed run so that the first run does not pay for cold caches.
	httperf_run 50 100 >/dev/null
}

# Up: it answers on its port and has written its pid file (apache_stop's).
apache_wait_up() {
	local i
	for i in $(seq 300); do
		if [ -s "$APACHE_DIR/httpd.pid" ] &&
			(exec 3<>"/dev/tcp/127.0.0.1/$APACHE_PORT") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	die "Apache does not answer on port $APACHE_PORT; see $APACHE_DIR/error.log"
}

# Staging (in the VM): Apache from its start to its stop, with httperf
# (and taskset) loading it meanwhile.  The recording's Apache runs in the
# foreground, so that strace follows it and its servers until it stops,
# in a session of its own: prefork's parent stops its children with a
# signal to its whole process group, which was sweep.sh's too.
WL_STAGE_TREES=()
wl_stage_record() {
	stage_record_start apache setsid taskset -c "$SERVER_CPU" "$APACHE_BIN" \
		-f "$APACHE_DIR/httpd.conf" -DFOREGROUND
	apache_wait_up
	httperf_cmd 50 100
	stage_record httperf "${HTTPERF_CMD[@]}"
	reference_cmd 2
	stage_record reference "${REFERENCE_CMD[@]}" 3<"$DELAY_CALLS"
	apache_stop
	stage_record_end apache
}

# httperf_cmd RATE CONNS: HTTPERF_CMD, one httperf run on the client CPU,
# as an idle-class task (SCHED_IDLE).  httperf polls: it takes every cycle
# it is given (77 % of a CPU at 10 requests/s on the host), so where it
# shares its CPU with Apache (one vCPU) the scheduler, not the requests,
# decided how much of the CPU it took: 35 % at the knee at loops 0, 18 % at
# 8000, and the saturation knee strayed 8.6 % from base + calls x ns
# (2026-11-28).  As an idle-class task it runs only when Apache has nothing
# to do, so that its polls spend idle time and the knee is Apache's work
# and httperf's own per request: within 1.1 % of the model at 4000 and
# 8000 loops (the event MPM, the same day).
httperf_cmd() {
	HTTPERF_CMD=(taskset -c "$CLIENT_CPU" chrt --idle 0 httperf --server 127.0.0.1 --port "$APACHE_PORT"
		--uri /index.html --rate "$1" --num-conns "$2" --num-calls 1 --timeout 5 --hog)
}

# httperf_run RATE CONNS: run it (in the staged root if there is one);
# prints its report.
httperf_run() {
	httperf_cmd "$1" "$2"
	"${WL_EXEC[@]}" "${HTTPERF_CMD[@]}" 2>&1
}

# Fields of a httperf report: replies, duration s, reply time ms, errors,
# client CPU % (httperf polls: all the CPU Apache leaves it).
httperf_fields() {
	awk '
	/^Total: connections/ { replies = $7; duration = $9 }
	/^Reply time \[ms\]:/ { reply = $5 + $7 }
	/^Errors: total/ { errors = $3 }
	/^CPU time \[s\]:/ { for (i = 1; i <= NF; i++) if ($i == "total") cpu = $(i + 1) }
	END { sub(/%.*/, "", cpu); printf "%s %s %s %s %s\n", replies + 0, duration + 0, reply + 0, errors + 0, cpu + 0 }'
}

# httperf_measured LOG RATE CONNS: run httperf, keep its report in LOG and
# print "replies duration reply_ms errors client_cpu syscalls p9_requests".
# The report goes to memory while the window is open (LOG is on the
# host's files in the VM).
httperf_measured() {
	local f
	httperf_cmd "$2" "$3"
	measured_window "" "$1" "${WL_EXEC[@]}" "${HTTPERF_CMD[@]}" ||
		die "the httperf window at $POINT said nothing"
	f=$(httperf_fields <"$1")
	echo "$f $WINDOW_CALLS ${P9_COUNT:--}"
}

# reference_cmd CONNS: REFERENCE_CMD, the reference method: CONNS
# connections on the client CPU, one request each, each started on the
# next whole second of the monotonic clock, just after a tick, by a
# client that runs as a real-time task, so that the reply's last byte ends
# its span at once even where it shares its CPU with Apache, after one
# untimed request (the first after other work is slower); reqtime
# prints per request its HTTP status, the reply's time (s, to the ns, from
# the connection being up to the reply's last byte) and the delayed calls
# made meanwhile (the counter open at fd 3, read at the same two
# instants).  The reply's time and its calls are those of one span: what
# the server does after a reply (its log line, the close) or between
# requests is in neither.  With curl, which times but cannot count, the
# whole window's calls were set against the reply times: 32.9 calls a
# reply, of which only 55 % showed in them (2026-11-26).  Not from the
# request's send: with one vCPU the server, woken by the request, can
# serve it whole before the send returns.  A failed request is a line
# "error ...": counted, not fatal.
reference_cmd() {
	REFERENCE_CMD=(taskset -c "$CLIENT_CPU" "$SWEEP_DIR/reqtime" -n "$1" -i "$APACHE_INTERVAL_MS"
		--phase "$APACHE_PHASE_MS" --warmup 1
		--calls-fd 3 --fifo "$REFERENCE_FIFO" 127.0.0.1 "$APACHE_PORT" /index.html)
}

# reference_measured LOG: run the reference method, keep reqtime's lines
# in LOG and print "replies seconds errors syscalls clean p9_requests"
# (reply_clean: seconds, syscalls and clean).
reference_measured() {
	reference_cmd "$APACHE_REQUESTS"
	measured_window "" "$1" "${WL_EXEC[@]}" "${REFERENCE_CMD[@]}" 3<"$DELAY_CALLS" ||
		die "the reference window at $POINT said nothing"
	[ "$WINDOW_STATUS" = 0 ] ||
		die "the reference run failed (exit status $WINDOW_STATUS) at $POINT; see $1"
	local n e seconds calls clean
	read -r n e < <(awk '$1 == 200 && NF == 3 { n++ } $1 == "error" { e++ }
		END { print n + 0, e + 0 }' "$1")
	read -r seconds calls clean < <(reply_clean "$1")
	echo "$n $seconds $e $calls $clean ${P9_COUNT:--}"
}

# reply_clean LOG: "seconds syscalls clean" of LOG's replies: the fewest
# delayed calls a reply made, how many replies made just those (clean)
# and the mean of their times but a tenth of them (rounded down) at
# each end; "0 0 0" without a reply.
#
# A reply that made more calls had more of the server's work in its span:
# on the virtual clock 2 to 4 replies in a row, 20 s apart, made 12 calls
# instead of 7 (+24 us at loops 0, +144 us at 8000, 2026-11-29), and in
# one boot 6 of 10 did, so that the median of all replies was theirs.  In
# them (ftrace) the server's 5 calls after its writev of the reply came
# before reqtime was woken, which happened only when the server blocked
# in poll.  Their calls are counted, so they are left out, not guessed
# at.  Of the clean ones neither the mean nor the median: on the virtual
# clock one reply in ten 3 us longer with no more calls put a point's mean
# 0.3 % from the same point's in other boots (2026-11-28), and the clean
# replies of a run sit on levels about 0.12 us apart, in stretches of a
# few to a few tens of replies, so that the median of two runs of a point
# picked different levels, 0.20 % apart at 1000 loops (113.26 and 113.02
# us, 2026-11-29).  The trimmed mean drops the rare long reply and
# weighs the levels by how many replies met each: four runs in two boots
# within 0.040 % at loops 0, where their medians were 0.056 % apart and,
# of 300 replies each, 0.126 % (workloads/README.md).
reply_clean() {
	awk '$1 == 200 && NF == 3 { print $3, $2 }' "$1" | sort -g -k1,1 -k2,2 | awk '
	NR == 1 { calls = $1 }
	$1 == calls { v[++n] = $2 }
	END {
		if (!n) { print "0 0 0"; exit }
		k = int(n / 10)
		for (i = k + 1; i <= n - k; i++) sum += v[i]
		printf "%.9g %s %d\n", sum / (n - 2 * k), calls, n
	}'
}

wl_run() {
	local tag=$TAG-$REPEAT replies duration reply errors cpu calls clean p9 best best_rate seconds
	# A burst of load first, untimed: a point's first run replied 5.8-5.9
	# us slower than its second, which came after the first's saturation
	# search (101.6 against 95.8 us at loops 0, 270.3 against 264.6 at
	# 8000), and so did a second with no search in between.  Not the
	# server processes' first requests: 100 replies in a row, a process
	# each and then some again, all took 101.5 us; nor 128 connections at
	# 200/s first.  After 512 at 500/s both runs replied in 95.8 us
	# (2026-11-29): every point's runs now measure that state.
	httperf_run "$APACHE_WARM_RATE" "$APACHE_WARM_CONNS" >"$LAB_DIR/logs/warm-$tag.txt" ||
		die "Apache's warm-up failed at $POINT; see $LAB_DIR/logs/warm-$tag.txt"
	# The reference method.
	read -r replies seconds errors calls clean p9 < <(reference_measured "$LAB_DIR/logs/reply-$tag.txt")
	P9_COUNT=${p9#-}
	[ "$replies" -gt 0 ] || die "no replies from Apache at $POINT; see $LAB_DIR/logs/reply-$tag.txt"
	record reply 1 "$seconds" "$calls" "$errors" \
		"the trimmed mean (a tenth off each end) of the $clean of $replies replies with the fewest delayed calls, $(awk -v s="$seconds" 'BEGIN { printf "%.6f", s * 1e3 }') ms (reqtime; each in logs/reply-$tag.txt)"
	[ "$APACHE_SATURATION" -eq 1 ] || return 0

	# Saturation: raise the offered rate until the replies stop following,
	# then bisect between the last rate kept up with and the first not.
	local rate step=0 best_rate=0 best="" ok_rate=0 over_rate=0 over="" phase=ramp
	SATURATION_P9=0 KEPT_STEPS=0 KEPT_REPLIES=0 KEPT_CALLS=0 KEPT_CPU_US=0
	# From this run's own reference reply: the knee was at 41-53 % of 1 /
	# reply time from 0 to 8000 loops on the virtual clock (2026-11-29), so
	# a run starts at the highest rate of the grid APACHE_FIRST_RATE x
	# APACHE_RATE_FACTOR^k that is at most 35 % of it (APACHE_FIRST_RATE
	# at least).  On a grid, two boots whose reply times differ in the last
	# digit offer the same rates and take the same steps.
	rate=$(awk -v s="$seconds" -v f="$APACHE_FIRST_RATE" -v g="$APACHE_RATE_FACTOR" \
		'BEGIN { k = int(log(0.35 / s / f) / log(g)); if (k < 0) k = 0; print int(f * g ^ k + 0.5) }')
	while [ "$step" -lt "$APACHE_MAX_STEPS" ]; do
		step=$((step + 1))
		saturation_step "$tag" "$rate" "$phase"
		if [ "$STEP_OK" -eq 1 ]; then
			ok_rate=$rate
		elif [ "$ok_rate" -eq 0 ]; then
			# Not even the first rate: go down until one is kept up with.
			[ "$rate" -gt 1 ] || break
			phase=down
			rate=$((rate / 2))
			continue
		else
			over_rate=$rate
			break
		fi
		rate=$(awk -v r="$rate" -v f="$APACHE_RATE_FACTOR" 'BEGIN { print int(r * f + 0.5) }')
	done
	[ -n "$best" ] ||
		die "Apache kept up with no offered rate down to $rate/s at $POINT; see $LAB_DIR/saturation.csv"
	step=0
	while [ "$over_rate" -gt 0 ] && [ "$step" -lt "$APACHE_MAX_REFINE_STEPS" ] &&
		awk -v lo="$ok_rate" -v hi="$over_rate" -v f="$APACHE_REFINE" \
			'BEGIN { exit !(hi - lo > f * lo && hi - lo > 1) }'; do
		step=$((step + 1))
		rate=$(((ok_rate + over_rate) / 2))
		saturation_step "$tag" "$rate" refine
		if [ "$STEP_OK" -eq 1 ]; then ok_rate=$rate; else over_rate=$rate; fi
	done
	if [ "$over_rate" -gt 0 ]; then
		over="overloaded at $over_rate/s offered (knee between $ok_rate and $over_rate/s)"
	fi
	read -r replies duration calls errors rate cpu <<<"$best"
	# The requests of every step: each one moved the knee.
	P9_COUNT=$SATURATION_P9
	record saturation "$replies" "$duration" "$calls" "$errors" \
		"kept up with $ok_rate/s offered; ${over:-no overload within $APACHE_MAX_STEPS steps}"
	record server "$KEPT_REPLIES" "$(ns_to_s $((KEPT_CPU_US * 1000)))" "$KEPT_CALLS" 0 \
		"Apache's CPU time for the $KEPT_REPLIES replies of the $KEPT_STEPS steps kept up with (its cgroup's cpu.stat; httperf took $cpu % of the CPU at the knee, $rate/s offered)"
}

# saturation_step TAG RATE PHASE: offer RATE/s for --step-seconds; STEP_OK
# says whether the replies followed (APACHE_KEEPUP of it, no errors); the best
# step kept up with so far is remembered in best and best_rate, and the
# replies, delayed calls and Apache's CPU time (us) of the steps kept up with
# are added up in KEPT_REPLIES, KEPT_CALLS and KEPT_CPU_US (KEPT_STEPS).
saturation_step() {
	local tag=$1 rate=$2 phase=$3 conns replies duration reply errors cpu calls p9 rr
	local t0 t1 u0 u1 server
	conns=$((rate * STEP_SECONDS))
	# Apache's CPU time is read inside a wall-clock window (us, no
	# program started): on its one CPU it cannot take more than that.
	t0=${EPOCHREALTIME/[.,]/}
	u0=$(server_usec)
	read -r replies duration reply errors cpu calls p9 < <(
		httperf_measured "$LAB_DIR/logs/saturation-$tag-$rate.txt" "$rate" "$conns")
	u1=$(server_usec)
	t1=${EPOCHREALTIME/[.,]/}
	if [ -z "$u0" ] || [ -z "$u1" ]; then
		die "no CPU time of Apache's cgroup ($WORK_CG/cpu.stat) at $POINT"
	fi
	server=$(ns_to_s $(((u1 - u0) * 1000)))
	if [ "$p9" = - ]; then SATURATION_P9=; elif [ -n "$SATURATION_P9" ]; then
		SATURATION_P9=$((SATURATION_P9 + p9))
	fi
	rr=$(awk -v n="$replies" -v d="$duration" 'BEGIN { printf "%.2f", (d > 0 ? n / d : 0) }')
	STEP_OK=$(awk -v rr="$rr" -v r="$rate" -v e="$errors" -v f="$APACHE_KEEPUP" \
		'BEGIN { print (e == 0 && rr >= f * r) ? 1 : 0 }')
	echo "$LOOPS,$NS,$REPEAT,$phase,$rate,$rr,$errors,$cpu,$STEP_OK,$server,$(ns_to_s $(((t1 - t0) * 1000)))" \
		>>"$LAB_DIR/saturation.csv"
	[ "$STEP_OK" -eq 1 ] || return 0
	KEPT_STEPS=$((KEPT_STEPS + 1))
	KEPT_REPLIES=$((KEPT_REPLIES + replies))
	KEPT_CALLS=$((KEPT_CALLS + calls))
	KEPT_CPU_US=$((KEPT_CPU_US + u1 - u0))
	if awk -v a="$rr" -v b="$best_rate" 'BEGIN { exit !(a > b) }'; then
		best_rate=$rr
		best="$replies $duration $calls $errors $rate $cpu"
	fi
}

# server_usec: the CPU time Apache's processes have taken (us), from the
# work cgroup's cpu.stat, read by the shell itself: no program started.
# Prints nothing without it (saturation_step says so).
server_usec() {
	local key value
	while read -r key value; do
		[ "$key" != usage_usec ] || { echo "$value"; return; }
	done <"$WORK_CG/cpu.stat"
}

wl_finish() {
	apache_stop
	if [ "$TIME_WAIT_SET" -eq 1 ]; then
		echo "$TIME_WAIT_BEFORE" >"$TIME_WAIT_SYSCTL" ||
			log "warning: could not put $TIME_WAIT_SYSCTL back to $TIME_WAIT_BEFORE"
		TIME_WAIT_SET=0
	fi
	if [ "$FAIR_SERVER_SET" -eq 1 ]; then
		fair_server_write "$FAIR_SERVER_BEFORE" ||
			log "warning: could not put the fair server's runtime back to $FAIR_SERVER_BEFORE"
		FAIR_SERVER_SET=0
	fi
	[ -z "$APACHE_DIR" ] || [ ! -f "$APACHE_DIR/error.log" ] ||
		cp "$APACHE_DIR/error.log" "$LAB_DIR/logs/httpd-error.log" 2>/dev/null || true
}

# Stop Apache by its pid file (SIGTERM: the parent stops its servers) and
# wait up to 5 s for it to go.
apache_stop() {
	[ -n "$APACHE_DIR" ] && [ -f "$APACHE_DIR/httpd.pid" ] || return 0
	local pid i
	pid=$(cat "$APACHE_DIR/httpd.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$APACHE_DIR/httpd.pid"
}
