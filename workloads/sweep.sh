#!/usr/bin/env bash
# Run a workload at several delay-module loop counts and plot its throughput
# against the added system-call latency.  Runs in the patched kernel, as
# root; 'sweep.sh --help' says how.
set -euo pipefail
SWEEP_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
. "$SWEEP_DIR/../scripts/lib.sh"
# shellcheck source=workloads/lib/common.sh
. "$SWEEP_DIR/lib/common.sh"

usage() {
	cat <<'EOF'
usage: sweep.sh WORKLOAD [options]
       sweep.sh cmd [options] -- COMMAND [ARG...]

Run WORKLOAD in the patched kernel at each loop count of the delay module
and write throughput against the calibrated added system-call latency, with
the prediction time = base + syscalls x added latency, to
RESULTS/<workload>-<date>-<time>/.  Needs root and the lab kernel.

Workloads (defaults: loop counts, repeats):
  kbuild   build a Linux tree: 'make clean' and dropping the page cache
           off the clock before each build               0:250:50, 3
  grep     grep -r for the system-call instruction ('syscall') over a Linux
           tree; page cache dropped and one untimed grep before each group
           of repeats                                    0:500:50, 5
  apache   a private Apache httpd on 127.0.0.1 (its own config, a small
           static page) in its own cgroup, only it delayed; httperf on
           another CPU: 10 connections at 1/s (reply time), then the rate
           raised until the replies stop following it    0:700:50, 3
  cmd      time COMMAND (run with bash -c if it is one word with spaces)
                                                         0:500:100, 3
  all      kbuild, grep and apache one after the other, each its own folder

Options:
  -l, --loops LIST       loop counts: '0,50,100', 'start:stop:step' or a mix
  -r, --repeats N        timed runs per loop count
  -s, --scale SCALE      how much work one run is (kbuild, grep):
                           full   the whole tree: defconfig 'make' / all files
                           vm     what suits the TCG VM: tinyconfig, make
                                  lib/string.o (about 90 s); grep over kernel/
                                  and mm/ (about 7 s)
                           small  for tests: tinyconfig lib/ctype.o; grep
                                  over kernel/time/
                         default: vm inside a virtual machine, full otherwise
  -c, --calibration FILE use this calibration.json (from 'make calibrate')
                         instead of calibrating the sweep's loop counts first
  -o, --output DIR       parent of the result folder (default: results/)
  -t, --tree DIR         Linux source tree for kbuild and grep (default:
                         build/src/linux-source-6.12, unpacked by 'make kernel')
  -j, --jobs N           make -j for kbuild (default: the number of CPUs)
  -w, --workdir DIR      scratch space: kbuild objects, Apache's files
                         (default: /tmp/lab-sweep)
      --step-seconds S   apache: length of one httperf rate step (default 4)
      --no-analysis      leave summary, model and plot to a later
                         'userspace/analysis/sweep_report.py DIR'
  -h, --help             this text

Example:
  ./workloads/sweep.sh apache -l 0:700:100 -r 2
  ./workloads/sweep.sh cmd -l 0,200,400 -- tar cf /dev/null /usr/include

The delay module is loaded if it is not (and unloaded at the end); loops
and the cgroup target are put back however the sweep ends.  An interrupted
sweep leaves what it measured in RESULTS/<name>.incomplete/.
EOF
}

WORKLOAD=
LOOP_LIST=
REPEATS=
SCALE=
CALIBRATION=
OUTPUT=$LAB_ROOT/results
TREE=$LAB_ROOT/build/src/linux-source-6.12
JOBS=$(nproc)
WORKDIR=/tmp/lab-sweep
STEP_SECONDS=4
ANALYSIS=1
COMMAND=()
ARGS=("$@")

need_arg() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (see --help)"; fi; }
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	-l | --loops) need_arg "$@"; LOOP_LIST=$2; shift 2 ;;
	-r | --repeats) need_arg "$@"; REPEATS=$2; shift 2 ;;
	-s | --scale) need_arg "$@"; SCALE=$2; shift 2 ;;
	-c | --calibration) need_arg "$@"; CALIBRATION=$2; shift 2 ;;
	-o | --output) need_arg "$@"; OUTPUT=$2; shift 2 ;;
	-t | --tree) need_arg "$@"; TREE=$2; shift 2 ;;
	-j | --jobs) need_arg "$@"; JOBS=$2; shift 2 ;;
	-w | --workdir) need_arg "$@"; WORKDIR=$2; shift 2 ;;
	--step-seconds) need_arg "$@"; STEP_SECONDS=$2; shift 2 ;;
	--no-analysis) ANALYSIS=0; shift ;;
	--) shift; COMMAND=("$@"); break ;;
	-*) die "unknown option '$1' (see --help)" ;;
	*)
		[ -z "$WORKLOAD" ] || die "one workload at a time: '$WORKLOAD' and '$1' (see --help)"
		WORKLOAD=$1
		shift
		;;
	esac
done

[ -n "$WORKLOAD" ] || die "no workload given: kbuild, grep, apache, cmd or all (see --help)"
case $WORKLOAD in
kbuild | grep | apache | cmd) ;;
all)
	# Each workload its own sweep and folder, with the same options.
	rest=()
	for a in "${ARGS[@]}"; do [ "$a" = all ] || rest+=("$a"); done
	for w in kbuild grep apache; do
		"$0" "$w" "${rest[@]}"
	done
	exit 0
	;;
*) die "unknown workload '$WORKLOAD': kbuild, grep, apache, cmd or all" ;;
esac

# One file per workload defines WL_LOOPS, WL_REPEATS and the wl_* steps.
# shellcheck source=/dev/null
. "$SWEEP_DIR/lib/$WORKLOAD.sh"

# --- Check everything before anything is created or changed ---------------
is_uint() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }

# Expand '0,50,100' / 'a:b:c' / a mix into LOOPS_ARRAY, strictly increasing.
expand_loops() {
	local item a b c v prev=-1
	LOOPS_ARRAY=()
	IFS=, read -r -a items <<<"$1"
	[ ${#items[@]} -gt 0 ] || return 1
	for item in "${items[@]}"; do
		if is_uint "$item"; then
			LOOPS_ARRAY+=("$((10#$item))")
		elif IFS=: read -r a b c <<<"$item" && is_uint "$a" && is_uint "$b" &&
			is_uint "$c" && [ "$c" -gt 0 ] && [ "$((10#$a))" -le "$((10#$b))" ]; then
			for ((v = 10#$a; v <= 10#$b; v += 10#$c)); do LOOPS_ARRAY+=("$v"); done
		else
			return 1
		fi
	done
	for v in "${LOOPS_ARRAY[@]}"; do
		[ "$v" -le 1000000 ] && [ "$v" -gt "$prev" ] || return 1
		prev=$v
	done
}

in_vm() { grep -q '^flags.* hypervisor' /proc/cpuinfo; }

LOOP_LIST=${LOOP_LIST:-$WL_LOOPS}
REPEATS=${REPEATS:-$WL_REPEATS}
SCALE=${SCALE:-$(in_vm && echo vm || echo full)}
expand_loops "$LOOP_LIST" ||
	die "bad loop list '$LOOP_LIST': want counts 0..1000000 in increasing order, as '0,50,100' or 'start:stop:step'"
[ "${LOOPS_ARRAY[0]}" -eq 0 ] ||
	die "the loop list must start at 0: the model needs the undelayed run"
[ ${#LOOPS_ARRAY[@]} -ge 2 ] || die "the loop list needs at least two counts"
positive() {
	if ! is_uint "$2" || [ "$((10#$2))" -lt 1 ]; then
		die "$1 must be a positive number, not '$2'"
	fi
}
positive --repeats "$REPEATS"
positive --jobs "$JOBS"
positive --step-seconds "$STEP_SECONDS"
case $SCALE in full | vm | small) ;; *) die "unknown scale '$SCALE': full, vm or small" ;; esac
if [ "$WORKLOAD" = cmd ]; then
	[ ${#COMMAND[@]} -gt 0 ] || die "cmd needs a command after '--' (see --help)"
elif [ ${#COMMAND[@]} -gt 0 ]; then
	die "only the cmd workload takes a command after '--'"
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (it sets module parameters and drops caches)"
grep -q ' syscall_hook_register$' /proc/kallsyms ||
	die "this kernel ($(uname -r)) has no syscall hook; boot the lab kernel ('make vm')"
LOADED_HERE=0
if [ ! -d "$DELAY_DIR" ]; then
	[ -f "$LAB_ROOT/modules/delay/delay.ko" ] ||
		die "the delay module is neither loaded nor built; run 'make module'"
fi
[ ! -d "$DELAY_DIR" ] || [ -e "$DELAY_CGROUP" ] ||
	die "the loaded delay module has no cgroup parameter; rmmod it so the current one is loaded"
if [ -n "$CALIBRATION" ]; then
	[ -f "$CALIBRATION" ] || die "no calibration file '$CALIBRATION'"
	grep -q '"ns_per_loop"' "$CALIBRATION" ||
		die "'$CALIBRATION' is not a calibration.json (no fit in it)"
else
	[ -x "$LAB_ROOT/userspace/calibrate/calibrate" ] ||
		die "userspace/calibrate/calibrate is not built; run 'make userspace' or give --calibration"
fi
wl_check

# --- Set up: result folder, module, cgroup; undo it all however we end -----
NAME=$WORKLOAD-$(date +%Y%m%d-%H%M%S)
FINAL_DIR=$OUTPUT/$NAME
RUN_DIR=$FINAL_DIR.incomplete
mkdir -p "$OUTPUT"
mkdir "$RUN_DIR" "$RUN_DIR/logs"
mkdir -p "$WORKDIR"
OLD_LOOPS=
OLD_CGROUP=
FINISHED=0

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	wl_finish || true
	if [ -d "$DELAY_DIR" ]; then
		if [ "$LOADED_HERE" -eq 1 ]; then
			rmmod delay || log "warning: could not unload the delay module"
		else
			[ -z "$OLD_LOOPS" ] || delay_write loops "$OLD_LOOPS" || true
			delay_write cgroup "$OLD_CGROUP" 2>/dev/null || true
		fi
	fi
	work_cgroup_remove
	if [ "$FINISHED" -eq 0 ] && [ -d "$RUN_DIR" ]; then
		log "stopped; what was measured is in $RUN_DIR"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

if [ ! -d "$DELAY_DIR" ]; then
	insmod "$LAB_ROOT/modules/delay/delay.ko"
	LOADED_HERE=1
fi
OLD_LOOPS=$(cat "$DELAY_LOOPS")
OLD_CGROUP=$(cat "$DELAY_CGROUP")
delay_set loops 0
delay_set cgroup ""
work_cgroup_create

# The values go in through the environment: a path or a command with a
# quote in it must not become Python source.
(
	export WORKLOAD SCALE TREE JOBS WORKDIR REPEATS OLD_LOOPS OLD_CGROUP WORK_CG_PATH CALIBRATION
	LOOPS_LIST="${LOOPS_ARRAY[*]}" WL_SETTINGS=$(wl_settings) IN_VM=$(in_vm && echo 1 || echo 0) \
		python3 - "$RUN_DIR/settings.json" "${COMMAND[@]}" <<'EOF'
import json, os, platform, sys, time
env = os.environ
settings = {
    "workload": env["WORKLOAD"], "command": sys.argv[2:] or None,
    "loops": [int(x) for x in env["LOOPS_LIST"].split()], "repeats": int(env["REPEATS"]),
    "scale": env["SCALE"], "tree": env["TREE"], "jobs": int(env["JOBS"]),
    "workdir": env["WORKDIR"], "kernel": platform.release(),
    "kernel_version": platform.version(), "cpus": os.cpu_count(),
    "in_vm": env["IN_VM"] == "1", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "delay_cgroup": env["WORK_CG_PATH"], "module_loops_before": int(env["OLD_LOOPS"]),
    "module_cgroup_before": env["OLD_CGROUP"],
    "calibration_from": env["CALIBRATION"] or "calibrated by the sweep",
    "workload_settings": dict(kv.split("=", 1) for kv in env["WL_SETTINGS"].split()),
}
with open(sys.argv[1], "w") as f:
    json.dump(settings, f, indent=2)
EOF
)

# --- Calibrate (every task delayed, on CPU 0) or take the given file -------
if [ -n "$CALIBRATION" ]; then
	cp "$CALIBRATION" "$RUN_DIR/calibration.json"
else
	# 100 batches of 1000 calls a point, fewer when the loop counts are so
	# large that those would take minutes (2000 calls at 400000 loops under
	# TCG are 5 s a point).
	cal_size=(-b 100 -c 1000)
	[ "${LOOPS_ARRAY[-1]}" -le 20000 ] || cal_size=(-b 20 -c 100)
	log "calibrating the added latency of loop counts $LOOP_LIST"
	"$LAB_ROOT/userspace/calibrate/calibrate" -l "$LOOP_LIST" "${cal_size[@]}" -r 3 --cpu 0 \
		--no-plot -q -o "$RUN_DIR" >"$RUN_DIR/logs/calibrate.txt" 2>&1 ||
		die "calibration failed; see $RUN_DIR/logs/calibrate.txt"
fi
NS_PER_LOOP=$(python3 -c '
import json, sys
fits = json.load(open(sys.argv[1]))["fits"].values()
print("%.4f" % (sum(f["ns_per_loop"] for f in fits) / len(fits)))' "$RUN_DIR/calibration.json")
log "added latency: $NS_PER_LOOP ns per loop"

# From here on only the work cgroup is delayed.
delay_set cgroup "$WORK_CG_PATH"
echo "$RAW_HEADER" >"$RUN_DIR/raw.csv"

wl_prepare

# --- The sweep: one group of repeats per loop count ------------------------
# Mean time per unit of work of the rows just recorded for $LOOPS, the
# first measure only, for the progress line.
point_summary() {
	awk -F, -v l="$LOOPS" 'NR > 1 && $3 == l {
		if (m == "") m = $2
		if ($2 == m) { t = $6 / $5; s += t; q += t * t; n++ } }
	END { if (n) { a = s / n; v = n > 1 ? (q - n * a * a) / (n - 1) : 0
		sd = v > 0 ? sqrt(v) : 0
		printf "%s %.4f s per unit +- %.4f (n=%d)", m, a, sd, n } }' "$RUN_DIR/raw.csv"
}

fmt_duration() {
	local s=$1
	if [ "$s" -ge 3600 ]; then
		printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
	else
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	fi
}

npoints=${#LOOPS_ARRAY[@]}
started=$SECONDS
i=0
for LOOPS in "${LOOPS_ARRAY[@]}"; do
	i=$((i + 1))
	delay_set loops "$LOOPS"
	wl_point_begin
	for ((REPEAT = 1; REPEAT <= REPEATS; REPEAT++)); do
		wl_run
	done
	delay_set loops 0
	elapsed=$((SECONDS - started))
	eta=$((elapsed * (npoints - i) / i))
	added=$(awk -v l="$LOOPS" -v k="$NS_PER_LOOP" 'BEGIN { printf "%.0f", l * k }')
	log "[$i/$npoints] loops=$LOOPS (+$added ns): $(point_summary); elapsed $(fmt_duration "$elapsed"), ETA $(fmt_duration "$eta")"
done

wl_finish
mv "$RUN_DIR" "$FINAL_DIR"
RUN_DIR=$FINAL_DIR
FINISHED=1
if [ "$ANALYSIS" -eq 1 ]; then
	py=$LAB_VENV/bin/python
	[ -x "$py" ] || py=python3
	"$py" "$LAB_ROOT/userspace/analysis/sweep_report.py" "$RUN_DIR" ||
		die "the analysis failed; the measurements are in $RUN_DIR"
fi
log "results: $RUN_DIR"
