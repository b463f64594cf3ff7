# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# apache: a private Apache httpd on 127.0.0.1, one instance of the server
# form (server.sh); sourced by sweep.sh.  Its load generator is httperf;
# its measures:
#   reply       reqtime's GET of a small static page, one connection each
#   saturation  the offered rate raised by APACHE_RATE_FACTOR per step of
#               --step-seconds until the reply rate falls below
#               APACHE_KEEPUP of it (95 %, 99.5 % on the virtual clock)
#               or errors appear (halved instead while no step has kept up);
#               then bisected between the last rate kept up with and the
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
#               Apache took for them: the rate Apache would sustain with
#               a client that cost it nothing.
# Why each setting is what it is: NOTES.md, "Apache".
# shellcheck source=workloads/lib/server.sh
. "$SWEEP_DIR/lib/server.sh"

WL_ABOUT="a private Apache httpd: reply time, then httperf's saturation search"
WL_LOOPS=0:8000:1000
WL_REPEATS=3
WL_POINT_SECONDS=190
WL_STAGE=guest
WL_REPEATS_VIRTUAL=2
WL_IN_ALL=1
WL_SERVER=1
WL_PACKAGES="apache2-bin httperf"
WL_BAND_POINT="5e-4 0"
wl_describe() { echo ", saturation steps of $STEP_SECONDS s, $(server_requests) replies a reference"; }
# A point gets cheaper as its delay grows (a spin emulates faster than
# Apache's own code): the cost lablib.sweep.parts.balance deals parts by.
WL_COST_SLOPE=-0.4
APACHE_PORT=${APACHE_PORT:-18080}
server_is Apache "$APACHE_PORT" httpd.pid httperf
APACHE_BIN=${APACHE_BIN:-/usr/sbin/apache2}
APACHE_MODULES=${APACHE_MODULES:-/usr/lib/apache2/modules}
APACHE_FIRST_RATE=100
# The warm-up burst before each run: 512 connections at 500/s.
APACHE_WARM_CONNS=512
APACHE_WARM_RATE=500
APACHE_RATE_FACTOR=1.3
APACHE_MAX_STEPS=20
APACHE_REFINE=0.05
APACHE_REFINE_VIRTUAL=0.005
APACHE_KEEPUP=${APACHE_KEEPUP:-0.95}
APACHE_KEEPUP_VIRTUAL=${APACHE_KEEPUP_VIRTUAL:-0.995}
for v in APACHE_KEEPUP APACHE_KEEPUP_VIRTUAL; do
	[[ ${!v} =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]] ||
		bad_arg "$v wants a fraction in (0, 1], not '${!v}'"
done
APACHE_MAX_REFINE_STEPS=8
# The MPM: prefork (APACHE_MPM=event for Apache's default).
APACHE_MPM=${APACHE_MPM:-prefork}
case $APACHE_MPM in
event | prefork) ;;
*) bad_arg "APACHE_MPM wants event or prefork, not '$APACHE_MPM'" ;;
esac

srv_check() {
	[ -x "$APACHE_BIN" ] || die "no Apache at $APACHE_BIN (install apache2-bin: 'make deps')"
	local m
	for m in "mpm_$APACHE_MPM" authz_core dir mime; do
		[ -f "$APACHE_MODULES/mod_$m.so" ] || die "Apache module mod_$m.so missing in $APACHE_MODULES"
	done
	command -v httperf >/dev/null || die "httperf is not installed ('make deps')"
	if [ "$RUN_CLOCK" = virtual ]; then
		APACHE_REFINE=$APACHE_REFINE_VIRTUAL
		APACHE_KEEPUP=$APACHE_KEEPUP_VIRTUAL
	fi
}

srv_settings() {
	printf '%s\n' "apache=$APACHE_BIN" "step_seconds=$STEP_SECONDS" \
		"first_rate=$APACHE_FIRST_RATE" "rate_factor=$APACHE_RATE_FACTOR" "refine=$APACHE_REFINE" \
		"keepup=$APACHE_KEEPUP" "mpm=$APACHE_MPM"
}

srv_prepare() {
	local user=nobody group
	group=$(id -gn "$user")
	mkdir -p "$SRV_DIR/htdocs"
	chmod 755 "$SRV_DIR/htdocs"
	cp "$SWEEP_DIR/apache/index.html" "$SRV_DIR/htdocs/"
	sed -e "s|@DIR@|$SRV_DIR|g" -e "s|@PORT@|$APACHE_PORT|g" \
		-e "s|@MODULES@|$APACHE_MODULES|g" -e "s|@MPM@|$APACHE_MPM|g" -e "s|@USER@|$user|g" -e "s|@GROUP@|$group|g" \
		"$SWEEP_DIR/apache/httpd.conf.in" >"$SRV_DIR/httpd.conf"
	cp "$SRV_DIR/httpd.conf" "$LAB_DIR/httpd.conf"
}

srv_setup() {
	log "$("$APACHE_BIN" -v | sed -n 's/^Server version: //p')"
	echo "loops,ns,repeat,phase,offered,reply_rate,errors,client_cpu_pct,sustained,server_s,window_s" >"$LAB_DIR/saturation.csv"
}

# Fresh, with an empty access log.
srv_start() {
	rm -f "$SRV_DIR/access.log"
	"$@" "$APACHE_BIN" -f "$SRV_DIR/httpd.conf" -k start
}

srv_foreground() { SRV_FG=("$APACHE_BIN" -f "$SRV_DIR/httpd.conf" -DFOREGROUND); }

srv_reference() { REFERENCE_ARGS=(127.0.0.1 "$APACHE_PORT" /index.html); }

srv_load() {
	case $1 in
	small) httperf_cmd 50 100 ;;
	burst) httperf_cmd "$APACHE_WARM_RATE" "$APACHE_WARM_CONNS" ;;
	esac
	LOAD_CMD=("${HTTPERF_CMD[@]}")
}

# httperf_cmd RATE CONNS: HTTPERF_CMD, one httperf run on the client CPU,
# as an idle-class task (SCHED_IDLE), so that its polls spend only the
# time Apache leaves.
httperf_cmd() {
	HTTPERF_CMD=(taskset -c "$CLIENT_CPU" chrt --idle 0 httperf --server 127.0.0.1 --port "$APACHE_PORT"
		--uri /index.html --rate "$1" --num-conns "$2" --num-calls 1 --timeout 5 --hog)
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
httperf_measured() {
	local f
	httperf_cmd "$2" "$3"
	measured_window "$CLIENT_CG" "$1" "${WL_EXEC[@]}" "${HTTPERF_CMD[@]}" ||
		die "the httperf window at $POINT said nothing"
	f=$(httperf_fields <"$1")
	echo "$f $WINDOW_CALLS ${P9_COUNT:--}"
}

# srv_saturate TAG REPLY_SECONDS: raise the offered rate until the replies
# stop following, then bisect between the last rate kept up with and the
# first not; record the saturation and server rows.
srv_saturate() {
	local tag=$1 seconds=$2 replies duration calls errors cpu
	local rate step=0 best_rate=0 best="" ok_rate=0 over_rate=0 over="" phase=ramp
	SATURATION_P9=0 KEPT_STEPS=0 KEPT_REPLIES=0 KEPT_CALLS=0 KEPT_CPU_US=0
	# The first rate: the grid's highest at most 35 % of 1 / the reply.
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

srv_finish() {
	[ -z "$SRV_DIR" ] || [ ! -f "$SRV_DIR/error.log" ] ||
		cp "$SRV_DIR/error.log" "$LAB_DIR/logs/httpd-error.log" 2>/dev/null || true
}
