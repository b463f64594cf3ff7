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
# The tax experiment's taxes, for --tax (a lab without it has none).
TAXES_SH=$LAB_ROOT/userspace/tax/taxes.sh
if [ -e "$TAXES_SH" ]; then
	# shellcheck source=userspace/tax/taxes.sh
	. "$TAXES_SH"
else
	TAX_PROGRAMS=()
	tax_off() { :; }
fi

usage() {
	cat <<'EOF'
usage: sweep.sh WORKLOAD [options]
       sweep.sh WORKLOAD [options] -- COMMAND [ARG...]   (a workload that times a command)

Run WORKLOAD in the patched kernel at each loop count of the delay module
and write throughput against the calibrated added system-call latency, with
the prediction time = base + syscalls x added latency, to
OUTPUT/<workload>-<date>-<time>/ (and OUTPUT/latest-<workload>).  Needs root
and the lab kernel.

EOF
	wl_list
	cat <<'EOF'

A workload's defaults reach, on the virtual clock in the VM, the delay per
call that doubles a unit of work (base / calls, d1/2), so that the whole
curve shows.

Options:
  -l, --loops LIST       loop counts: '0,50,100', 'start:stop:step' or a mix;
                         each list starts at 0 ('0' alone: the workload
                         undelayed, as the tax experiment runs it)
      --ns LIST          requested delays in ns instead of loop counts (the
                         module's ns mode: it spins until that long has
                         passed); no calibration needed.  0..5000000
      --syscalls NAMES   delay only these system calls, by name, comma-
                         separated (read,write,openat); numbers from the
                         kernel's own syscall_64.tbl.  Default: all
      --set NAME=VALUE   set one more of the delay module's parameters for
                         the whole sweep (again for another): how
                         (mode=spin|sleep), where (where=entry|exit), which
                         calls (every=N, first=K, ppm=P, seed=S) and some
                         calls' own delays (delays=read:2000,futex:50000);
                         the module checks the value.  Recorded in meta.json
                         ("delay_settings") and put back at the end
  -r, --repeats N        timed runs per point
      --scale SCALE      how much work one run is (kbuild, grep):
                           full   the whole tree: defconfig 'make' / all files
                           vm     what suits the TCG VM: tinyconfig, make
                                  lib/string.o (about 90 s); grep over kernel/
                                  and mm/ (about 7 s)
                           small  for tests: tinyconfig lib/ctype.o; grep
                                  over kernel/time/
                         default: vm inside a virtual machine, full otherwise
      --calibration DIR  use this calibration (a calibrate result folder that
                         'make calibrate' analysed, e.g. results/latest-calibrate)
                         instead of calibrating the sweep's loop counts after
                         its points
  -o, --output DIR       parent of the result folder (default: results/)
      --tree DIR         Linux source tree for kbuild and grep (default:
                         build/src/linux-source-6.12, unpacked by 'make kernel')
  -j, --jobs N           make -j for kbuild (default: the number of CPUs)
      --workdir DIR      scratch space: kbuild objects, Apache's files
                         (default: /tmp/lab-sweep)
      --step-seconds S   apache: length of one httperf rate step (default 4;
                         1 on the virtual clock, where there is no noise
                         for a longer step to average out)
      --tax TAX          run the workload under a real kernel cost for the
                         whole sweep: one of the tax experiment's taxes
                         (userspace/tax/README.md: seccomp-linear, trace,
                         audit-one, bpftrace, strace ...), applied after the
                         staging and put back before the calibration and
                         however the sweep ends; recorded in meta.json
                         ("tax").  Its tool runs from the staged root
      --count-clients    (apache, redis) after the points, the measures once
                         more with the clients in a cgroup of their own that
                         the module counts instead of the server's: the
                         clients' calls a unit of work (clients.csv) and by
                         number (clients_by_call.csv), which the tax
                         experiment's prediction adds for the taxes every
                         process pays.  Not timed for the results
      --delay-clients    (apache, redis) the clients run in a cgroup beside the
                         server's under one the module targets: their calls
                         are delayed and counted with the server's (a
                         stand-in for a cost every process pays; the calls
                         a unit of work are then the server's and clients').
                         The server's CPU is its own cgroup's still
      --no-stage         in the VM, run the workload from the host's files
                         (9p) as they are, not from a copy in memory of what
                         it touched (see below)
      --stage-only DIR   (kbuild, grep, cmd; on the host, what 'make sweep'
                         runs first) record the workload and write what it
                         touched to DIR/<workload>.tar, then stop
      --stage-from DIR   in the VM, unpack DIR/<workload>.tar instead of
                         recording and copying in the guest (slow under TCG)
      --no-analysis      leave summary, model and plot to a later
                         'lab analyse DIR' (make sweep runs it on the host)
      --part K/N --points LIST
                         run part K of N: the sweep's points of LIST only, each
                         with its repeats, into a folder of its own that
                         'lab sweep --vms N' merges into one sweep
                         (lablib.sweep.parts deals the points out and merges);
                         only part 1 calibrates.  Implies --no-analysis.  For
                         'all', one --points W:LIST a workload
      --dry-run          print the points the sweep (or part) would run, one a
                         line, and what else it would do (stderr), and stop;
                         needs neither root nor the lab kernel
      --plan             print the plan the host runner reads (KEY=VALUE lines,
                         a block a workload: points, cost of a point, where it
                         stages, scale) and stop; needs neither root nor the
                         lab kernel
  -h, --help             this text

Example:
  ./workloads/sweep.sh apache -l 0:700:100 -r 2
  ./workloads/sweep.sh cmd -l 0,200,400 -- tar cf /dev/null /usr/include
  ./workloads/sweep.sh apache --ns 0,1000,5000,20000 --syscalls futex,epoll_wait
  ./workloads/sweep.sh grep --ns 0,2000,8000 --set mode=sleep --set where=exit

In the VM (the root file system is the host's, over 9p) every workload
first runs once under strace, and what it touched is copied into a tmpfs
(its size and the time it took in meta.json's "stage"); the timed runs
run chrooted there.  Each timed run's requests to the host's files are
counted in raw.csv (p9_requests); a point with any is not exact.  A
command that prints in the staged root what it did not print when it
was recorded, or that reached for the network, leaves no point exact
(meta.json's stage_check and stage.network).

The delay module is loaded if it is not (and unloaded at the end); loops,
ns, the system-call set and the cgroup target are put back however the
sweep ends.  Every point records the delay the module measured itself
(points.csv) beside the calibrated or requested one.  An interrupted
sweep leaves what it measured in OUTPUT/<name>.incomplete/.
EOF
}

# The workloads: each file of lib/, and of LAB_WORKLOADS_DIR's folders
# (colon-separated), that declares WL_ABOUT (lablib.sweep.catalog says how;
# README.md, "Adding a workload"); 'all' those that declare WL_IN_ALL=1.
# WL_FILES: each one's file; WORKLOADS, ALL_WORKLOADS: names, sorted.
declare -A WL_FILES=()
WORKLOADS=() ALL_WORKLOADS=()
wl_catalog() {
	local f name
	while read -r f; do
		name=${f##*/}
		name=${name%.sh}
		[ -n "${WL_FILES[$name]:-}" ] || WL_FILES[$name]=$f
	done < <(wl_files)
	mapfile -t WORKLOADS < <(printf '%s\n' "${!WL_FILES[@]}" | LC_ALL=C sort)
	for name in "${WORKLOADS[@]}"; do
		[ "$(wl_declared WL_IN_ALL "${WL_FILES[$name]}")" != 1 ] || ALL_WORKLOADS+=("$name")
	done
}
# wl_list: each workload, what it runs and its defaults, for --help.
wl_list() {
	local name f
	echo "Workloads (defaults: loop counts, runs a point):"
	for name in "${WORKLOADS[@]}"; do
		f=${WL_FILES[$name]}
		printf '  %-8s %s\n  %-8s (%s, %s)\n' "$name" "$(wl_declared WL_ABOUT "$f")" "" \
			"$(wl_declared WL_LOOPS "$f")" "$(wl_declared WL_REPEATS "$f")"
	done
	printf '  %-8s %s\n' all "$(IFS=,; echo "${ALL_WORKLOADS[*]}"), one after the other, each its own folder"
}
wl_catalog

# --- Phase: parse -----------------------------------------------------------
WORKLOAD=
LOOP_LIST=
NS_LIST=
SYSCALL_NAMES=
SETTINGS=()
REPEATS=
SCALE=
CALIBRATION=
OUTPUT=$LAB_ROOT/results
DEFAULT_TREE=$LAB_ROOT/build/src/linux-source-6.12
TREE=$DEFAULT_TREE
JOBS=$(nproc)
WORKDIR=/tmp/lab-sweep
STEP_SECONDS=
ANALYSIS=1
STAGING=1
PART=
POINTS=()
DRY_RUN=0
PLAN=0
TAX=
COUNT_CLIENTS=0
DELAY_CLIENTS=0
COMMAND=()
ARGS=("$@")

sweep_parse() {
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help) usage; exit 0 ;;
		-l | --loops) want_value "$@"; LOOP_LIST=$2; shift 2 ;;
		--ns) want_value "$@"; NS_LIST=$2; shift 2 ;;
		--syscalls) want_value "$@"; SYSCALL_NAMES=$2; shift 2 ;;
		--set) want_value "$@"; SETTINGS+=("$2"); shift 2 ;;
		--tax) want_value "$@"; TAX=$2; shift 2 ;;
		--count-clients) COUNT_CLIENTS=1; shift ;;
		--delay-clients) DELAY_CLIENTS=1; shift ;;
		-r | --repeats) want_value "$@"; REPEATS=$2; shift 2 ;;
		--scale) want_value "$@"; SCALE=$2; shift 2 ;;
		--calibration) want_value "$@"; CALIBRATION=$2; shift 2 ;;
		-o | --output) want_value "$@"; OUTPUT=$2; shift 2 ;;
		--tree) want_value "$@"; TREE=$2; shift 2 ;;
		-j | --jobs) want_value "$@"; JOBS=$2; shift 2 ;;
		--workdir) want_value "$@"; WORKDIR=$2; shift 2 ;;
		--step-seconds) want_value "$@"; STEP_SECONDS=$2; shift 2 ;;
		--no-analysis) ANALYSIS=0; shift ;;
		--no-stage) STAGING=0; shift ;;
		--stage-only) want_value "$@"; STAGE_ONLY=$2; shift 2 ;;
		--stage-from) want_value "$@"; STAGE_FROM=$2; shift 2 ;;
		--part) want_value "$@"; PART=$2; shift 2 ;;
		--points) want_value "$@"; POINTS+=("$2"); shift 2 ;;
		--dry-run) DRY_RUN=1; shift ;;
		--plan) PLAN=1; shift ;;
		--) shift; COMMAND=("$@"); break ;;
		-*) bad_arg "unknown option '$1' (see --help)" ;;
		*)
			[ -z "$WORKLOAD" ] || bad_arg "one workload at a time: '$WORKLOAD' and '$1' (see --help)"
			WORKLOAD=$1
			shift
			;;
		esac
	done
	local names
	names=$(IFS=,; echo "${WORKLOADS[*]}")
	[ -n "$WORKLOAD" ] || bad_arg "no workload given: ${names//,/, } or all (see --help)"
	[[ " ${WORKLOADS[*]} all " == *" $WORKLOAD "* ]] ||
		bad_arg "WORKLOAD wants ${names//,/, } or all, not '$WORKLOAD'"
}

# sweep_all: each workload of 'all' its own sweep and folder, with the same
# options; a --points W:LIST goes to W alone, and --stage-only to the
# workloads staged on the host.
sweep_all() {
	local w a rest want_points=0 staged
	for w in "${ALL_WORKLOADS[@]}"; do
		rest=()
		for a in "${ARGS[@]}"; do
			if [ "$want_points" -eq 1 ]; then
				want_points=0
				[[ $a == *:* ]] ||
					bad_arg "all: --points wants W:LIST, a workload's points, not '$a'"
				[ "${a%%:*}" != "$w" ] || rest+=(--points "${a#*:}")
			elif [ "$a" = --points ]; then
				want_points=1
			elif [ "$a" != all ]; then
				rest+=("$a")
			fi
		done
		if [ -n "$STAGE_ONLY" ]; then
			staged=$(wl_declared WL_STAGE "${WL_FILES[$w]}")
			[ "$staged" = host ] || continue
		fi
		"$0" "$w" "${rest[@]}"
	done
}

sweep_parse "$@"
if [ "$WORKLOAD" = all ]; then
	sweep_all
	exit 0
fi
# From here on a worker does the sweep and this process takes the signals
# (scripts/lib.sh says why).
lab_supervise "${ARGS[@]}"

# One file per workload defines WL_LOOPS, WL_REPEATS, WL_STAGE and the wl_*
# steps, and WL_COST_SLOPE if its points' cost does not grow as 1 + value /
# the last value (lablib.sweep.parts's balance()).
WL_COST_SLOPE=1
# shellcheck source=/dev/null
. "${WL_FILES[$WORKLOAD]}"

# --- Helpers of the phases --------------------------------------------------
# want_rising OPTION LIST MAX WHAT: LIST in liblab's one syntax, strictly
# increasing from 0, at most MAX, into VALUES; or status 2.
want_rising() {
	local v prev=-1 list
	list=$(lab_list "$1" "$2" "$3")
	read -r -a VALUES <<<"$list"
	for v in "${VALUES[@]}"; do
		[ "$v" -gt "$prev" ] || bad_arg "$1 wants $4 in increasing order, not '$2'"
		prev=$v
	done
	# 0 alone is a sweep too: the workload undelayed, as the tax
	# experiment runs it under each tax.
	[ "${VALUES[0]}" -eq 0 ] ||
		bad_arg "$1 wants a list that starts at 0 (the model needs the undelayed run), not '$2'"
}

# The 64-bit numbers of system calls named in $1 (comma-separated), from
# the kernel's own table (the tree's syscall_64.tbl, else the installed
# <asm/unistd_64.h>), as a comma-separated list; dies naming an unknown one.
syscall_numbers() {
	local tbl=$TREE/arch/x86/entry/syscalls/syscall_64.tbl
	local hdr=/usr/include/x86_64-linux-gnu/asm/unistd_64.h name nr out=()
	[ -f "$tbl" ] || tbl=$LAB_BUILD/src/linux-source-6.12/arch/x86/entry/syscalls/syscall_64.tbl
	IFS=, read -r -a names <<<"$1"
	[ ${#names[@]} -gt 0 ] || bad_arg "--syscalls wants names like read,write,openat, not '$1'"
	for name in "${names[@]}"; do
		[[ $name =~ ^[a-z0-9_]+$ ]] || bad_arg "--syscalls wants system-call names, not '$name'"
		nr=
		if [ -f "$tbl" ]; then
			nr=$(awk -v n="$name" '$2 != "x32" && $3 == n { print $1; exit }' "$tbl")
		elif [ -f "$hdr" ]; then
			nr=$(awk -v n="__NR_$name" '$1 == "#define" && $2 == n { print $3; exit }' "$hdr")
		else
			die "--syscalls: no system-call table (neither $tbl nor $hdr)"
		fi
		[ -n "$nr" ] || bad_arg "--syscalls wants 64-bit system calls of ${tbl##*/}, not '$name'"
		out+=("$nr")
	done
	(IFS=,; echo "${out[*]}")
}

in_vm() { grep -q '^flags.* hypervisor' /proc/cpuinfo; }

# --- Phase: check (what needs neither root nor the lab kernel) -----------
sweep_check() {
	local kv settable
	# The clock this sweep runs on: the VM's (vm.sh's lab.clock=), or the host's.
	# LAB_CMDLINE: another kernel command line to read it from (the tests').
	RUN_CLOCK=$(sed -n 's/.*\blab\.clock=\([a-z]*\).*/\1/p' "${LAB_CMDLINE:-/proc/cmdline}")
	RUN_CLOCK=${RUN_CLOCK:-host}
	# On the virtual clock the runs of a point agree to the instruction: a
	# workload may want fewer of them there (WL_REPEATS_VIRTUAL).
	if [ "$RUN_CLOCK" = virtual ] && [ -n "${WL_REPEATS_VIRTUAL:-}" ]; then
		WL_REPEATS=$WL_REPEATS_VIRTUAL
	fi
	REPEATS=${REPEATS:-$WL_REPEATS}
	STEP_SECONDS=${STEP_SECONDS:-$([ "$RUN_CLOCK" = virtual ] && echo 1 || echo 4)}
	SCALE=${SCALE:-$(in_vm && echo vm || echo full)}
	lab_built "$LAB_TOOL"
	# The knob swept: loops (calibrated into ns) or ns (requested directly).
	if [ -n "$NS_LIST" ]; then
		[ -z "$LOOP_LIST" ] || bad_arg "--ns and --loops exclude each other: one knob at a time"
		KNOB=ns
		want_rising --ns "$NS_LIST" 5000000 delays
	else
		KNOB=loops
		LOOP_LIST=${LOOP_LIST:-$WL_LOOPS}
		want_rising --loops "$LOOP_LIST" 1000000 "loop counts"
	fi
	want_uint --repeats "$REPEATS" 1
	want_uint --jobs "$JOBS" 1
	want_uint --step-seconds "$STEP_SECONDS" 1
	case $SCALE in full | vm | small) ;; *) bad_arg "--scale wants full, vm or small, not '$SCALE'" ;; esac
	if [ "${WL_COMMAND:-0}" = 1 ]; then
		[ ${#COMMAND[@]} -gt 0 ] || bad_arg "$WORKLOAD needs a command after '--' (see --help)"
	elif [ ${#COMMAND[@]} -gt 0 ]; then
		bad_arg "$WORKLOAD takes no command after '--' (a workload that declares WL_COMMAND=1 does)"
	fi
	if [ -n "$STAGE_ONLY$STAGE_FROM" ]; then
		[ "$STAGING" -eq 1 ] || bad_arg "--no-stage excludes --stage-only and --stage-from"
		[ -z "$STAGE_ONLY" ] || [ -z "$STAGE_FROM" ] ||
			bad_arg "--stage-only records on the host, --stage-from unpacks in the VM: one of them"
	fi
	[ -z "$STAGE_ONLY" ] || [ "$WL_STAGE" = host ] ||
		bad_arg "--stage-only: $WORKLOAD stages in the VM, not on the host (WL_STAGE=$WL_STAGE)"
	[ -z "$STAGE_FROM" ] || [ -d "$STAGE_FROM" ] ||
		bad_arg "--stage-from wants a folder that --stage-only wrote, not '$STAGE_FROM'"
	# --set: the module's other parameters (SETTABLE, which meta.json's
	# delay_settings also records), each once; the module checks the values
	# when they are written.  SET_NAMES and SET_VALUES in order.
	SETTABLE=(mode where every first ppm seed delays)
	settable=${SETTABLE[*]}
	SET_NAMES=() SET_VALUES=()
	for kv in "${SETTINGS[@]}"; do
		[[ $kv =~ ^([a-z]+)=([A-Za-z0-9_:,]+)$ ]] ||
			bad_arg "--set wants NAME=VALUE (mode=sleep, where=exit, ppm=1000 ...), not '$kv'"
		case ${BASH_REMATCH[1]} in
		loops | ns | syscalls | cgroup)
			bad_arg "--set ${BASH_REMATCH[1]}: the sweep sets it itself (--loops, --ns, --syscalls; the cgroup is the workload's)" ;;
		esac
		[[ " ${SETTABLE[*]} " == *" ${BASH_REMATCH[1]} "* ]] ||
			bad_arg "--set wants one of ${settable// /, }, not '${BASH_REMATCH[1]}'"
		[[ " ${SET_NAMES[*]} " != *" ${BASH_REMATCH[1]} "* ]] ||
			bad_arg "--set ${BASH_REMATCH[1]} given twice"
		SET_NAMES+=("${BASH_REMATCH[1]}") SET_VALUES+=("${BASH_REMATCH[2]}")
	done
	[ "$COUNT_CLIENTS" -eq 0 ] || declare -F srv_saturate >/dev/null ||
		bad_arg "--count-clients: $WORKLOAD is not a server with clients (WL_SERVER=1)"
	[ "$DELAY_CLIENTS" -eq 0 ] || declare -F srv_saturate >/dev/null ||
		bad_arg "--delay-clients: $WORKLOAD is not a server with clients (WL_SERVER=1)"
	[ "$DELAY_CLIENTS" -eq 0 ] || [ "$COUNT_CLIENTS" -eq 0 ] ||
		bad_arg "--delay-clients and --count-clients: the clients are delayed with the server or counted apart, not both"
	if [ -n "$TAX" ]; then
		[ -e "$TAXES_SH" ] || bad_arg "--tax needs the tax experiment (userspace/tax), not in this lab"
		tax_known "$TAX" || bad_arg "--tax wants one of ${TAXES_KNOWN[*]}, not '$TAX'"
	fi
}
# --- Phase: plan ------------------------------------------------------------
# The sweep's points are ALL_VALUES; a part's (--part K/N --points LIST,
# dealt out by lablib.sweep.parts on the host) are VALUES, each one of the
# sweep's.
sweep_plan() {
	local v list
	ALL_VALUES=("${VALUES[@]}")
	PART_K=1 PART_N=1
	# Calibrating loop count 0 alone fits nothing, after the whole sweep.
	[ "$KNOB" != loops ] || [ "${ALL_VALUES[*]}" != 0 ] || [ -n "$CALIBRATION" ] ||
		[ -n "$STAGE_ONLY" ] ||
		bad_arg "-l 0 alone has no loop count to calibrate: give --calibration DIR, or --ns 0"
	[ ${#POINTS[@]} -le 1 ] || bad_arg "--points given twice"
	if [ -n "$PART" ]; then
		[[ $PART =~ ^([1-9][0-9]{0,5})/([1-9][0-9]{0,5})$ ]] ||
			bad_arg "--part wants K/N, part K of N (1 <= K <= N), not '$PART'"
		PART_K=${BASH_REMATCH[1]} PART_N=${BASH_REMATCH[2]}
		[ "$PART_K" -le "$PART_N" ] || bad_arg "--part wants K/N with K at most N, not '$PART'"
		[ "$PART_N" -le ${#ALL_VALUES[@]} ] ||
			bad_arg "--part $PART: $PART_N parts of ${#ALL_VALUES[@]} points leave some empty"
		[ -z "$STAGE_ONLY" ] || bad_arg "--part goes with a sweep, not with --stage-only"
		[ ${#POINTS[@]} -eq 1 ] ||
			bad_arg "--part $PART wants its points (--points LIST: the host runner deals them out)"
		list=$(lab_list --points "${POINTS[0]}" 5000000)
		read -r -a VALUES <<<"$list"
		for v in "${VALUES[@]}"; do
			[[ " ${ALL_VALUES[*]} " == *" $v "* ]] ||
				bad_arg "--points: $v is not one of the sweep's points (${ALL_VALUES[*]})"
		done
		ANALYSIS=0
	elif [ ${#POINTS[@]} -gt 0 ]; then
		bad_arg "--points goes with --part K/N (a part of a split sweep)"
	fi
	if [ "$PLAN" -eq 1 ]; then
		printf '%s\n' "workload=$WORKLOAD" "clock=$RUN_CLOCK" "knob=$KNOB" \
			"points=$(IFS=,; echo "${VALUES[*]}")" "repeats=$REPEATS" \
			"cost_slope=$WL_COST_SLOPE" "stage=$( ((STAGING)) && echo "$WL_STAGE" || echo none)" \
			"scale=$SCALE" "tree=$TREE"
		exit 0
	fi
	if [ "$DRY_RUN" -eq 1 ]; then
		printf '%s\n' "${VALUES[@]}"
		local step=
		! declare -F wl_describe >/dev/null || step=$(wl_describe)
		log "$WORKLOAD on the $RUN_CLOCK clock: ${#VALUES[@]} point$([ ${#VALUES[@]} -eq 1 ] || echo s) of $KNOB, $REPEATS runs each$step${SETTINGS[*]:+; module: ${SETTINGS[*]}}${TAX:+; under the tax $TAX}$( ((COUNT_CLIENTS)) && echo "; then the clients' calls counted")$( ((DELAY_CLIENTS)) && echo "; the clients delayed with the server")"
		exit 0
	fi
}

# The calibration's added latency: ns per loop and the cost of entering the
# delay, from lablib's fit, the one lablib.sweep.analyse reports.
calibration_fit() { lab_python -m lablib.sweep.progress fit "$1"; }

# A given --calibration: a calibrate folder with a fit, on this clock.
check_calibration() {
	[ -n "$CALIBRATION" ] || return 0
	[ -d "$CALIBRATION" ] || bad_arg "--calibration wants a calibrate result folder, not '$CALIBRATION'"
	if [ ! -f "$CALIBRATION/raw.csv" ] || [ ! -f "$CALIBRATION/summary.json" ]; then
		bad_arg "--calibration wants an analysed calibrate result (raw.csv, summary.json), not '$CALIBRATION'"
	fi
	FIT=$(calibration_fit "$CALIBRATION" 2>&1) ||
		bad_arg "--calibration wants a calibration with a fit, not '$CALIBRATION' ($FIT)"
	# A loop's ns on the virtual clock is its instructions, on the host's
	# its time on this machine: one calibration does not stand for the other.
	local cal_clock
	cal_clock=$(lab_python -m lablib.sweep.progress clock "$CALIBRATION" 2>&1) ||
		bad_arg "--calibration wants a calibration with a meta.json, not '$CALIBRATION' ($cal_clock)"
	# --stage-only runs on the host for a sweep in the VM: not its clock.
	[ -n "$STAGE_ONLY" ] || [ "$cal_clock" = "$RUN_CLOCK" ] ||
		bad_arg "--calibration was taken on the $cal_clock clock and this sweep runs on the $RUN_CLOCK clock; calibrate on this one (leave --calibration out)"
}

# --- Phase: stage only (on the host, for the VM): no module, no result ------
sweep_stage_only() {
	wl_check
	LAB_DIR=$(mktemp -d)
	mkdir "$LAB_DIR/logs"
	scratch_create
	trap 'scratch_remove; rm -rf "$LAB_DIR" "${STAGE_PARTIAL[@]}"' EXIT
	stage_archive "$STAGE_ONLY"
}

# Does the module (loaded, or the one that would be) have parameter $1?
module_has() {
	if [ -d "$DELAY_DIR" ]; then
		[ -e "$DELAY_DIR/parameters/$1" ]
	else
		modinfo -p "$DELAY_KO" 2>/dev/null | grep -q "^$1:"
	fi
}

# --- Phase: check the kernel, the module and the workload's tools ----------
sweep_check_kernel() {
	local name
	[ "$(id -u)" -eq 0 ] || die "must run as root (it sets module parameters and drops caches)"
	grep -q ' syscall_hook_register$' /proc/kallsyms ||
		die "this kernel ($(uname -r)) has no syscall hook; boot the lab kernel ('make vm')"
	LOADED_HERE=0
	DELAY_KO=
	[ -d "$DELAY_DIR" ] || DELAY_KO=$(lab_ko delay)
	[ "$KNOB" = loops ] || module_has ns ||
		die "this delay module has no ns parameter; rebuild it ('make module') or use --loops"
	SYSCALL_NRS=
	if [ -n "$SYSCALL_NAMES" ]; then
		module_has syscalls ||
			die "this delay module has no syscalls parameter; rebuild it ('make module')"
		# It says itself what is wrong; set -e stops here if it does.
		SYSCALL_NRS=$(syscall_numbers "$SYSCALL_NAMES")
	fi
	[ ! -d "$DELAY_DIR" ] || module_has cgroup ||
		die "the loaded delay module has no cgroup parameter; rmmod it so the current one is loaded"
	for name in "${SET_NAMES[@]}"; do
		module_has "$name" ||
			die "this delay module has no $name parameter; rebuild it ('make module')"
	done
	if [ -z "$CALIBRATION" ] && [ "$KNOB" = loops ]; then
		[ -x "$LAB_ROOT/userspace/calibrate/calibrate" ] ||
			die "userspace/calibrate/calibrate is not built; run 'make userspace' or give --calibration"
	fi
	if [ -n "$TAX" ]; then
		local why
		why=$(tax_why "$TAX")
		[ -z "$why" ] || die "--tax $TAX: $why"
	fi
	wl_check
}

# --- Phase: finish (and the EXIT trap, however the sweep ends) -------------
# Stop the workload, put the machine's settings back (the module's
# parameters, a server's sysctls: restore_settings), unload the module if
# the sweep loaded it, and remove the cgroup, trace instance and staged
# root; done before the result folder gets its final name.
restore() {
	wl_finish || true
	tax_off
	if [ "$LOADED_HERE" -eq 1 ]; then
		forget_settings "$DELAY_DIR/"
		restore_settings
		[ ! -d "$DELAY_DIR" ] || rmmod delay || log "warning: could not unload the delay module"
	else
		restore_settings
	fi
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

# write_meta: meta.json, through 'lab meta' (each setting a separate
# argument, so that a path with spaces or quotes in it stays what it is).
# Written at set-up, so that an interrupted sweep has it, and again once
# the workload is staged, with what was.  The cmd workload's command is
# the part of meta.json's "command" after '--'.
write_meta() {
	"$LAB_TOOL" meta "$LAB_DIR" "$WORKLOAD" "${META_ARGS[@]}" \
		staging:="$([ "$STAGING" -eq 1 ] && echo true || echo false)" \
		stage:="$STAGE_INFO" ${STAGE_CHECK:+stage_check="$STAGE_CHECK"} -- "$0" "${ARGS[@]}" ||
		die "cannot write $LAB_DIR/meta.json"
}

# --- Phase: set up: result folder, module, cgroup, meta.json ---------------
sweep_setup() {
	local j name kv wl_pairs cal_from
	lab_begin "$OUTPUT" "$WORKLOAD"
	mkdir "$LAB_DIR/logs"
	mkdir -p "$WORKDIR"
	trap stopped EXIT
	# Only a TERM sent to the worker itself comes here; Ctrl-C does not.
	trap 'log "terminated"; exit 143' TERM
	if [ ! -d "$DELAY_DIR" ]; then
		insmod "$DELAY_KO"
		LOADED_HERE=1
	fi
	# Of loops and ns, writing one clears the other: the one in force is
	# kept first, so that it is written back last.
	if [ -e "$DELAY_NS" ] && [ "$(cat "$DELAY_NS")" != 0 ]; then
		save_setting "$DELAY_NS"
	fi
	save_setting "$DELAY_LOOPS"
	[ ! -e "$DELAY_NS" ] || save_setting "$DELAY_NS"
	OLD_LOOPS=$(cat "$DELAY_LOOPS")
	OLD_CGROUP=$(cat "$DELAY_CGROUP")
	delay_set loops 0
	delay_set cgroup ""
	[ -z "$SYSCALL_NRS" ] || delay_set syscalls "$SYSCALL_NRS"
	for j in "${!SET_NAMES[@]}"; do
		delay_set "${SET_NAMES[j]}" "${SET_VALUES[j]}"
	done
	work_cgroup_create "$DELAY_CLIENTS"
	p9_setup
	scratch_create

	mapfile -t wl_pairs < <(wl_settings)
	if [ -n "$CALIBRATION" ]; then
		cal_from=$CALIBRATION
	elif [ "$KNOB" = ns ]; then
		cal_from="none: ns mode"
	elif [ "$PART_K" -gt 1 ]; then
		cal_from="part 1 of $PART_N"
	else
		cal_from="calibrated by the sweep, after its points"
	fi
	META_ARGS=(workload="$WORKLOAD" knob="$KNOB" "$KNOB:=[$(IFS=,; echo "${ALL_VALUES[*]}")]"
		syscalls="${SYSCALL_NAMES:-all}" syscall_numbers="${SYSCALL_NRS:-all}"
		repeats:="$REPEATS" scale="$SCALE" tree="$TREE" jobs:="$JOBS" workdir="$WORKDIR"
		in_vm:="$(in_vm && echo true || echo false)" delay_cgroup="$TARGET_CG_PATH"
		module_loops_before:="$OLD_LOOPS" module_cgroup_before="$OLD_CGROUP"
		calibration_from="$cal_from" count_clients:="$( ((COUNT_CLIENTS)) && echo true || echo false)"
		delay_clients:="$( ((DELAY_CLIENTS)) && echo true || echo false)")
	# A part says which it is and which points are its own; the full list
	# above is the sweep's.
	[ -z "$PART" ] ||
		META_ARGS+=(part="$PART" "part_points:=[$(IFS=,; echo "${VALUES[*]}")]")
	for kv in "${wl_pairs[@]}"; do META_ARGS+=("workload_settings.$kv"); done
	# The module's other parameters as the sweep ran them (its defaults where
	# --set left them), read back from the module.
	for name in "${SETTABLE[@]}"; do
		[ ! -e "$DELAY_DIR/parameters/$name" ] ||
			META_ARGS+=("delay_settings.$name=$(cat "$DELAY_DIR/parameters/$name")")
	done
	write_meta

	# The calibration: the given one, part 1's, or the sweep's own.
	NS_PER_LOOP='' ENTRY_NS=''
	CALIBRATE_AFTER=0
	if [ -n "$CALIBRATION" ]; then
		cp -r "$CALIBRATION/." "$LAB_DIR/calibration"
		read -r NS_PER_LOOP ENTRY_NS <<<"$FIT"
		log "added latency: $ENTRY_NS ns + $NS_PER_LOOP ns per loop"
	elif [ "$KNOB" = loops ] && [ "$PART_K" -gt 1 ]; then
		log "part $PART: the calibration is part 1's"
	elif [ "$KNOB" = loops ]; then
		CALIBRATE_AFTER=1
	fi

	# From here on only the work cgroup is delayed (with --delay-clients,
	# the cgroup above it and the clients').
	delay_set cgroup "$TARGET_CG_PATH"
	lab_python -m lablib.sweep.progress columns >"$LAB_DIR/raw.csv" ||
		die "cannot write $LAB_DIR/raw.csv"
	echo "loops,ns,delayed,spun_ns,measured_ns" >"$LAB_DIR/points.csv"
	[ ! -e "$BY_CALL" ] || echo "loops,ns,nr,calls" >"$LAB_DIR/by_call.csv"
	wl_prepare
	[ -z "$TAX" ] || tax_begin
	write_meta
}

# tax_begin: --tax applied for the points (taxes.sh): its machine-wide
# part now; its command (TAX_CMD) before the shell of each timed window
# (TIMED_TAX) and before a server (WL_TAX), from the staged root if there
# is one.  meta.json says what was applied.
tax_begin() {
	local prog
	TAX_SCRATCH=$SCRATCH/tax
	mkdir -p "$TAX_SCRATCH"
	tax_on "$TAX"
	WL_TAX=("${TAX_CMD[@]}") TIMED_TAX=("${TAX_CMD[@]}")
	if [ ${#TAX_CMD[@]} -gt 0 ] && [ -n "$STAGE" ]; then
		# Where it is, not a link to it (/bin is /usr/bin's).
		prog=$(readlink -f "$(command -v "${TAX_CMD[0]}")")
		[ -x "$STAGE$prog" ] ||
			die "--tax $TAX: the staged root has no $prog (an archive of an older lab? stage again)"
		TIMED_TAX=("${STAGE_RUN[@]}" "$STAGE$prog" "${TAX_CMD[@]:1}")
	fi
	if [[ $TAX == strace* ]]; then
		# A server's tracer stays outside the work cgroup, so that its own
		# calls are neither counted nor delayed, and detached (-D: the
		# daemon's start returns while strace follows it).
		local n=$((${#TIMED_TAX[@]} - ${#TAX_CMD[@]} + 1))
		SERVER_TRACER=("${TIMED_TAX[@]:0:n}" -D "${TIMED_TAX[@]:n}") WL_TAX=()
	fi
	META_ARGS+=(tax="$TAX" "tax_command=${TAX_CMD[*]}")
	log "under the tax $TAX${TAX_CMD[*]:+: ${TAX_CMD[*]}}"
}

# calibrate_here: calibrate the sweep's loop counts (every task delayed, on
# CPU 0), after its points and with the workload stopped (NOTES.md,
# "Calibrating after the points", says why after).
calibrate_here() {
	# 100 batches of 1000 calls a point in 3 rounds, fewer when the loop
	# counts are so large that those would take minutes (2000 calls at
	# 400000 loops under TCG are 5 s a point).  On the virtual clock there
	# is no noise or drift to average out: 10 batches in one round.
	local cal_size=(-n 100 --calls 1000 --rounds 3)
	[ "${ALL_VALUES[-1]}" -le 20000 ] || cal_size=(-n 20 --calls 100 --rounds 3)
	[ "$RUN_CLOCK" != virtual ] || cal_size=(-n 10 --calls 1000 --rounds 1)
	wl_finish
	delay_set cgroup ""
	log "calibrating the added latency of loop counts $LOOP_LIST"
	"$LAB_ROOT/userspace/calibrate/calibrate" -l "$LOOP_LIST" "${cal_size[@]}" \
		-C 0 -q -o "$LAB_DIR" --name calibration >"$LAB_DIR/logs/calibrate.txt" 2>&1 ||
		die "calibration failed; see $LAB_DIR/logs/calibrate.txt"
	FIT=$(calibration_fit "$LAB_DIR/calibration" 2>>"$LAB_DIR/logs/calibrate.txt") ||
		die "calibration gave no fit; see $LAB_DIR/logs/calibrate.txt"
	read -r NS_PER_LOOP ENTRY_NS <<<"$FIT"
	log "added latency: $ENTRY_NS ns + $NS_PER_LOOP ns per loop"
}

# Mean time per unit of work of the rows just recorded for this point, the
# first measure only, for the progress line.
point_summary() { lab_python -m lablib.sweep.progress point "$LAB_DIR/raw.csv" "$LOOPS" "$NS"; }

# The module's own account of a point: delayed calls and the ns it spun.
stat_or_empty() { [ ! -e "$DELAY_DIR/stats/$1" ] || cat "$DELAY_DIR/stats/$1"; }
# And its calls by number (stats/by_call, a module that counts them):
# by_call_copy N keeps copy N in memory; by_call_point [FILE] appends the
# calls between copies 0 and 1 to FILE in LAB_DIR (by_call.csv; a row per
# call number).
BY_CALL=$DELAY_DIR/stats/by_call
by_call_copy() { [ ! -e "$BY_CALL" ] || cat "$BY_CALL" >"$SCRATCH/by_call.$1"; }
by_call_point() {
	[ -e "$SCRATCH/by_call.0" ] || return 0
	by_call_copy 1
	lab_python -m lablib.syscalls window "$SCRATCH/by_call.0" "$SCRATCH/by_call.1" \
		"$LOOPS,$NS" >>"$LAB_DIR/${1:-by_call.csv}" ||
		die "cannot count the calls by number of $POINT"
}

# --- Phase: one point: its repeats, the module's account, a progress line --
# sweep_point I VALUE: point I of the part's VALUES.  LOOPS or NS, POINT
# (for messages), TAG (for log names) and REPEAT are the workload's wl_run's.
sweep_point() {
	local i=$1 value=$2 d0 s0 d1 s1 measured added
	# shellcheck disable=SC2034  # TAG is the workload's (lib/*.sh)
	if [ "$KNOB" = ns ]; then
		LOOPS='' NS=$value POINT="ns=$value" TAG=ns$value
	else
		LOOPS=$value NS='' POINT="loops=$value" TAG=l$value
	fi
	d0=$(stat_or_empty delayed)
	s0=$(stat_or_empty spun_ns)
	by_call_copy 0
	delay_set "$KNOB" "$value"
	wl_point_begin
	for ((REPEAT = 1; REPEAT <= REPEATS; REPEAT++)); do
		! lab_stopping || exit 1
		wl_run
	done
	delay_set "$KNOB" 0
	d1=$(stat_or_empty delayed)
	s1=$(stat_or_empty spun_ns)
	by_call_point
	measured=
	if [ -n "$d0" ] && [ -n "$d1" ] && [ "$d1" -gt "$d0" ]; then
		measured=$(awk -v d=$((d1 - d0)) -v s=$((s1 - s0)) 'BEGIN { printf "%.1f", s / d }')
	fi
	echo "$LOOPS,$NS,${d1:+$((d1 - d0))},${s1:+$((s1 - s0))},$measured" >>"$LAB_DIR/points.csv"
	if [ "$KNOB" = ns ]; then
		added="+$value ns requested"
	elif [ "$CALIBRATE_AFTER" -eq 1 ]; then
		added="calibrated after the points"
	elif [ -z "$NS_PER_LOOP" ]; then
		added="calibrated by part 1"
	else
		added=$(awk -v l="$value" -v k="$NS_PER_LOOP" -v e="$ENTRY_NS" \
			'BEGIN { printf "+%.0f ns calibrated", l ? e + l * k : 0 }')
	fi
	log "${PART:+part $PART: }[$i/${#VALUES[@]}] $POINT ($added${measured:+, $measured ns measured}): $(point_summary)"
}

# count_clients: the server's measures once more after the points, at no
# delay, with the clients in a cgroup of their own which the module counts
# instead of the work cgroup: their calls a unit of work into clients.csv
# (raw.csv's columns) and by number into clients_by_call.csv.  The
# server of the last point answers.
count_clients() {
	local root path
	root=$(cgroup2_root)
	path=/lab-clients-$$
	CLIENT_CG=$root$path
	mkdir "$CLIENT_CG" || die "cannot create the cgroup $CLIENT_CG"
	delay_set "$KNOB" 0
	delay_set cgroup "$path"
	head -n 1 "$LAB_DIR/raw.csv" >"$LAB_DIR/clients.csv"
	[ ! -e "$BY_CALL" ] || echo "loops,ns,nr,calls" >"$LAB_DIR/clients_by_call.csv"
	# shellcheck disable=SC2034  # the workload's (lib/*.sh)
	POINT="the clients' count" TAG=clients RECORD_TO=clients.csv REPEAT=1
	if [ "$KNOB" = ns ]; then LOOPS='' NS=0; else LOOPS=0 NS=''; fi
	log "counting the clients' calls (the measures once more, the clients' cgroup counted)"
	by_call_copy 0
	wl_run
	by_call_point clients_by_call.csv
	RECORD_TO=raw.csv
	delay_set cgroup "$TARGET_CG_PATH"
	cgroup_remove "$CLIENT_CG"
	CLIENT_CG=
}

sweep_finish() {
	# The calibration untaxed: what it measures is the delay's own cost.
	# shellcheck disable=SC2034  # the workload's (lib/server.sh)
	WL_TAX=() SERVER_TRACER=() TIMED_TAX=()
	tax_off "$LAB_DIR"
	[ "$CALIBRATE_AFTER" -eq 0 ] || calibrate_here
	restore
	lab_commit "$WORKLOAD"
	if [ "$ANALYSIS" -eq 1 ]; then
		lab_analyse 1 ||
			die "the analysis failed; the measurements are in $LAB_DIR"
	fi
	log "results: $LAB_DIR"
}

# --- The sweep: the phases in order -----------------------------------------
sweep_check
sweep_plan
check_calibration
if [ -n "$STAGE_ONLY" ]; then
	sweep_stage_only
	exit 0
fi
sweep_check_kernel
sweep_setup
# A point's line; the whole sweep's elapsed time and ETA, in the host's
# time, are lab sweep's (lablib.sweep.parts.progress).
i=0
for value in "${VALUES[@]}"; do
	i=$((i + 1))
	sweep_point "$i" "$value"
done
[ "$COUNT_CLIENTS" -eq 0 ] || count_clients
sweep_finish
