#!/usr/bin/env bash
# The guest's side of a sweep: the points of a plan that 'lab sweep' wrote
# (lablib.sweep.plan says each field), each at its setting of the delay,
# into a result folder.  Runs in the lab kernel, as root.
#   sweep.sh PLAN...                each plan's sweep, one after the other
#   sweep.sh --describe PLAN        check the workload's own settings, say
#                                   what a point does (no root, any kernel)
#   sweep.sh --stage-only DIR PLAN  (on the host) record the workload and
#                                   write what it touched to DIR/W.tar
#   sweep.sh --host PLAN            (on the host) the workload's wl_host
# It leaves raw.csv (a row a timed run), points.csv (the delay's own
# account of each point), by_call/ (its calls by number before and after
# each point: lab sweep makes by_call.csv of them), calibration/, logs/
# and meta.json; if stopped, in OUTPUT/<name>.incomplete/.
# Example:  lab sweep grep --dry-run   (lab sweep writes the plans and runs this)
# shellcheck disable=SC2153  # REPEATS, VALUES ...: the sourced plan's fields
set -euo pipefail
SWEEP_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
. "$SWEEP_DIR/../scripts/lib.sh"
# shellcheck source=workloads/lib/common.sh
. "$SWEEP_DIR/lib/common.sh"
# hook STEP: the plan's hooks' hook_STEP, if they define one (another
# experiment's extension of the sweep: workloads/README.md, "Hooks").
hook() { ! declare -F "hook_$1" >/dev/null || "hook_$1"; }

MODE=run
case ${1:-} in
--describe) MODE=describe; shift ;;
--stage-only) MODE=stage; STAGE_ONLY=${2:?--stage-only wants a folder}; shift 2 ;;
--host) MODE=host; shift ;;
-h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
[ $# -ge 1 ] || bad_arg "no plan given (lab sweep writes them; see --help)"
if [ $# -gt 1 ]; then
	[ "$MODE" = run ] || bad_arg "--$MODE takes one plan"
	for plan in "$@"; do "$0" "$plan"; done
	exit 0
fi
PLAN=$1
[ -f "$PLAN" ] || bad_arg "no plan at '$PLAN'"
# shellcheck source=/dev/null
. "$PLAN"
[ "${PLAN_FORMAT:-}" = 1 ] || bad_arg "$PLAN is no plan of this lab's (format 1)"
[ "$MODE" != run ] || lab_supervise "$PLAN"
[ "$JOBS" -gt 0 ] || JOBS=$(nproc)
# The source of the delay (delay_ready, delay_set ...: workloads/delay/).
# shellcheck source=workloads/delay/module.sh
. "$SWEEP_DIR/delay/$DELAY.sh"
# shellcheck source=/dev/null
. "$WL_FILE"
for kv in "${HOOK_VARS[@]}"; do declare "$kv"; done
# shellcheck source=/dev/null
[ -z "$HOOKS" ] || . "$HOOKS"
hook check
case $MODE in
describe) ! declare -F wl_describe >/dev/null || wl_describe; hook describe; exit 0 ;;
host) ! declare -F wl_host >/dev/null || wl_host; exit 0 ;;
stage)
	[ "$WL_STAGE" = host ] || bad_arg "--stage-only: $WORKLOAD stages in the VM (WL_STAGE=$WL_STAGE)"
	wl_check
	LAB_DIR=$(mktemp -d)
	mkdir "$LAB_DIR/logs"
	scratch_create
	trap 'scratch_remove; rm -rf "$LAB_DIR" "${STAGE_PARTIAL[@]}"' EXIT
	stage_archive "$STAGE_ONLY"
	exit 0
	;;
esac

# --- The kernel, the module and the workload's tools ------------------------
[ "$(id -u)" -eq 0 ] || die "must run as root (it sets module parameters and drops caches)"
delay_ready "$KNOB" ${SYSCALL_NRS:+syscalls} "${SET_NAMES[@]}"
[ "$CALIBRATE_AFTER" -eq 0 ] || [ -x "$LAB_ROOT/userspace/calibrate/calibrate" ] ||
	die "userspace/calibrate/calibrate is not built; run 'make userspace' or give --calibration"
wl_check
hook ready

# --- Finish, and the EXIT trap: the workload stopped, the machine's settings
# put back, the delay unloaded if the sweep loaded it, the cgroup, trace
# instance and staged root removed.
restore() {
	wl_finish || true
	hook restore
	delay_end
	work_cgroup_remove
	p9_teardown
	stage_remove
	scratch_remove
}
stopped() {
	local status=$?
	trap - EXIT INT TERM
	restore
	log "stopped; what was measured is in $LAB_DIR"
	exit "$status"
}
# meta.json: the plan's settings and what the guest found, each a separate
# argument of 'lab meta'; again once the workload is staged.
write_meta() {
	"$LAB_TOOL" meta "$LAB_DIR" "$WORKLOAD" "${META_ARGS[@]}" stage:="$STAGE_INFO" \
		${STAGE_CHECK:+stage_check="$STAGE_CHECK"} -- "${COMMAND_LINE[@]}" ||
		die "cannot write $LAB_DIR/meta.json"
}

# --- Set up: result folder, module, cgroup, meta.json ------------------------
lab_begin "$OUTPUT" "$WORKLOAD"
mkdir "$LAB_DIR/logs" "$LAB_DIR/by_call"
mkdir -p "$WORKDIR"
pin_work
trap stopped EXIT
# Only a TERM sent to the worker itself comes here; Ctrl-C does not.
trap 'log "terminated"; exit 143' TERM
in_vm=$(grep -q '^flags.* hypervisor' /proc/cpuinfo && echo true || echo false)
META_ARGS+=(jobs:="$JOBS" in_vm:="$in_vm" delay="$DELAY")
delay_begin
[ -z "$SYSCALL_NRS" ] || delay_set syscalls "$SYSCALL_NRS"
for j in "${!SET_NAMES[@]}"; do delay_set "${SET_NAMES[j]}" "${SET_VALUES[j]}"; done
work_cgroup_create "${WITH_CLIENTS:-0}"
p9_setup
scratch_create
META_ARGS+=(delay_cgroup="$TARGET_CG_PATH")
while read -r kv; do META_ARGS+=("workload_settings.$kv"); done < <(wl_settings)
# The delay's other settings as the sweep runs them, read back.
while read -r kv; do META_ARGS+=("delay_settings.$kv"); done < <(delay_settings)
write_meta
[ -z "$CALIBRATION" ] || cp -r "$CALIBRATION/." "$LAB_DIR/calibration"
# From here on only the work cgroup is delayed (with WITH_CLIENTS=1, the
# cgroup above it and the clients').
delay_set cgroup "$TARGET_CG_PATH"
echo "$RAW_COLUMNS" >"$LAB_DIR/raw.csv"
echo "loops,ns,delayed,spun_ns,measured_ns" >"$LAB_DIR/points.csv"
wl_prepare
hook begin
write_meta

# --- The points ---------------------------------------------------------------
# by_call_copy before|after [CSV]: the delay's calls by number now, kept as
# by_call/N.before and .after for the rows of CSV at this point.
BY_CALL_N=0
by_call_copy() {
	delay_by_call "$SCRATCH/by_call.$1" || return 0
	if [ "$1" = after ]; then
		BY_CALL_N=$((BY_CALL_N + 1))
		mv "$SCRATCH/by_call.before" "$LAB_DIR/by_call/$BY_CALL_N.before"
		mv "$SCRATCH/by_call.after" "$LAB_DIR/by_call/$BY_CALL_N.after"
		echo "$BY_CALL_N,$2,$LOOPS,$NS" >>"$LAB_DIR/by_call/index.csv"
	fi
}

# sweep_point I VALUE: point I of VALUES.  LOOPS or NS, POINT (for
# messages), TAG (for log names) and REPEAT are the workload's wl_run's.
sweep_point() {
	local i=$1 value=$2 d0 s0 d1 s1 measured=
	# shellcheck disable=SC2034  # TAG is the workload's (lib/*.sh)
	if [ "$KNOB" = ns ]; then
		LOOPS='' NS=$value POINT="ns=$value" TAG=ns$value
	else
		LOOPS=$value NS='' POINT="loops=$value" TAG=l$value
	fi
	d0=$(delay_stat delayed) s0=$(delay_stat spun_ns)
	by_call_copy before
	delay_set "$KNOB" "$value"
	wl_point_begin
	for ((REPEAT = 1; REPEAT <= REPEATS; REPEAT++)); do
		! lab_stopping || exit 1
		wl_run
	done
	delay_set "$KNOB" 0
	d1=$(delay_stat delayed) s1=$(delay_stat spun_ns)
	by_call_copy after by_call.csv
	if [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ]; then
		# ns a delayed call, to a tenth (half up)
		measured=$((((s1 - s0) * 20 / (d1 - d0) + 1) / 2))
		measured=$((measured / 10)).$((measured % 10))
	fi
	echo "$LOOPS,$NS,${d1:+$((d1 - d0))},${s1:+$((s1 - s0))},$measured" >>"$LAB_DIR/points.csv"
	log "${PART:+part $PART: }[$i/${#VALUES[@]}] $POINT${measured:+ ($measured ns measured)}"
}

for i in "${!VALUES[@]}"; do sweep_point "$((i + 1))" "${VALUES[i]}"; done
hook after_points
hook end

# --- Finish: the calibration after the points --------------------------------
if [ "$CALIBRATE_AFTER" -eq 1 ]; then
	# Every task delayed, on CPU 0, the workload stopped (NOTES.md,
	# "Calibrating after the points").
	wl_finish
	delay_set cgroup ""
	loops=$(IFS=,; echo "${ALL_VALUES[*]}")
	log "calibrating the added latency of loop counts $loops"
	"$LAB_ROOT/userspace/calibrate/calibrate" -l "$loops" "${CAL_SIZE[@]}" -C 0 -q \
		-o "$LAB_DIR" --name calibration >"$LAB_DIR/logs/calibrate.txt" 2>&1 ||
		die "calibration failed; see $LAB_DIR/logs/calibrate.txt"
fi
restore
lab_commit "$WORKLOAD"
