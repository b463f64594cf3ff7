# shellcheck shell=bash disable=SC2034  # variables for sweep.sh
# An HTTP server's load generator and knee, for a server file that sources
# this after server.sh (apache.sh, nginx.sh) and sets HTTPERF_PORT:
# httperf on the client CPU as an idle-class task (SCHED_IDLE), so that its
# polls spend only the time the server leaves, asking for /index.html.
#   srv_load small|burst  a new server's first load; the warm-up burst
#   srv_saturate TAG NS   the knee: the offered rate raised by
#                         HTTPERF_RATE_FACTOR a step of --step-seconds until
#                         the reply rate falls below HTTPERF_KEEPUP of it or
#                         errors appear (halved instead while no step has
#                         kept up), then bisected until the last rate kept up
#                         with and the first not are within HTTPERF_REFINE of
#                         each other.  Throughput is the highest reply rate
#                         of a step kept up with; the first rate the grid's
#                         highest (HTTPERF_FIRST_RATE x the factor^k) at most
#                         35 % of 1 / the reference reply's NS ns.  Every
#                         step goes into saturation.csv with the server's CPU
#                         time in it; the server row is the replies of every
#                         step kept up with over that CPU time.
# Fractions are kept in thousandths and rates as whole numbers, so that
# every comparison is the shell's own arithmetic.
HTTPERF_FIRST_RATE=100
HTTPERF_RATE_FACTOR=1.3
HTTPERF_MAX_STEPS=20
HTTPERF_MAX_REFINE_STEPS=8
HTTPERF_WARM_CONNS=512
HTTPERF_WARM_RATE=500
# Keep up with 95 % of the offered rate, refine to 5 %; on the virtual
# clock, with no noise to allow for, 99.5 % and 0.5 %.  The environment's
# win.
if [ "${RUN_CLOCK:-}" = virtual ]; then
	HTTPERF_REFINE=${HTTPERF_REFINE:-0.005} HTTPERF_KEEPUP=${HTTPERF_KEEPUP:-0.995}
else
	HTTPERF_REFINE=${HTTPERF_REFINE:-0.05} HTTPERF_KEEPUP=${HTTPERF_KEEPUP:-0.95}
fi

# milli VAR SETTING: SETTING's value (a number like 0.95, or the factor
# 1.3) in thousandths into VAR, or the sweep stops with status 2.
milli() {
	local v=${!2}
	if [ -z "$v" ] || ! [[ $v =~ ^([0-9]*)\.?([0-9]*)$ ]]; then
		bad_arg "$2 wants a number like 0.95, not '$v'"
	fi
	local frac=${BASH_REMATCH[2]}000
	printf -v "$1" '%d' $((10#${BASH_REMATCH[1]:-0} * 1000 + 10#${frac:0:3}))
}

# httperf_values: the settings in thousandths, or status 2 naming the bad one.
httperf_values() {
	milli REFINE_M HTTPERF_REFINE
	milli KEEPUP_M HTTPERF_KEEPUP
	milli FACTOR_M HTTPERF_RATE_FACTOR
	if [ "$KEEPUP_M" -le 0 ] || [ "$KEEPUP_M" -gt 1000 ]; then
		bad_arg "HTTPERF_KEEPUP wants a fraction in (0, 1], not '$HTTPERF_KEEPUP'"
	fi
}
httperf_values

httperf_check() {
	command -v httperf >/dev/null || die "httperf is not installed ('make deps')"
	httperf_values
}

httperf_settings() {
	printf '%s\n' "step_seconds=$STEP_SECONDS" "first_rate=$HTTPERF_FIRST_RATE" \
		"rate_factor=$HTTPERF_RATE_FACTOR" "refine=$HTTPERF_REFINE" "keepup=$HTTPERF_KEEPUP"
}

srv_load() {
	case $1 in
	small) httperf_cmd 50 100 ;;
	burst) httperf_cmd "$HTTPERF_WARM_RATE" "$HTTPERF_WARM_CONNS" ;;
	esac
	LOAD_CMD=("${HTTPERF_CMD[@]}")
}

# httperf_cmd RATE CONNS: HTTPERF_CMD, one httperf run.
httperf_cmd() {
	HTTPERF_CMD=(taskset -c "$CLIENT_CPU" chrt --idle 0 httperf --server 127.0.0.1
		--port "$HTTPERF_PORT" --uri /index.html --rate "$1" --num-conns "$2" --num-calls 1
		--timeout 5 --hog)
}

# httperf_step LOG RATE: run httperf at RATE for --step-seconds, its report
# in LOG; sets REPLIES, DURATION (s, as httperf says it), ERRORS, HTTPERF_CPU_PCT
# (% of the CPU httperf took: all the server leaves it) and RATE_C (replies
# a second, in hundredths).
httperf_step() {
	local key
	httperf_cmd "$2" $(($2 * STEP_SECONDS))
	# shellcheck disable=SC2153  # CLIENT_CG is common.sh's
	measured_window "$CLIENT_CG" "$1" "${WL_EXEC[@]}" "${HTTPERF_CMD[@]}" ||
		die "the httperf window at $POINT said nothing"
	REPLIES=0 DURATION=0 ERRORS=0 HTTPERF_CPU_PCT=0
	while read -r -a key; do
		case "${key[*]:0:2}" in
		"Total: connections") REPLIES=${key[6]} DURATION=${key[8]} ;;
		"Errors: total") ERRORS=${key[2]} ;;
		"CPU time")
			HTTPERF_CPU_PCT="${key[*]}"
			HTTPERF_CPU_PCT=${HTTPERF_CPU_PCT##* total } HTTPERF_CPU_PCT=${HTTPERF_CPU_PCT%%%*}
			;;
		esac
	done <"$1"
	local us
	printf -v us '%.0f' "${DURATION}e6"
	RATE_C=0
	[ "$us" -le 0 ] || RATE_C=$(((REPLIES * 200000000 / us + 1) / 2))
}

srv_saturate() {
	local tag=$1 grid=$((HTTPERF_FIRST_RATE * 1000000)) rate step=0 phase=ramp
	local best="" best_c=-1 ok=0 over=0 said
	SATURATION_P9=0 KEPT_STEPS=0 KEPT_REPLIES=0 KEPT_CALLS=0 KEPT_CPU_US=0
	# The grid's highest rate at most 35 % of 1 / the reply (in millionths
	# of a request a second, the factor's powers not rounded).
	local next=$((grid * FACTOR_M / 1000))
	while [ $((next * $2)) -le 350000000000000 ]; do
		grid=$next next=$((grid * FACTOR_M / 1000))
	done
	rate=$(((grid + 500000) / 1000000))
	while [ "$step" -lt "$HTTPERF_MAX_STEPS" ]; do
		step=$((step + 1))
		saturation_step "$tag" "$rate" "$phase"
		if [ "$STEP_OK" -eq 1 ]; then
			ok=$rate
		elif [ "$ok" -eq 0 ]; then
			# Not even the first rate: down until one is kept up with.
			[ "$rate" -gt 1 ] || break
			phase=down rate=$((rate / 2))
			continue
		else
			over=$rate
			break
		fi
		rate=$(((rate * FACTOR_M + 500) / 1000))
	done
	[ -n "$best" ] ||
		die "$SRV_NAME kept up with no offered rate down to $rate/s at $POINT; see $LAB_DIR/saturation.csv"
	step=0
	while [ "$over" -gt 0 ] && [ "$step" -lt "$HTTPERF_MAX_REFINE_STEPS" ] &&
		[ $(((over - ok) * 1000)) -gt $((REFINE_M * ok)) ] && [ $((over - ok)) -gt 1 ]; do
		step=$((step + 1))
		rate=$(((ok + over) / 2))
		saturation_step "$tag" "$rate" refine
		if [ "$STEP_OK" -eq 1 ]; then ok=$rate; else over=$rate; fi
	done
	said="no overload within $HTTPERF_MAX_STEPS steps"
	[ "$over" -eq 0 ] || said="overloaded at $over/s offered (knee between $ok and $over/s)"
	read -r REPLIES DURATION calls ERRORS rate HTTPERF_CPU_PCT <<<"$best"
	# The requests of every step: each one moved the knee.
	P9_COUNT=$SATURATION_P9
	record saturation "$REPLIES" "$DURATION" "$calls" "$ERRORS" "kept up with $ok/s offered; $said"
	record server "$KEPT_REPLIES" "$(ns_to_s $((KEPT_CPU_US * 1000)))" "$KEPT_CALLS" 0 \
		"$SRV_NAME's CPU time for the $KEPT_REPLIES replies of the $KEPT_STEPS steps kept up with (its cgroup's cpu.stat; httperf took $HTTPERF_CPU_PCT % of the CPU at the knee, $rate/s offered)"
}

# saturation_step TAG RATE PHASE: offer RATE/s; STEP_OK says whether the
# replies followed (HTTPERF_KEEPUP of it, no errors).  The best step kept
# up with so far is kept in best and best_c; the replies, calls and the
# server's CPU time (us) of every step kept up with are added up.
saturation_step() {
	local tag=$1 rate=$2 t0 t1 u0 u1
	# The server's CPU time is read inside a wall-clock window (us, no
	# program started): on its one CPU it cannot take more than that.
	t0=${EPOCHREALTIME/[.,]/}
	u0=$(server_usec)
	httperf_step "$LAB_DIR/logs/saturation-$tag-$rate.txt" "$rate"
	u1=$(server_usec)
	t1=${EPOCHREALTIME/[.,]/}
	if [ -z "$u0" ] || [ -z "$u1" ]; then
		die "no CPU time of $SRV_NAME's cgroup ($WORK_CG/cpu.stat) at $POINT"
	fi
	if [ -z "$P9_COUNT" ]; then SATURATION_P9=; elif [ -n "$SATURATION_P9" ]; then
		SATURATION_P9=$((SATURATION_P9 + P9_COUNT))
	fi
	STEP_OK=0
	[ "$ERRORS" -ne 0 ] || [ $((RATE_C * 10)) -lt $((KEEPUP_M * rate)) ] || STEP_OK=1
	printf '%s,%s,%s,%s,%s,%d.%02d,%s,%s,%s,%s,%s\n' "$LOOPS" "$NS" "$REPEAT" "$3" "$rate" \
		$((RATE_C / 100)) $((RATE_C % 100)) "$ERRORS" "$HTTPERF_CPU_PCT" "$STEP_OK" \
		"$(ns_to_s $(((u1 - u0) * 1000)))" "$(ns_to_s $(((t1 - t0) * 1000)))" \
		>>"$LAB_DIR/saturation.csv"
	[ "$STEP_OK" -eq 1 ] || return 0
	KEPT_STEPS=$((KEPT_STEPS + 1))
	KEPT_REPLIES=$((KEPT_REPLIES + REPLIES))
	KEPT_CALLS=$((KEPT_CALLS + WINDOW_CALLS))
	KEPT_CPU_US=$((KEPT_CPU_US + u1 - u0))
	if [ "$RATE_C" -gt "$best_c" ]; then
		best_c=$RATE_C
		best="$REPLIES $DURATION $WINDOW_CALLS $ERRORS $rate $HTTPERF_CPU_PCT"
	fi
}

# httperf_docroot <PAGE: SRV_DIR/htdocs/index.html, the page on stdin,
# which the server's user (HTTP_USER, HTTP_GROUP) can read.
HTTP_USER=nobody HTTP_GROUP=
httperf_docroot() {
	HTTP_GROUP=$(id -gn "$HTTP_USER")
	mkdir -p "$SRV_DIR/htdocs"
	chmod 755 "$SRV_DIR/htdocs"
	cat >"$SRV_DIR/htdocs/index.html"
	chmod 644 "$SRV_DIR/htdocs/index.html"
}

httperf_setup() {
	echo "loops,ns,repeat,phase,offered,reply_rate,errors,client_cpu_pct,sustained,server_s,window_s" \
		>"$LAB_DIR/saturation.csv"
}
