#!/usr/bin/env bash
# The rt-compare suite on the kernel it runs on (in the VM, or on a machine
# booted into a lab kernel), into DIR/<variant>/ of the folder run.sh made:
#   cyclictest/    idle.json, loaded.json (+ .txt), traced/ (the loaded run
#                  again, the whole of it in trace.dat), caught/ (the load
#                  again, wake-ups 100 us apart, the trace stopped at the
#                  first over --catch-us: trace.dat, cyclictest.json, threshold)
#   perfstat/      perf stat of sortsum, unsorted and sorted, each repeat:
#                  ORDER-rK.perf (perf stat -x,) and ORDER-rK.json (rusage)
#   squarewave/    IMPL-LOAD/ (edges.csv, meta.json) for python, c-nanosleep, c-rt
#   delay/HOLD/    per kind of hold (MODE-WHERE: spin-entry, sleep-entry,
#                  spin-exit, sleep-exit): ns-NS.json (+ .txt), cyclictest on
#                  CPU 0 while a normal task there makes getppid calls the
#                  delay module holds NS ns each; traced/ (the largest NS
#                  again, the whole run traced)
#   lab/           calibrate/, irqhook/CELL/, smp/ (the lab's own experiments)
#                  and unload.txt (delay cycled in and out under syscall load)
#   meta.json, skipped.csv (member,reason of everything not measured)
#
#   guest.sh DIR [options]
#   --only LIST        members to run: cyclictest,delay,perfstat,squarewave,lab (all)
#   --long             cyclictest 300000 loops as the reference (a real machine)
#   --ct-loops N       cyclictest loops per run (default 20000, 1 ms apart)
#   --catch-us N       caught/'s threshold, us (default 10)
#   --delay-ns LIST    the delay member's holds, ns (default 0,20000,50000,100000,200000)
#   --delay-loops N    its cyclictest loops per hold (default 5000)
#   --delay-holds LIST the kinds of hold, each MODE@WHERE: MODE spin or
#                      sleep (how the hold is spent), WHERE entry (before
#                      the call) or exit (after its work); default spin@entry
#   -r, --repeats N    perf stat repeats per order (default 5)
#   --passes N         sortsum passes of a perf stat run (default 1000)
#   --freqs LIST       square-wave frequencies, Hz (default 100,200,500,1000,2000,5000,10000,20000)
#   --periods N        square-wave periods per frequency (default 200)
#   -n N               events / records of the lab experiments (default 300)
#   --quick            a few seconds each, for the tests
#   --check            check the options and stop (run.sh, before it boots)
#
# Example:  scripts/vm.sh -- userspace/rtcompare/guest.sh results/rt-compare-x.incomplete --quick
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
lab_help "$@"

[ $# -ge 1 ] || bad_arg "usage: guest.sh DIR [options] (see --help)"
args=("$@")
top=$1
shift
only=cyclictest,delay,perfstat,squarewave,lab
ct_loops=20000 repeats=5 passes=1000 periods=200 n=300 unload_cycles=20
delay_ns=0,20000,50000,100000,200000 delay_loops=5000 catch_us=10
delay_holds=spin@entry
freqs=100,200,500,1000,2000,5000,10000,20000 check=0
while [ $# -gt 0 ]; do
	case $1 in
	--only) want_value "$@"; only=$2; shift ;;
	--long) ct_loops=300000 ;;
	--ct-loops) want_value "$@"; want_uint --ct-loops "$2" 10; ct_loops=$2; shift ;;
	--catch-us) want_value "$@"; want_uint --catch-us "$2" 1; catch_us=$2; shift ;;
	--delay-ns) want_value "$@"; lab_list --delay-ns "$2" >/dev/null; delay_ns=$2; shift ;;
	--delay-loops) want_value "$@"; want_uint --delay-loops "$2" 10; delay_loops=$2; shift ;;
	--delay-holds) want_value "$@"; delay_holds=$2; shift ;;
	-r | --repeats) want_value "$@"; want_uint --repeats "$2" 1; repeats=$2; shift ;;
	--passes) want_value "$@"; want_uint --passes "$2" 1; passes=$2; shift ;;
	--freqs) want_value "$@"; lab_list --freqs "$2" 1000000 >/dev/null; freqs=$2; shift ;;
	--periods) want_value "$@"; want_uint --periods "$2" 2; periods=$2; shift ;;
	-n) want_value "$@"; want_uint -n "$2" 10; n=$2; shift ;;
	--quick) ct_loops=500 repeats=2 passes=50 periods=20 n=20 freqs=200,2000
		delay_ns=0,50000 delay_loops=300 unload_cycles=4 ;;
	--check) check=1 ;;
	*) bad_arg "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
for m in ${only//,/ }; do
	case $m in
	cyclictest | delay | perfstat | squarewave | lab) ;;
	*) bad_arg "--only wants members of cyclictest,delay,perfstat,squarewave,lab, not '$m'" ;;
	esac
done
seen=
[ -n "$delay_holds" ] || bad_arg "--delay-holds wants a list like spin@entry,sleep@entry"
for h in ${delay_holds//,/ }; do
	[[ $h =~ ^(spin|sleep)@(entry|exit)$ ]] ||
		bad_arg "--delay-holds wants MODE@WHERE items (spin or sleep @ entry or exit), not '$h'"
	[[ ",$seen," != *",$h,"* ]] || bad_arg "--delay-holds names $h twice"
	seen+=,$h
done
[ "$check" -eq 0 ] || exit 0
runs() { [[ ",$only," == *",$1,"* ]]; }

[ "$(id -u)" -eq 0 ] || die "needs root (real-time priorities, the delay module, tracing)"
[ -d "$top" ] || die "no result folder $top (run.sh makes it)"
lab_built "$LAB_TOOL" "$here/sortsum" "$here/squarewave"
# The variant as meta.json records it: one folder per lab kernel.
variant=$("$LAB_TOOL" variant)
# One folder per kernel as booted: the variant, and the preemption model when
# the command line chose one (stock booted preempt=full: stock-preempt-full).
preempt=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^preempt=//p' | tail -1)
kernel=$variant${preempt:+-preempt-$preempt}
# meta.json's kernel.preemption is the model in force: PREEMPT_RT from the
# kernel's version, the others from debugfs where PREEMPT_DYNAMIC shows
# it ("none voluntary (full)"), which the VM does not mount.
lab_debugfs || true
dir=$top/$kernel
[ ! -e "$dir" ] || die "$dir exists: one folder per kernel"
mkdir -p "$dir"
echo "member,reason" >"$dir/skipped.csv"
skip() { lab_skip "$dir/skipped.csv" "$@"; }
have() { command -v "$1" >/dev/null; }
ncpu=$(nproc)

"$LAB_TOOL" meta "$dir" rt-compare variant="$variant" kernel="$kernel" \
	members="$only" cpus:="$ncpu" \
	ct_loops:="$ct_loops" catch_us:="$catch_us" repeats:="$repeats" passes:="$passes" freqs="$freqs" \
	delay_ns="$delay_ns" delay_loops:="$delay_loops" delay_holds="$delay_holds" \
	periods:="$periods" n:="$n" unload_cycles:="$unload_cycles" \
	perf="$(perf --version 2>/dev/null || echo none)" \
	rt_tests="$(cyclictest --help 2>&1 | sed -n 's/^cyclictest V *//p' | head -1)" \
	-- "$0" "${args[@]}"
log "kernel $(uname -r) ($(uname -v | grep -o 'PREEMPT[_A-Z]*' | head -1)), $ncpu CPUs -> $dir"

# --- the CPU-bound load: one sortsum per CPU, normal priority ---------------
load_pids=()
start_load() {
	local i
	for ((i = 0; i < ncpu; i++)); do
		"$here/sortsum" --forever --seed "$((i + 1))" >/dev/null &
		load_pids+=($!)
	done
	sleep 1
}
stop_load() {
	[ ${#load_pids[@]} -eq 0 ] && return 0
	kill "${load_pids[@]}" 2>/dev/null || true
	wait "${load_pids[@]}" 2>/dev/null || true
	load_pids=()
}
tracing=0 delay_loaded=0
# The null-syscall loops of the unload check (run_lab).
hammer_pids=()
# Every cyclictest run writes into the guest's memory, and its files go
# to the result folder (the host's share, in the VM) only after it: a
# latency run has no business waiting for the host's file server.
shm=$(mktemp -d /dev/shm/rtcompare.XXXXXX)
cleanup() {
	rm -rf "$shm"
	stop_load
	[ ${#hammer_pids[@]} -eq 0 ] || kill "${hammer_pids[@]}" 2>/dev/null || true
	[ "$tracing" -eq 0 ] || trace-cmd reset >/dev/null 2>&1 || true
	[ "$delay_loaded" -eq 0 ] || rmmod delay 2>/dev/null || true
}
trap cleanup EXIT

# --- cyclictest ----------------------------------------------------------------
# The reference: -p 90 -m -n -t4 -l 300000 -h 500.  Here one thread per
# CPU, each pinned, 1 ms apart, a histogram of 1 us bins up to 20 ms (the
# emulator's tail is long; later ones count as overflows).
cyclic() {
	cyclictest -q -p 90 -m -t -a -i 1000 -l "$ct_loops" -h 20000 "$@"
}
# ct_run DIR NAME CYCLICTEST...: one cyclictest run, DIR/NAME.json and
# DIR/NAME.txt written in the guest's memory first.
ct_run() {
	local dest=$1 name=$2
	shift 2
	"$@" --json="$shm/$name.json" >"$shm/$name.txt"
	mv "$shm/$name.json" "$shm/$name.txt" "$dest/"
}
# trace_save OUT: stop the trace started for a run, extract it to the
# guest's memory first (not the share, inside the run's window), reset
# ftrace and move OUT/trace.dat to the share.
trace_save() {
	trace-cmd stop >/dev/null
	trace-cmd extract -o "$shm/trace.dat" >/dev/null
	trace-cmd reset >/dev/null 2>&1 || true
	tracing=0
	mv "$shm/trace.dat" "$1/"
}
# traced OUT LOOPS EVENTS -- CYCLICTEST...: a cyclictest run of LOOPS
# loops again under trace-cmd (EVENTS: more -e options), the whole run in
# the trace: OUT/trace.dat, OUT/cyclictest.json and .txt.  The analyser
# finds the run's worst wake-up in the trace itself and names what held
# the CPU; nothing has to guess a threshold beforehand.  The buffer gets
# 1 kB a loop and CPU (a wake-up, its timer, the tick's: about 0.5 kB
# under a CPU-bound load), 4 MB at least and 64 MB at most, so the run
# is cut to what 64 MB hold.
TRACE_MAX_LOOPS=60000
traced() {
	local out=$1 loops=$2 events=() kb
	shift 2
	while [ "$1" != -- ]; do events+=("$1"); shift; done
	shift
	[ "$loops" -le "$TRACE_MAX_LOOPS" ] || loops=$TRACE_MAX_LOOPS
	kb=$((loops > 4096 ? loops : 4096))
	log "traced: $loops loops, the whole run"
	mkdir -p "$out"
	tracing=1
	trace-cmd start -q -b "$kb" -C mono -e sched:sched_switch -e sched:sched_wakeup \
		-e sched:sched_waking -e irq -e irq_vectors -e timer \
		-e workqueue:workqueue_execute_start -e workqueue:workqueue_execute_end \
		"${events[@]}" >/dev/null
	# The later -l wins: cyclic and cyclic_cpu0 give theirs first.
	set +e
	ct_run "$out" cyclictest "$@" -l "$loops"
	set -e
	trace_save "$out"
}
# caught OUT LOOPS: the loaded run a third way, for what the whole trace
# can miss: a rare stretch of non-preemptible kernel work that a wake-up
# lands in once a boot (stock's vmstat_update draining the per-CPU page
# lists, README).  Wake-ups ten times as dense (100 us apart, LOOPS of
# them), so that no stretch of that length slips between two; only work
# items, softirqs and interrupt handlers traced, tens of events a second,
# so that the run is nearly as it was untraced; cyclictest -b stops the
# trace at the first wake-up over catch_us, and the analyser names what
# ran while it waited (lablib.ftrace.caught).
caught() {
	local out=$1 loops=$2
	log "caught: $loops wake-ups 100 us apart, stopped at the first over $catch_us us"
	mkdir -p "$out"
	tracing=1
	trace-cmd start -q -b 8192 -C mono -e workqueue:workqueue_execute_start \
		-e workqueue:workqueue_execute_end -e irq:softirq_entry -e irq:softirq_exit \
		-e irq:irq_handler_entry -e irq:irq_handler_exit >/dev/null
	set +e
	ct_run "$out" cyclictest cyclictest -q -p 90 -m -t -a -i 100 -l "$loops" -h 20000 \
		-b "$catch_us" --tracemark
	set -e
	trace_save "$out"
	echo "$catch_us" >"$out/threshold"
}
run_cyclictest() {
	local ct=$dir/cyclictest
	mkdir -p "$ct/traced"
	log "cyclictest idle: $ct_loops loops a thread"
	ct_run "$ct" idle cyclic
	log "cyclictest loaded ($ncpu x sortsum)"
	start_load
	ct_run "$ct" loaded cyclic
	# Again, traced: the analyser explains its worst wake-up.  Three times
	# as long, so that what made the untraced run's rare worst has three
	# chances to recur (on the virtual clock, 1 in 20,000 wake-ups of
	# stock's loaded run once took 51 us, against 4 for the others).
	if have trace-cmd; then
		traced "$ct/traced" "$((ct_loops * 3))" -e sched:sched_migrate_task -- cyclic
		caught "$ct/caught" "$((ct_loops * 10))"
	else
		skip cyclictest-trace "trace-cmd is not installed (Debian: trace-cmd)"
	fi
	stop_load
}

# --- cyclictest against a hold of known length ---------------------------------
# The delay module holds every getppid call (and only those: cyclictest makes
# none) for NS ns; a normal task on CPU 0 makes nothing else, and one
# cyclictest thread, FIFO 90, waits for its timer on the same CPU.  A kernel
# that cannot preempt the hold shows it in its maximum, one that can does
# not.  Then the largest hold again, traced: the trace names what had the
# CPU at the worst wake-up (delay:delay_syscall events).
GETPPID=110
cyclic_cpu0() {
	cyclictest -q -p 90 -m -t 1 -a 0 -i 1000 -l "$delay_loops" -h 20000 "$@"
}
run_delay() {
	local dd=$dir/delay ko ns load hold mode where hd nullcall=$LAB_ROOT/userspace/calibrate/nullcall
	if ! ko=$(lab_ko delay 2>/dev/null) || [ ! -x "$nullcall" ]; then
		skip delay "the delay module or userspace/calibrate/nullcall is not built"
		return 0
	fi
	if [ -d /sys/module/delay ]; then
		skip delay "the delay module is loaded already"
		return 0
	fi
	insmod "$ko" syscalls=$GETPPID
	delay_loaded=1
	taskset -c 0 "$nullcall" getppid 1000000 1000 >/dev/null &
	load=$!
	hammer_pids+=("$load")
	for hold in ${delay_holds//,/ }; do
		mode=${hold%@*} where=${hold#*@} hd=$dd/$mode-$where
		# Switched under the load, with no hold between (ns 0): a kernel
		# without RCU Tasks refuses to sleep in the hook (EOPNOTSUPP).
		echo 0 >/sys/module/delay/parameters/ns
		if ! { echo "$mode" >/sys/module/delay/parameters/mode &&
			echo "$where" >/sys/module/delay/parameters/where; } 2>/dev/null; then
			skip "delay-$mode-$where" "the delay module here cannot hold with mode=$mode where=$where"
			continue
		fi
		mkdir -p "$hd"
		for ns in $(lab_list --delay-ns "$delay_ns"); do
			echo "$ns" >/sys/module/delay/parameters/ns
			log "cyclictest on CPU 0, getppid held $ns ns ($mode at $where): $delay_loops loops"
			ct_run "$hd" "ns-$ns" cyclic_cpu0
		done
		if have trace-cmd; then
			log "the largest hold again, $ns ns ($mode at $where)"
			traced "$hd/traced" "$delay_loops" -e delay:delay_syscall -- cyclic_cpu0
			echo "$ns" >"$hd/traced/ns"
		else
			skip "delay-$mode-$where-trace" "trace-cmd is not installed (Debian: trace-cmd)"
		fi
	done
	kill "$load" 2>/dev/null || true
	wait "$load" 2>/dev/null || true
	hammer_pids=()
	rmmod delay
	delay_loaded=0
}

# --- perf stat of sortsum ----------------------------------------------------
# Hardware events stay in the command: <not supported> where there is no PMU.
PERF_EVENTS=task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses
run_perfstat() {
	local ps=$dir/perfstat r order sorted
	mkdir -p "$ps"
	for ((r = 1; r <= repeats; r++)); do
		for order in unsorted sorted; do
			sorted=()
			[ "$order" = sorted ] && sorted=(--sorted)
			perf stat -x, -o "$ps/$order-r$r.perf" -e "$PERF_EVENTS" -- \
				"$here/sortsum" --passes "$passes" "${sorted[@]}" >"$ps/$order-r$r.json"
		done
		log "perf stat round $r of $repeats"
	done
}

# --- the square wave ------------------------------------------------------------
run_squarewave() {
	local sq=$dir/squarewave load impl
	mkdir -p "$sq"
	for load in idle loaded; do
		[ "$load" = loaded ] && start_load
		for impl in python c-nanosleep c-rt; do
			log "square wave $impl, $load: $freqs Hz"
			case $impl in
			python) lab_python -m lablib.rtcompare.squarewave -q -f "$freqs" -n "$periods" \
				-o "$sq" --name "$impl-$load" ;;
			c-*) "$here/squarewave" -q --mode "${impl#c-}" -f "$freqs" -n "$periods" \
				-o "$sq" --name "$impl-$load" ;;
			esac
		done
		stop_load
	done
}

# --- the lab's own experiments --------------------------------------------------
run_lab() {
	local lab=$dir/lab i bad
	mkdir -p "$lab"
	# Each through its own runner, on this kernel (--here), recorded only:
	# this suite's analyser reads lab/calibrate, lab/irqhook, lab/smp.
	if [ -x "$LAB_ROOT/userspace/calibrate/calibrate" ]; then
		log "calibration of the delay module"
		"$LAB_ROOT/userspace/calibrate/run.sh" --here --no-analysis -l 0:700:100 \
			-n "$((n / 5 > 10 ? n / 5 : 10))" -o "$lab" --name calibrate -q
	else
		skip calibrate "userspace/calibrate is not built"
	fi
	if [ -x "$LAB_ROOT/userspace/irqhook/irqhook" ] && [ -c /dev/irqhook ]; then
		log "wake-up grid on /dev/irqhook: 0, 4, 16 load tasks, normal and rt"
		"$LAB_ROOT/userspace/irqhook/run.sh" --here --no-analysis -n "$n" --period-us 4000 \
			--loads 0,4,16 -C 0 --trace-cells none -o "$lab"
		lab_take "$lab" irqhook-sweep irqhook
	else
		skip irqhook "no irqhook tool or no /dev/irqhook"
	fi
	if [ -x "$LAB_ROOT/userspace/smp/smp" ] && [ "$ncpu" -ge 2 ]; then
		log "SMP micro-benchmarks, one round"
		"$LAB_ROOT/userspace/smp/run.sh" --here --no-analysis -r 1 -n "$n" -o "$lab"
		lab_take "$lab" smp smp
	else
		skip smp "userspace/smp is not built or fewer than 2 CPUs"
	fi
	# Does the hook unload safely under load on this kernel: 20 cycles of
	# insmod/rmmod while every CPU makes null system calls (4 with --quick:
	# the guest tests unload under load on their own, at length).
	local ko nullcall=$LAB_ROOT/userspace/calibrate/nullcall
	if ko=$(lab_ko delay 2>/dev/null) && [ -x "$nullcall" ] && [ ! -d /sys/module/delay ]; then
		for ((i = 0; i < ncpu; i++)); do
			(while :; do "$nullcall" getppid 100000 10 >/dev/null; done) &
			hammer_pids+=($!)
		done
		local t0 ok=0 logged
		logged=$(dmesg | wc -l)
		t0=$(date +%s%N)
		for ((i = 0; i < unload_cycles; i++)); do
			insmod "$ko" loops=$((200 * (i % 3))) && sleep 0.05 && rmmod delay && ok=$((ok + 1))
		done
		kill "${hammer_pids[@]}" 2>/dev/null || true
		wait "${hammer_pids[@]}" 2>/dev/null || true
		# Only what the kernel logged during the cycles.
		bad=$(dmesg | tail -n +"$((logged + 1))" | grep -cE 'BUG|Oops|WARNING|lockup|stall' || true)
		printf 'cycles,completed,ms,kernel_problems\n%d,%d,%d,%d\n' "$unload_cycles" "$ok" \
			"$((($(date +%s%N) - t0) / 1000000))" "$bad" >"$lab/unload.csv"
		log "delay module: $ok of $unload_cycles load/unload cycles under syscall load"
	else
		skip unload "the delay module or nullcall is not built, or delay is loaded already"
	fi
}

if runs cyclictest; then
	if have cyclictest; then run_cyclictest; else skip cyclictest "cyclictest is not installed (Debian: rt-tests)"; fi
fi
if runs delay; then
	if have cyclictest; then run_delay; else skip delay "cyclictest is not installed (Debian: rt-tests)"; fi
fi
if runs perfstat; then
	if have perf; then run_perfstat; else skip perfstat "perf is not installed (Debian: linux-perf)"; fi
fi
runs squarewave && run_squarewave
runs lab && run_lab
log "done: $dir"
